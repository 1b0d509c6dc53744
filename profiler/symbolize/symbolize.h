/* symbolize.h: the interface of symbolize/: addresses of this process ->
 * mappings, functions, files, lines.
 *
 * One process-wide symbolizer, built on elfutils' libdw/libdwfl. It reads
 * /proc/self/maps (re-reading when the set of loaded objects changes), each
 * object's .symtab (so static functions are named, not only what dladdr
 * sees), DWARF line tables and inlined-subroutine entries, and separate debug
 * files through .gnu_debuglink and /usr/lib/debug/.build-id.
 *
 * Never call from a signal handler or from inside malloc: it allocates and
 * locks. All functions are thread-safe (one internal mutex).
 */
#ifndef PP_SYMBOLIZE_H
#define PP_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.h"

#define PP_SYM_MAX_INLINE 16

/* One executable mapping of /proc/self/maps. */
typedef struct pp_sym_mapping {
    uint64_t start, limit, offset;
    uint64_t dev, inode;    /* the file's, as /proc/self/maps shows them */
    const char *path;       /* without " (deleted)" */
    const char *build_id;   /* lowercase hex, or "" */
} pp_sym_mapping;

/* One frame of a resolved address, innermost (inlined) first. */
typedef struct pp_sym_frame {
    const char *function;    /* demangled name, or NULL when unknown */
    const char *system_name; /* raw symbol name, or NULL */
    const char *filename;    /* NULL when there is no line info */
    int line;                /* 0 when unknown */
    uint64_t entry;          /* start of the symbol the address is in, 0 when unknown */
} pp_sym_frame;

typedef struct pp_sym_result {
    int mapping;             /* index into the mapping snapshot, -1 for none */
    int nframes;             /* 0: no symbol at all */
    pp_sym_frame frames[PP_SYM_MAX_INLINE];
} pp_sym_result;

/* A consistent view for a batch of lookups: holds the symbolizer's lock
 * from begin to end. Strings returned stay valid until pp_sym_end. */
typedef struct pp_sym_session pp_sym_session;

/* Begins a batch; refreshes the mapping list if objects were loaded or
 * unloaded. Returns NULL on allocation failure. */
pp_sym_session *pp_sym_begin(void);
/* The executable mappings, in address order. */
size_t pp_sym_mappings(pp_sym_session *s, const pp_sym_mapping **out);
/* Resolves one address (already a call site, see pprof.h). Always fills
 * res->mapping; res->nframes is 0 when nothing is known. */
void pp_sym_lookup(pp_sym_session *s, uint64_t addr, pp_sym_result *res);
/* As pp_sym_lookup, with `functions_only`: the function from the symbol
 * tables and nothing from DWARF (no file, line or inlined frames), which
 * reads none of the objects' debug sections. */
void pp_sym_lookup_how(pp_sym_session *s, uint64_t addr, int functions_only, pp_sym_result *res);
/* The mapping that holds addr (index into pp_sym_mappings), or -1; reads
 * no symbols. */
int pp_sym_mapping_of(pp_sym_session *s, uint64_t addr);
/* What the session could not do for whole objects (one line each, for a
 * profile's comments): up to max into out; valid until pp_sym_end. */
size_t pp_sym_notes(pp_sym_session *s, const char **out, size_t max);
void pp_sym_end(pp_sym_session *s);

/* Files shared with another process (sym_shared.c): marks[i] = 1 for each
 * mapping i of pp_sym_mappings whose file (device and inode) the other
 * process maps executable too, as `maps` (its /proc/<pid>/maps text, or
 * the executable lines of it) says; marks has room for every mapping.
 * Returns how many were marked. */
size_t pp_sym_shared_with(pp_sym_session *s, const char *maps, unsigned char *marks);
/* Resolves the code at file_offset of a file that another process mapped
 * (its path and build ID, "" for none: then the path alone decides), in
 * this process's mapping of the same file: res->nframes is 0 when this
 * process maps no such file or knows nothing there. */
void pp_sym_lookup_file(pp_sym_session *s, const char *path, const char *build_id, uint64_t file_offset,
                        int functions_only, pp_sym_result *res);

/* Debug files fetched from debuginfod by build ID (sym_fetch.c), for the
 * objects with none on the machine. pp_sym_fetch_mode: PPROF_DEBUGINFOD_*
 * (pprof_stats.h). The state of mapping i's debug file: 0 nothing to say,
 * 1 being fetched, 2 its fetch failed, with a one-line note for a
 * profile's comments in out. pp_sym_fetch_wait, with no session open:
 * waits until no file is being fetched or LIBPPROF_DEBUGINFOD_WAIT_MS
 * have passed since since_ns (CLOCK_MONOTONIC); true when a fetch ended
 * meanwhile (a file arrived, so a new session names more, or it failed,
 * so the notes change). Thread-safe. */
int pp_sym_fetch_mode(void);
/* Bumped each time a debug file arrives. Thread-safe. */
unsigned pp_sym_fetch_generation(void);
int pp_sym_fetch_note_of(pp_sym_session *s, int mapping, char *out, size_t n);
bool pp_sym_fetch_wait(int64_t since_ns);

/* Before a chroot (interpose/): keeps /proc/self/maps and every object
 * mapped now open, so that profiles taken after it keep their function
 * names (sym_keep.c). Thread-safe; not in a signal handler. */
void pp_sym_keep_files(void);

#endif
