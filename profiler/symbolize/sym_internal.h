/* sym_internal.h: what the files of symbolize/ share (private to the folder).
 *
 * The session state (one process-wide symbolizer, symbolize.c) and the
 * calls between the parts: debuginfo search (sym_debuginfo.c), the
 * per-address and demangling caches (sym_cache.c), the per-module symbol
 * tables (sym_tables.c), the process layout: maps, build IDs, the Dwfl
 * (sym_layout.c), and resolving an address into frames (sym_resolve.c).
 * Everything runs with the session's mutex held (see symbolize.c).
 */
#ifndef PP_SYM_INTERNAL_H
#define PP_SYM_INTERNAL_H
#include "symbolize.h"
#include "base/base.h"

#include <sys/uio.h>

#include "pprof.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <sys/stat.h>
#include <unistd.h>


/* Growable text. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

/* One parsed line of /proc/self/maps. `path` points into the line and is
 * not NUL-terminated; `pathlen` already excludes " (deleted)". */
typedef struct maps_line {
    uint64_t start, limit, offset;
    uint64_t dev, inode;     /* the file's device (major << 32 | minor) and inode */
    bool exec, write, priv, deleted;
    const char *path;
    size_t pathlen;
} maps_line;

struct dl_counts {
    unsigned long long adds, subs;
    bool ok;
};

typedef struct cache_slot {
    uint64_t addr;         /* the key (pp_table) */
    pp_sym_frame *frames;  /* in the cache arena; NULL when nframes == 0 */
    uint32_t nframes;
} cache_slot;

typedef struct demangle_slot {
    uint64_t raw;          /* the key: pointer identity, strings owned by the Dwfl */
    const char *demangled;
} demangle_slot;

/* One function symbol: [start, end) holds its code. */
typedef struct sym_entry {
    uint64_t start, end;
    const char *name;      /* in the module's string table */
} sym_entry;

typedef struct sym_index {
    uint64_t key;          /* the module's address (pp_table) */
    Dwfl_Module *mod;
    sym_entry *syms;       /* sorted by start, one entry per start */
    size_t n;
    signed char dwarf;     /* its DWARF may be read: 1, may not: -1, not known yet: 0 */
} sym_index;

/* Code ranges of the functions of one compile unit. */
typedef struct fn_range {
    Dwarf_Addr lo, hi;     /* DWARF addresses (module address - bias) */
    Dwarf_Die die;         /* the DW_TAG_subprogram with this code */
} fn_range;

typedef struct cu_index {
    uint64_t key;          /* the unit DIE's address in .debug_info (pp_table) */
    fn_range *r;           /* sorted by lo */
    size_t n;
    bool deep;             /* includes functions found inside types */
} cu_index;

/* One row of a unit's line table (sym_lines.c): from addr to the next
 * row's address the code is file:line; file LINE_END ends a sequence. */
typedef struct line_row {
    uint64_t addr;         /* DWARF address (module address - bias) */
    uint32_t file, line;
} line_row;
#define LINE_END UINT32_MAX

typedef struct cu_lines {
    uint64_t key;          /* the unit DIE's address in .debug_info (pp_table) */
    line_row *rows;        /* sorted by addr */
    size_t nrows;
    char **files;          /* by DWARF file index; NULL entries for none */
    size_t nfiles;
    bool ok;               /* read here; else libdw answers for the unit */
} cu_lines;

/* A module whose files a session read (sym_pages.c). */
typedef struct read_module {
    uint64_t key;          /* the module's address (pp_table) */
    Dwfl_Module *mod;
    bool dwarf;            /* its DWARF was read, not only its symbols */
} read_module;

/* Deepest chain of inlined calls looked at (frames are capped further). */
#define MAX_NESTING 64

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

struct pp_sym_session {
    pthread_mutex_t mu;

    /* The Dwfl and what it was built from. */
    Dwfl *dwfl;
    pid_t dwfl_pid;        /* pid when the Dwfl was last (re)built or tried */
    unsigned long long dl_adds, dl_subs;
    bool dl_known;
    sbuf sig_files;        /* file-backed executable lines of the maps */

    /* Mapping snapshot. */
    pp_sym_mapping *maps;
    size_t nmaps;
    pp_arena map_arena;
    sbuf sig_all;          /* every executable line of the maps */
    bool maps_valid;

    /* Sorted function symbols of each module, built on first use; valid
     * for `dwfl`. */
    pp_table modidx;       /* of sym_index */
    pp_arena sym_arena;    /* names stripped of version suffixes */
    pp_table cuidx;        /* of cu_index: function ranges per compile unit */
    pp_table culines;      /* of cu_lines: line tables per compile unit */
    pp_table read_mods;    /* of read_module: read during this session */

    unsigned fetch_gen;    /* pp_sym_fetch_generation when the Dwfl was built */

    /* Counters for pprof_symbolizer_stats. */
    uint64_t n_sessions, n_page_releases, n_idle_releases;

    /* Per-address cache, valid for `dwfl`. */
    pp_table cache;        /* of cache_slot */
    pp_table dem;          /* of demangle_slot */
    pp_arena cache_arena;
};

#define SESSION_INIT                                                                        \
    {.mu = PTHREAD_MUTEX_INITIALIZER, .modidx = PP_TABLE_INIT(sym_index), .cuidx = PP_TABLE_INIT(cu_index), .culines = PP_TABLE_INIT(cu_lines), .read_mods = PP_TABLE_INIT(read_module), \
     .cache = PP_TABLE_INIT(cache_slot), .dem = PP_TABLE_INIT(demangle_slot)}

/* The program's __cxa_demangle, NULL when it has none (symbolize.c). */
extern cxa_demangle_fn pp_sym_demangler;

/* sym_debuginfo.c: libdwfl's callbacks that find objects and their debug
 * files locally; a descriptor of the file mapped at [start, limit). */
extern const Dwfl_Callbacks pp_sym_callbacks;
int pp_sym_open_map_file(uint64_t start, uint64_t limit);
/* sym_keep.c: open(path, O_RDONLY), or when the path is out of reach (a
 * chroot), a copy of the descriptor kept for it by pp_sym_keep_files;
 * pp_sym_open_kept gives only the kept copy. */
int pp_sym_open(const char *path);
int pp_sym_open_kept(const char *path);

/* Longest build ID in hex, with its NUL. */
#define PP_SYM_HEX_MAX 130
/* sym_store.c: debug files kept by build ID, in libpprof's cache (which
 * 0) and the debuginfod client's (which 1): <dir>/<hex>/debuginfo. */
bool pp_sym_build_id_hex(const unsigned char *bits, size_t n, char *out, size_t size);
/* The build-ID tree's path for hex: /usr/lib/debug/.build-id/xx/rest.debug. */
bool pp_sym_tree_path(const char *hex, char *out, size_t n);
bool pp_sym_store_path(int which, const char *hex, char *out, size_t n);
/* Opens the kept file for hex, libpprof's cache first; -1 for none. */
int pp_sym_store_open(const char *hex, char **out_name);
/* A file in the cache to receive hex's debug file (tmp: its name), or -1
 * with why; commit checks its build ID and moves it into place (the fd is
 * closed either way), then trims the cache to its bound; abort drops it. */
int pp_sym_store_begin(const char *hex, char *tmp, size_t n, const char **why);
int pp_sym_store_commit(const char *hex, const char *tmp, int fd, const char **why);
void pp_sym_store_abort(const char *tmp, int fd);
const char *pp_sym_store_dir(void);
uint64_t pp_sym_store_bytes(void);
uint64_t pp_sym_store_budget(void);

/* sym_fetch.c: fetching from debuginfod on the profiler's thread. */
/* Asks for hex's debug file (for the object at path); the state: 0 not
 * fetched (fetching off), else pending, done or failed. Never waits. */
int pp_sym_fetch_want(const char *hex, const char *path);
void pp_sym_fetch_stats(pprof_symbolizer_stats *st);
/* The state and note of hex's fetch, as pp_sym_fetch_note_of. */
int pp_sym_fetch_note(const char *hex, char *out, size_t n);
/* Whether mod's own DWARF may be read (its compressed debug sections fit
 * LIBPPROF_SYMBOLIZER_INFLATE_MB); separate debug files are checked when
 * found. Objects left out get a note, cleared with the Dwfl. */
bool pp_sym_dwarf_allowed(Dwfl_Module *mod);
void pp_sym_notes_clear(void);

/* sym_cache.c: the cache is emptied when its memory passes the budget
 * (LIBPPROF_SYMBOLIZER_CACHE_MB, read by pp_sym_cache_init). */
void pp_sym_cache_init(void);
uint64_t pp_sym_cache_budget(void);
void pp_sym_cache_clear(struct pp_sym_session *s);
void pp_sym_cache_keep_budget(struct pp_sym_session *s);
void pp_sym_cache_stats(const struct pp_sym_session *s, pprof_symbolizer_stats *out);
const char *pp_sym_demangle(struct pp_sym_session *s, const char *raw);

/* sym_tables.c */
void pp_sym_indexes_clear(struct pp_sym_session *s);
const char *pp_sym_symbol_at(struct pp_sym_session *s, Dwfl_Module *mod, uint64_t addr, uint64_t *start);
/* 1 when the module's symbol tables were read and name something. */
int pp_sym_module_has_symbols(struct pp_sym_session *s, Dwfl_Module *mod);
/* pp_sym_dwarf_allowed, asked once per module. */
bool pp_sym_module_dwarf(struct pp_sym_session *s, Dwfl_Module *mod);

/* sym_layout.c */
bool pp_sym_parse_maps_line(const char *line, size_t len, maps_line *m);
/* sym_layout.c: the whole of a /proc file into out (NUL-terminated). */
bool pp_sym_read_file(const char *path, sbuf *out);
/* sym_layout.c: calls fn for each line of text (without its newline). */
void pp_sym_each_line(const sbuf *text, void (*fn)(const char *line, size_t len, void *arg), void *arg);
struct dl_counts pp_sym_dl_counts_now(void);
void pp_sym_refresh(struct pp_sym_session *s);

/* symbolize.c: drops the Dwfl, the tables and the caches (session lock
 * held); the next session builds them again. */
void pp_sym_release(struct pp_sym_session *s);
/* symbolize.c: copies the counters for pprof_symbolizer_stats_get
 * (session lock held). */
void pp_sym_publish(struct pp_sym_session *s);

/* sym_idle.c: a session has ended (session lock held); the memory goes
 * back once none has run for LIBPPROF_SYMBOLIZER_IDLE seconds. */
void pp_sym_idle_note(struct pp_sym_session *s);
void pp_sym_idle_fork_child(void);

/* sym_pages.c: notes a module read by this session; at its end, gives
 * back the pages of the mapped files that were read (true when it gave
 * back any). */
void pp_sym_pages_note(struct pp_sym_session *s, Dwfl_Module *mod, bool dwarf);
bool pp_sym_pages_release(struct pp_sym_session *s);

/* sym_resolve.c */
int pp_sym_find_mapping(const struct pp_sym_session *s, uint64_t addr);
int pp_sym_resolve(struct pp_sym_session *s, uint64_t addr, int functions_only, pp_sym_frame *frames);

/* sym_lines.c: the unit's line table, read on first use; NULL when it
 * cannot be read here (libdw's is used then). */
const cu_lines *pp_sym_unit_lines(struct pp_sym_session *s, Dwarf_Die *cudie);
/* The file and line of DWARF address pc; false when no row covers it. */
bool pp_sym_unit_line_at(const cu_lines *t, uint64_t pc, const char **file, int *line);
/* The name of DWARF file `index` (DW_AT_call_file), NULL for none. */
const char *pp_sym_unit_file(const cu_lines *t, uint64_t index);
/* Frees every unit's table (the Dwfl ends). */
void pp_sym_unit_lines_free(struct pp_sym_session *s);
#endif
