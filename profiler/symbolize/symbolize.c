/* symbolize.c: addresses of this process -> mappings, functions, files, lines.
 *
 * What it is for
 *   Profiles carry raw addresses. Before a profile is encoded, the recorder
 *   asks this file which executable mapping holds each address (pprof's
 *   Mapping, with path and GNU build ID) and what code is there: the function
 *   (pprof's Function, demangled and raw), the source file and line, and the
 *   chain of inlined calls (extra Line entries of one Location, innermost
 *   first). pprof_symbol_name() serves the `symbol` endpoint.
 *
 * How
 *   One process-wide symbolizer built on elfutils' libdwfl. A Dwfl reports
 *   every file mapped into this process (dwfl_linux_proc_report on our own
 *   pid), opens each object through dwfl_linux_proc_find_elf (or, for a file
 *   deleted since it was mapped, through /proc/self/map_files) and finds
 *   separate debug files by build ID (/usr/lib/debug/.build-id) and by
 *   .gnu_debuglink. Function names come from each module's symbol tables,
 *   .symtab as well as .dynsym (so static functions of an executable linked
 *   without -rdynamic are named; dladdr would not see them), read once per
 *   module into a sorted array: dwfl_module_addrinfo answers the same
 *   question but scans the whole table on every call. Files and lines come
 *   from the DWARF line table (dwfl_module_getsrc). Inlined frames come from
 *   the DW_TAG_inlined_subroutine entries that contain the address inside
 *   the function's DW_TAG_subprogram, found through a per-compile-unit index
 *   of function ranges; each caller's position is the inlined entry's
 *   DW_AT_call_file/DW_AT_call_line. C++ names are demangled with the
 *   program's own __cxa_demangle when it has one.
 *
 *   Debug files are searched locally only (see find_debuginfo): libdwfl's
 *   standard search would load a debuginfod client, and with it libcurl and
 *   dozens of libraries, into the host process, and could download files
 *   while a profile response waits.
 *
 *   When libdwfl cannot read an object at all, build IDs come from the note
 *   the loader mapped and names from the loader's exported symbols.
 *
 * Invariants
 *   - One pthread mutex guards everything below; pp_sym_begin takes it and
 *     pp_sym_end releases it. Every string handed out (names, files, paths,
 *     build IDs) lives in memory owned by the symbolizer and stays valid until
 *     pp_sym_end, because nothing is freed except inside pp_sym_begin.
 *   - The Dwfl is rebuilt in pp_sym_begin when the set of loaded objects
 *     changed (the loader's dlpi_adds/dlpi_subs counters, the file-backed
 *     executable lines of /proc/self/maps, or the pid after fork). The old
 *     Dwfl is kept until a new one has been built, so a failed rebuild leaves
 *     a working, if stale, symbolizer.
 *   - Results are cached per address in an open-addressing hash table; the
 *     cache (and the arena holding its frames and demangled names) is dropped
 *     when the Dwfl it points into is replaced, or in pp_sym_begin when it
 *     has grown past a cap. The per-module symbol arrays and per-unit
 *     function indexes live exactly as long as their Dwfl. Mapping indexes are not cached: they are
 *     found by binary search in the current mapping snapshot, which can change
 *     (JIT code) without the Dwfl changing.
 *   - The mapping snapshot is rebuilt only when the executable lines of
 *     /proc/self/maps changed, so pointers into it are stable across batches
 *     that see the same process layout.
 *
 * Never call any of this from a signal handler or from inside malloc: it
 * allocates, opens files and takes a pthread mutex. The mutex is a leaf lock
 * except that libdw allocates while it is held. A pthread_atfork handler,
 * registered on first use (so it runs before the handlers that other parts
 * of the profiler register from constructors), takes it around fork so a
 * child never inherits it locked.
 */
#define _GNU_SOURCE
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

/* Past this many cached addresses the cache is dropped at the next
 * pp_sym_begin, bounding memory in long-lived processes. */
#define CACHE_MAX_ENTRIES (1u << 20)
#define ARENA_CHUNK (64 * 1024)

/* ------------------------------------------------------------------ arena */

/* Bump allocator for strings and frame arrays whose lifetime is the cache's
 * (or the mapping snapshot's). Freed all at once. */
typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    _Alignas(16) char data[];
} arena_chunk;

typedef struct arena {
    arena_chunk *head;
} arena;

static void *arena_alloc(arena *a, size_t n, size_t align)
{
    arena_chunk *c = a->head;
    if (c) {
        size_t off = (c->used + align - 1) & ~(align - 1);
        if (off + n <= c->cap) {
            c->used = off + n;
            return c->data + off;
        }
    }
    size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
    c = malloc(sizeof *c + cap);
    if (!c)
        return NULL;
    c->next = a->head;
    c->cap = cap;
    c->used = n;
    a->head = c;
    return c->data;
}

static const char *arena_strdup(arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n, 1);
    if (p)
        memcpy(p, s, n);
    return p;
}

static void arena_free(arena *a)
{
    arena_chunk *c = a->head;
    while (c) {
        arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

/* ----------------------------------------------------------- growable text */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static bool sbuf_add(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return false;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return true;
}

static bool sbuf_eq(const sbuf *a, const sbuf *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

/* ---------------------------------------------------------------- state */

typedef struct cache_slot {
    uint64_t addr;
    pp_sym_frame *frames;  /* in the cache arena; NULL when nframes == 0 */
    uint32_t nframes;
    uint32_t used;
} cache_slot;

typedef struct demangle_slot {
    const char *raw;       /* pointer identity: strings owned by the Dwfl */
    const char *demangled;
} demangle_slot;

/* One function symbol: [start, end) holds its code. */
typedef struct sym_entry {
    uint64_t start, end;
    const char *name;      /* in the module's string table */
} sym_entry;

typedef struct sym_index {
    Dwfl_Module *mod;      /* NULL: free slot */
    sym_entry *syms;       /* sorted by start, one entry per start */
    size_t n;
} sym_index;

/* Code ranges of the functions of one compile unit. */
typedef struct fn_range {
    Dwarf_Addr lo, hi;     /* DWARF addresses (module address - bias) */
    Dwarf_Die die;         /* the DW_TAG_subprogram with this code */
} fn_range;

typedef struct cu_index {
    const void *key;       /* the unit DIE's address in .debug_info; NULL: free */
    fn_range *r;           /* sorted by lo */
    size_t n;
} cu_index;

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
    arena map_arena;
    sbuf sig_all;          /* every executable line of the maps */
    bool maps_valid;

    /* Sorted function symbols of each module, built on first use; valid
     * for `dwfl`. */
    struct sym_index *modidx;
    size_t modidx_cap, modidx_count;
    arena sym_arena;       /* names stripped of version suffixes */
    cu_index *cuidx;       /* function ranges per compile unit */
    size_t cuidx_cap, cuidx_count;

    /* Per-address cache, valid for `dwfl`. */
    cache_slot *cache;
    size_t cache_cap;      /* power of two, 0 when not allocated */
    size_t cache_count;
    demangle_slot *dem;
    size_t dem_cap, dem_count;
    arena cache_arena;
};

static struct pp_sym_session g_sym = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cxa_demangle_fn g_demangle;

/* A forked child starts with an empty symbolizer: the parent's may have
 * been mid-update in another thread. Its memory is left behind rather than
 * freed (the child usually execs). Taking the lock around fork instead
 * would stall the host's fork for as long as a symbolization runs. */
static void atfork_child(void)
{
    g_sym = (struct pp_sym_session){.mu = PTHREAD_MUTEX_INITIALIZER};
}

static void sym_init_once(void)
{
    /* Present only when the program links libstdc++ (or another C++
     * runtime); C programs have no mangled names to show. */
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    g_demangle = (cxa_demangle_fn)f;
    elf_version(EV_CURRENT);
    pthread_atfork(NULL, NULL, atfork_child);
}

/* ------------------------------------------------------ debuginfo search */

/* One parsed line of /proc/self/maps. `path` points into the line and is
 * not NUL-terminated; `pathlen` already excludes " (deleted)". */
typedef struct maps_line {
    uint64_t start, limit, offset;
    bool exec, deleted;
    const char *path;
    size_t pathlen;
} maps_line;

static bool parse_maps_line(const char *line, size_t len, maps_line *m);

/* The CRC-32 that .gnu_debuglink records for its file (zlib's). */
static bool file_crc32(int fd, uint32_t *out)
{
    unsigned char buf[8192];
    uLong crc = crc32(0L, Z_NULL, 0);
    off_t pos = 0;
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof buf, pos);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            break;
        crc = crc32(crc, buf, (uInt)n);
        pos += n;
    }
    *out = (uint32_t)crc;
    return true;
}

/* Whether the file open on fd is the debug file wanted. libdwfl asks for
 * a dwz alternate file with a CRC of 0: that name is taken as it is.
 * Otherwise, when the module and the candidate both carry a build ID they
 * must match, else the debuglink CRC must. */
static bool debug_file_matches(Dwfl_Module *mod, int fd, GElf_Word crc)
{
    if (crc == 0)
        return true;
    const unsigned char *want;
    GElf_Addr vaddr;
    int nwant = dwfl_module_build_id(mod, &want, &vaddr);
    if (nwant > 0) {
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (elf) {
            const void *got;
            ssize_t ngot = dwelf_elf_gnu_build_id(elf, &got);
            bool decided = ngot > 0;
            bool same = decided && ngot == nwant && memcmp(got, want, (size_t)nwant) == 0;
            elf_end(elf);
            if (decided)
                return same;
        }
    }
    uint32_t got_crc;
    return file_crc32(fd, &got_crc) && got_crc == crc;
}

/* Opens `path` as the debug file of `mod` when it is not the main file
 * itself and it matches. */
static int try_debug_candidate(Dwfl_Module *mod, const char *path, const struct stat *main_st,
                               GElf_Word crc, char **out_name)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (main_st && st.st_dev == main_st->st_dev && st.st_ino == main_st->st_ino) ||
        !debug_file_matches(mod, fd, crc)) {
        close(fd);
        return -1;
    }
    *out_name = strdup(path);
    return fd;
}

/* The find_debuginfo callback: libdwfl's standard search without its last
 * resort. dwfl_standard_find_debuginfo ends by asking a debuginfod client,
 * and merely getting that client dlopens libdebuginfod, which loads
 * libcurl, gnutls, krb5 and some thirty more libraries into the host
 * process (even with DEBUGINFOD_URLS unset); with DEBUGINFOD_URLS set it
 * would download debug files while the symbolizer lock is held. So: the
 * build-ID tree under /usr/lib/debug/.build-id first (this also finds dwz
 * alternate files by their build ID), then the .gnu_debuglink name (or
 * "<file>.debug") next to the file, in its .debug subdirectory, under
 * /usr/lib/debug/<dir> and in /usr/lib/debug. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          GElf_Addr base, const char *file_name, const char *debuglink,
                          GElf_Word crc, char **out_name)
{
    int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink,
                                          crc, out_name);
    if (fd >= 0)
        return fd;
    struct stat main_st, *mst = NULL;
    if (file_name && stat(file_name, &main_st) == 0)
        mst = &main_st;
    if (debuglink && debuglink[0] == '/')
        return try_debug_candidate(mod, debuglink, mst, crc, out_name);
    if (file_name == NULL || file_name[0] != '/')
        return -1;
    const char *slash = strrchr(file_name, '/');
    int dirlen = (int)(slash - file_name);
    char deflink[256];
    if (debuglink == NULL || debuglink[0] == '\0') {
        int n = snprintf(deflink, sizeof deflink, "%s.debug", slash + 1);
        if (n < 0 || (size_t)n >= sizeof deflink)
            return -1;
        debuglink = deflink;
    }
    static const char *const fmts[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s",
                                       "/usr/lib/debug/%.*s%s"};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        char path[4096];
        int n = snprintf(path, sizeof path, fmts[i], i == 3 ? 0 : dirlen, file_name, debuglink);
        if (n < 0 || (size_t)n >= sizeof path)
            continue;
        fd = try_debug_candidate(mod, path, mst, crc, out_name);
        if (fd >= 0)
            return fd;
    }
    return -1;
}

/* Opens the file behind one mapping through /proc/self/map_files, which
 * works after the file was deleted or replaced on disk. */
static int open_map_file(uint64_t start, uint64_t limit)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/map_files/%" PRIx64 "-%" PRIx64, start, limit);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* The find_elf callback. dwfl_linux_proc_find_elf opens a module by the
 * path in /proc/self/maps, which fails for a library deleted or replaced
 * since it was loaded (a package upgraded under a running service): the
 * module's name then ends in " (deleted)", and the mapped file is still
 * reachable through /proc/self/map_files. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
    /* dwfl_linux_proc_find_elf aborts on any other kind of name. */
    if (modname == NULL || (modname[0] != '/' && strncmp(modname, "[vdso: ", 7) != 0))
        return -1;
    int fd = dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name, elfp);
    static const char deleted[] = " (deleted)";
    size_t n = strlen(modname), dl = sizeof deleted - 1;
    if (fd >= 0 || *elfp != NULL || n <= dl || modname[0] != '/' ||
        strcmp(modname + n - dl, deleted) != 0)
        return fd;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -1;
    char line[4608];
    while (fd < 0 && fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        maps_line m;
        if (!parse_maps_line(line, len, &m) || !m.deleted || m.pathlen + dl != n ||
            memcmp(m.path, modname, n) != 0)
            continue;
        fd = open_map_file(m.start, m.limit);
    }
    fclose(f);
    if (fd >= 0 && *file_name == NULL)
        *file_name = strndup(modname, n - dl);
    return fd;
}

static const Dwfl_Callbacks g_callbacks = {
    .find_elf = find_elf,
    .find_debuginfo = find_debuginfo,
    .debuginfo_path = NULL, /* ":.debug:/usr/lib/debug" */
};

/* ------------------------------------------------------------ the cache */

static inline size_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static void cache_clear(struct pp_sym_session *s)
{
    free(s->cache);
    s->cache = NULL;
    s->cache_cap = s->cache_count = 0;
    free(s->dem);
    s->dem = NULL;
    s->dem_cap = s->dem_count = 0;
    arena_free(&s->cache_arena);
}

static cache_slot *cache_find(struct pp_sym_session *s, uint64_t addr)
{
    if (s->cache_cap == 0)
        return NULL;
    size_t mask = s->cache_cap - 1;
    for (size_t i = hash_u64(addr) & mask;; i = (i + 1) & mask) {
        cache_slot *c = &s->cache[i];
        if (!c->used)
            return NULL;
        if (c->addr == addr)
            return c;
    }
}

/* Returns a fresh slot for addr (not yet present), growing the table at
 * half load; NULL when out of memory. */
static cache_slot *cache_insert(struct pp_sym_session *s, uint64_t addr)
{
    if ((s->cache_count + 1) * 2 > s->cache_cap) {
        size_t cap = s->cache_cap ? s->cache_cap * 2 : 1024;
        cache_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t j = 0; j < s->cache_cap; j++) {
            cache_slot *o = &s->cache[j];
            if (!o->used)
                continue;
            size_t i = hash_u64(o->addr) & (cap - 1);
            while (t[i].used)
                i = (i + 1) & (cap - 1);
            t[i] = *o;
        }
        free(s->cache);
        s->cache = t;
        s->cache_cap = cap;
    }
    size_t mask = s->cache_cap - 1;
    size_t i = hash_u64(addr) & mask;
    while (s->cache[i].used)
        i = (i + 1) & mask;
    s->cache[i].used = 1;
    s->cache[i].addr = addr;
    s->cache_count++;
    return &s->cache[i];
}

/* Demangled form of `raw`, cached by pointer (names live in the Dwfl's
 * string tables, so one symbol always comes back as one pointer). */
static const char *demangle(struct pp_sym_session *s, const char *raw)
{
    if (raw == NULL || g_demangle == NULL || raw[0] != '_' || raw[1] != 'Z')
        return raw;
    uint64_t key = (uint64_t)(uintptr_t)raw;
    if (s->dem_cap) {
        size_t mask = s->dem_cap - 1;
        for (size_t i = hash_u64(key) & mask; s->dem[i].raw; i = (i + 1) & mask)
            if (s->dem[i].raw == raw)
                return s->dem[i].demangled;
    }
    int status = -1;
    char *d = g_demangle(raw, NULL, NULL, &status);
    const char *out = raw;
    if (d && status == 0) {
        const char *copy = arena_strdup(&s->cache_arena, d);
        if (copy)
            out = copy;
    }
    free(d);
    if ((s->dem_count + 1) * 2 > s->dem_cap) {
        size_t cap = s->dem_cap ? s->dem_cap * 2 : 256;
        demangle_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return out;
        for (size_t j = 0; j < s->dem_cap; j++) {
            if (!s->dem[j].raw)
                continue;
            size_t i = hash_u64((uint64_t)(uintptr_t)s->dem[j].raw) & (cap - 1);
            while (t[i].raw)
                i = (i + 1) & (cap - 1);
            t[i] = s->dem[j];
        }
        free(s->dem);
        s->dem = t;
        s->dem_cap = cap;
    }
    size_t mask = s->dem_cap - 1;
    size_t i = hash_u64(key) & mask;
    while (s->dem[i].raw)
        i = (i + 1) & mask;
    s->dem[i].raw = raw;
    s->dem[i].demangled = out;
    s->dem_count++;
    return out;
}

/* ------------------------------------------------------- symbol tables */

/* dwfl_module_addrinfo scans a module's whole symbol table on every call
 * (0.2 ms per address in libc with its debug symbols here, far worse in big
 * C++ programs), so each module's function symbols are read once, through
 * dwfl_module_getsym_info (the same .symtab/.dynsym/auxiliary tables, with
 * the same address adjustment) into a sorted array searched by bisection. */

typedef struct sym_cand {
    uint64_t start, size;
    uint64_t limit;        /* end of the symbol's section, for sizeless ones */
    const char *name;
    unsigned rank;         /* lower is preferred among aliases */
} sym_cand;

static int cmp_cand(const void *x, const void *y)
{
    const sym_cand *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Among aliases at one address: a sized symbol over a sizeless one, then
 * global over weak over local, then fewer leading underscores, so that
 * glibc's `getpid` wins over `__getpid` and its internal `__GI_` aliases. */
static unsigned cand_rank(const GElf_Sym *sym, const char *name)
{
    unsigned bind = GELF_ST_BIND(sym->st_info);
    unsigned r = sym->st_size ? 0 : 1u << 8;
    r |= (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1u : 2u) << 4;
    unsigned us = 0;
    if (strncmp(name, "__GI_", 5) == 0)
        us = 15;
    while (name[us] == '_' && us < 15)
        us++;
    return r | us;
}

/* Absolute end of the section holding a symbol, or 0 when unknown. */
static uint64_t section_limit(Elf *elf, GElf_Word shndx, Dwarf_Addr bias)
{
    GElf_Shdr shdr;
    Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
    if (!scn || !gelf_getshdr(scn, &shdr))
        return 0;
    return shdr.sh_addr + shdr.sh_size + bias;
}

/* Symbol names as profiles should show them: glibc's debug symbols carry
 * version suffixes ("pthread_mutex_lock@@GLIBC_2.2.5"), dropped here. */
static const char *clean_name(arena *a, const char *name)
{
    const char *at = strchr(name, '@');
    if (!at || at == name)
        return name;
    size_t n = (size_t)(at - name);
    char *p = arena_alloc(a, n + 1, 1);
    if (!p)
        return name;
    memcpy(p, name, n);
    p[n] = '\0';
    return p;
}

static bool is_code_symbol(const GElf_Sym *sym, const char *name, GElf_Word shndx, Elf *elf)
{
    if (name == NULL || name[0] == '\0' || name[0] == '$')
        return false;
    if (shndx == SHN_UNDEF || shndx == (GElf_Word)-1 || sym->st_shndx == SHN_ABS)
        return false;
    unsigned type = GELF_ST_TYPE(sym->st_info);
    if (type == STT_FUNC || type == STT_GNU_IFUNC)
        return true;
    if (type != STT_NOTYPE || elf == NULL)
        return false;
    /* Untyped symbols (hand-written assembly) count when they label code. */
    GElf_Shdr shdr;
    Elf_Scn *scn = elf_getscn(elf, shndx);
    return scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR);
}

static bool build_sym_index(Dwfl_Module *mod, arena *names, sym_index *out)
{
    out->syms = NULL;
    out->n = 0;
    int total = dwfl_module_getsymtab(mod);
    if (total <= 1)
        return true;
    sym_cand *c = malloc((size_t)total * sizeof *c);
    if (!c)
        return false;
    size_t nc = 0;
    for (int i = 1; i < total; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf = NULL;
        Dwarf_Addr bias = 0;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
        if (!is_code_symbol(&sym, name, shndx, elf) || addr == 0)
            continue;
        uint64_t limit = sym.st_size ? 0 : section_limit(elf, shndx, bias);
        c[nc++] = (sym_cand){addr, sym.st_size, limit, name, cand_rank(&sym, name)};
    }
    if (nc == 0) {
        free(c);
        return true;
    }
    qsort(c, nc, sizeof *c, cmp_cand);
    sym_entry *e = malloc(nc * sizeof *e);
    uint64_t *limits = malloc(nc * sizeof *limits);
    if (!e || !limits) {
        free(e);
        free(limits);
        free(c);
        return false;
    }
    /* One entry per address: the preferred alias, the largest size, and
     * for sizeless symbols the end of their section in `limits`. */
    size_t n = 0;
    for (size_t i = 0; i < nc;) {
        size_t j = i;
        uint64_t size = 0, limit = 0;
        for (; j < nc && c[j].start == c[i].start; j++) {
            size = c[j].size > size ? c[j].size : size;
            limit = c[j].limit > limit ? c[j].limit : limit;
        }
        e[n] = (sym_entry){c[i].start, c[i].start + size, clean_name(names, c[i].name)};
        limits[n] = limit;
        n++;
        i = j;
    }
    /* A sizeless symbol runs to the next symbol, but not past its section
     * (so `_fini` does not swallow the padding after it; `_etext`, at the
     * very end, covers nothing). */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        sym_entry x = e[i];
        if (x.end == x.start) {
            uint64_t end = i + 1 < n ? e[i + 1].start : UINT64_MAX;
            if (limits[i] && limits[i] < end)
                end = limits[i];
            if (end == UINT64_MAX || end <= x.start)
                continue;
            x.end = end;
        }
        e[kept++] = x;
    }
    free(limits);
    free(c);
    out->syms = e;
    out->n = kept;
    return true;
}

static void indexes_clear(struct pp_sym_session *s)
{
    for (size_t i = 0; i < s->modidx_cap; i++)
        free(s->modidx[i].syms);
    free(s->modidx);
    s->modidx = NULL;
    s->modidx_cap = s->modidx_count = 0;
    arena_free(&s->sym_arena);
    for (size_t i = 0; i < s->cuidx_cap; i++)
        free(s->cuidx[i].r);
    free(s->cuidx);
    s->cuidx = NULL;
    s->cuidx_cap = s->cuidx_count = 0;
}

static sym_index *modidx_get(struct pp_sym_session *s, Dwfl_Module *mod)
{
    uint64_t key = (uint64_t)(uintptr_t)mod;
    if (s->modidx_cap) {
        size_t mask = s->modidx_cap - 1;
        for (size_t i = hash_u64(key) & mask; s->modidx[i].mod; i = (i + 1) & mask)
            if (s->modidx[i].mod == mod)
                return &s->modidx[i];
    }
    if ((s->modidx_count + 1) * 2 > s->modidx_cap) {
        size_t cap = s->modidx_cap ? s->modidx_cap * 2 : 64;
        sym_index *t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t j = 0; j < s->modidx_cap; j++) {
            if (!s->modidx[j].mod)
                continue;
            size_t i = hash_u64((uint64_t)(uintptr_t)s->modidx[j].mod) & (cap - 1);
            while (t[i].mod)
                i = (i + 1) & (cap - 1);
            t[i] = s->modidx[j];
        }
        free(s->modidx);
        s->modidx = t;
        s->modidx_cap = cap;
    }
    sym_index built;
    if (!build_sym_index(mod, &s->sym_arena, &built))
        return NULL;
    size_t mask = s->modidx_cap - 1;
    size_t i = hash_u64(key) & mask;
    while (s->modidx[i].mod)
        i = (i + 1) & mask;
    s->modidx[i] = built;
    s->modidx[i].mod = mod;
    s->modidx_count++;
    return &s->modidx[i];
}

/* Name of the function symbol whose code holds addr, or NULL. */
static const char *symbol_at(struct pp_sym_session *s, Dwfl_Module *mod, uint64_t addr, uint64_t *start)
{
    *start = 0;
    sym_index *ix = modidx_get(s, mod);
    if (!ix || ix->n == 0)
        return NULL;
    size_t lo = 0, hi = ix->n; /* first entry with start > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->syms[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* The nearest start below addr usually holds it; a few steps back
     * catch a larger symbol enclosing smaller ones. */
    for (size_t k = 0; k < 8 && lo > 0; k++, lo--) {
        const sym_entry *e = &ix->syms[lo - 1];
        if (addr < e->end) {
            *start = e->start;
            return e->name;
        }
    }
    return NULL;
}

/* ----------------------------------------------------- process layout */

struct dl_counts {
    unsigned long long adds, subs;
    bool ok;
};

static int dl_count_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct dl_counts *c = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
        c->ok = true;
    }
    return 1; /* the counters are the same in every entry */
}

static struct dl_counts dl_counts_now(void)
{
    struct dl_counts c = {0, 0, false};
    dl_iterate_phdr(dl_count_cb, &c);
    return c;
}

static bool read_file(const char *path, sbuf *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    out->n = 0;
    for (;;) {
        char chunk[16384];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return false;
        }
        if (n == 0)
            break;
        if (!sbuf_add(out, chunk, (size_t)n)) {
            close(fd);
            return false;
        }
    }
    close(fd);
    return out->p != NULL || sbuf_add(out, "", 0);
}

static bool parse_maps_line(const char *line, size_t len, maps_line *m)
{
    char *end;
    const char *p = line, *e = line + len;
    m->start = strtoull(p, &end, 16);
    if (end == p || *end != '-')
        return false;
    p = end + 1;
    m->limit = strtoull(p, &end, 16);
    if (end == p || *end != ' ')
        return false;
    p = end + 1;
    if (e - p < 5)
        return false;
    m->exec = p[2] == 'x';
    p += 4;
    while (p < e && *p == ' ')
        p++;
    m->offset = strtoull(p, &end, 16);
    if (end == p)
        return false;
    p = end;
    for (int field = 0; field < 2; field++) { /* dev, inode */
        while (p < e && *p == ' ')
            p++;
        while (p < e && *p != ' ')
            p++;
    }
    while (p < e && *p == ' ')
        p++;
    m->path = p;
    m->pathlen = (size_t)(e - p);
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof deleted - 1;
    m->deleted = m->pathlen >= dl && memcmp(p + m->pathlen - dl, deleted, dl) == 0;
    if (m->deleted)
        m->pathlen -= dl;
    return true;
}

/* Calls fn for every line of the maps text. */
static void for_each_line(const sbuf *text, void (*fn)(const char *, size_t, void *), void *arg)
{
    const char *p = text->p, *e = text->p + text->n;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(e - p);
        fn(p, len, arg);
        p += len + 1;
    }
}

struct sig_args {
    sbuf *all, *files;
    bool ok;
};

static void sig_line(const char *line, size_t len, void *arg)
{
    struct sig_args *a = arg;
    maps_line m;
    if (!parse_maps_line(line, len, &m) || !m.exec)
        return;
    a->ok &= sbuf_add(a->all, line, len) && sbuf_add(a->all, "\n", 1);
    if (m.pathlen > 0 && m.path[0] == '/')
        a->ok &= sbuf_add(a->files, line, len) && sbuf_add(a->files, "\n", 1);
}

static void hex_encode(char *out, const unsigned char *bits, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bits[i] >> 4];
        out[2 * i + 1] = digits[bits[i] & 15];
    }
    out[2 * n] = '\0';
}

static const char *build_id_hex(arena *a, const unsigned char *bits, ssize_t n)
{
    if (n <= 0 || n > 256)
        return "";
    char buf[513];
    hex_encode(buf, bits, (size_t)n);
    const char *s = arena_strdup(a, buf);
    return s ? s : "";
}

/* Build ID of a loaded object from the note the loader mapped, found by
 * an address inside one of its PT_LOAD segments. Covers the vDSO and
 * libraries whose file can no longer be opened. */
struct note_args {
    uint64_t addr;
    const unsigned char *bits;
    size_t n;
};

static int loader_note_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct note_args *a = data;
    bool covers = false;
    for (int i = 0; i < info->dlpi_phnum && !covers; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        covers = ph->p_type == PT_LOAD && a->addr >= lo && a->addr - lo < ph->p_memsz;
    }
    if (!covers)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char *e = p + ph->p_memsz;
        while ((size_t)(e - p) >= sizeof(ElfW(Nhdr))) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
            size_t namesz = ((size_t)nh->n_namesz + 3) & ~(size_t)3;
            size_t descsz = ((size_t)nh->n_descsz + 3) & ~(size_t)3;
            const unsigned char *name = p + sizeof *nh;
            if (namesz > (size_t)(e - name) || descsz > (size_t)(e - name) - namesz)
                break;
            const unsigned char *desc = name + namesz;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0 && nh->n_descsz > 0) {
                a->bits = desc;
                a->n = nh->n_descsz;
                return 1;
            }
            p = desc + descsz;
        }
    }
    return 1;
}

/* Build ID of a mapping: from the Dwfl module covering it, else from the
 * loader's in-memory note, else from the ELF notes of the file. */
static const char *mapping_build_id(struct pp_sym_session *s, const maps_line *m,
                                    const char *path)
{
    if (path[0] == '\0')
        return "";
    if (s->dwfl) {
        Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, m->start);
        if (mod) {
            Dwarf_Addr bias;
            const unsigned char *bits;
            GElf_Addr vaddr;
            dwfl_module_getelf(mod, &bias); /* the build ID is read with the ELF */
            int n = dwfl_module_build_id(mod, &bits, &vaddr);
            if (n > 0)
                return build_id_hex(&s->map_arena, bits, n);
        }
    }
    struct note_args na = {m->start, NULL, 0};
    dl_iterate_phdr(loader_note_cb, &na);
    if (na.n > 0)
        return build_id_hex(&s->map_arena, na.bits, (ssize_t)na.n);
    const char *result = "";
    if (path[0] != '/')
        return "";
    /* A deleted path may name a newer file by now: read the mapped one. */
    int fd = m->deleted ? open_map_file(m->start, m->limit) : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return "";
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf) {
        const void *bits;
        ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
        result = build_id_hex(&s->map_arena, bits, n);
        elf_end(elf);
    }
    close(fd);
    return result;
}

struct snap_args {
    struct pp_sym_session *s;
    pp_sym_mapping *maps;
    size_t n, cap;
    bool ok;
};

static void snap_line(const char *line, size_t len, void *arg)
{
    struct snap_args *a = arg;
    maps_line m;
    if (!a->ok || !parse_maps_line(line, len, &m) || !m.exec)
        return;
    if (m.pathlen == 10 && memcmp(m.path, "[vsyscall]", 10) == 0)
        return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        pp_sym_mapping *t = realloc(a->maps, cap * sizeof *t);
        if (!t) {
            a->ok = false;
            return;
        }
        a->maps = t;
        a->cap = cap;
    }
    char *path = arena_alloc(&a->s->map_arena, m.pathlen + 1, 1);
    if (!path) {
        a->ok = false;
        return;
    }
    memcpy(path, m.path, m.pathlen);
    path[m.pathlen] = '\0';
    pp_sym_mapping *out = &a->maps[a->n++];
    out->start = m.start;
    out->limit = m.limit;
    out->offset = m.offset;
    out->path = path;
    out->build_id = mapping_build_id(a->s, &m, path);
}

/* Compares by start address: the kernel lists mappings in order already,
 * this only guards the binary search. */
static int cmp_mapping(const void *x, const void *y)
{
    const pp_sym_mapping *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start;
}

static bool rebuild_snapshot(struct pp_sym_session *s, const sbuf *maps_text)
{
    arena old_arena = s->map_arena;
    pp_sym_mapping *old_maps = s->maps;
    s->map_arena.head = NULL;
    struct snap_args a = {s, NULL, 0, 0, true};
    for_each_line(maps_text, snap_line, &a);
    if (!a.ok) {
        free(a.maps);
        arena_free(&s->map_arena);
        s->map_arena = old_arena;
        return false;
    }
    if (a.n > 1)
        qsort(a.maps, a.n, sizeof *a.maps, cmp_mapping);
    free(old_maps);
    arena_free(&old_arena);
    s->maps = a.maps;
    s->nmaps = a.n;
    s->maps_valid = true;
    return true;
}

static Dwfl *build_dwfl(void)
{
    Dwfl *d = dwfl_begin(&g_callbacks);
    if (!d)
        return NULL;
    dwfl_report_begin(d);
    /* A positive result means /proc/self/maps could not be read; -1 means
     * one module could not be reported, and the others still serve. */
    int rc = dwfl_linux_proc_report(d, getpid());
    if (dwfl_report_end(d, NULL, NULL) != 0 || rc > 0) {
        dwfl_end(d);
        return NULL;
    }
    return d;
}

/* Brings the Dwfl and the mapping snapshot up to date. The loader's
 * counters are read before the maps, so a dlopen racing with this call is
 * noticed at the next one. */
static void refresh(struct pp_sym_session *s)
{
    struct dl_counts dc = dl_counts_now();
    sbuf text = {0}, all = {0}, files = {0};
    bool have_maps = read_file("/proc/self/maps", &text);
    struct sig_args sa = {&all, &files, true};
    if (have_maps)
        for_each_line(&text, sig_line, &sa);
    have_maps = have_maps && sa.ok;

    bool dwfl_stale = s->dwfl == NULL || s->dwfl_pid != getpid() || !dc.ok || !s->dl_known ||
                      dc.adds != s->dl_adds || dc.subs != s->dl_subs ||
                      (have_maps && !sbuf_eq(&files, &s->sig_files));
    bool rebuilt = false;
    if (dwfl_stale) {
        Dwfl *d = build_dwfl();
        if (d) {
            if (s->dwfl)
                dwfl_end(s->dwfl);
            cache_clear(s);
            indexes_clear(s);
            s->dwfl = d;
            rebuilt = true;
        }
        /* Record what was tried even on failure, so the cheap check in
         * pprof_symbol_name does not retry on every call. */
        s->dwfl_pid = getpid();
        s->dl_adds = dc.adds;
        s->dl_subs = dc.subs;
        s->dl_known = dc.ok;
        if (have_maps) {
            sbuf t = s->sig_files;
            s->sig_files = files;
            files = t;
        }
    }
    if (have_maps && (rebuilt || !s->maps_valid || !sbuf_eq(&all, &s->sig_all))) {
        if (rebuild_snapshot(s, &text)) {
            sbuf t = s->sig_all;
            s->sig_all = all;
            all = t;
        }
    }
    free(text.p);
    free(all.p);
    free(files.p);
}

/* ------------------------------------------------------------ resolving */

static int find_mapping(const struct pp_sym_session *s, uint64_t addr)
{
    size_t lo = 0, hi = s->nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->maps[mid].limit <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < s->nmaps && s->maps[lo].start <= addr && addr < s->maps[lo].limit)
        return (int)lo;
    return -1;
}

/* Raw name of a subprogram or inlined-subroutine DIE: the linkage name when
 * there is one (C++), else DW_AT_name, following abstract origins and
 * specifications. */
static const char *die_raw_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
    return n;
}

/* The caller's position recorded on an inlined-subroutine DIE. */
static void call_site(Dwarf_Die *inl, const char **file, int *line)
{
    Dwarf_Attribute attr;
    Dwarf_Word v;
    *file = NULL;
    *line = 0;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &v) == 0)
        *line = (int)v;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &v) == 0) {
        Dwarf_Die cu;
        Dwarf_Files *files;
        size_t nfiles;
        if (dwarf_diecu(inl, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
            v < nfiles)
            *file = dwarf_filesrc(files, v, NULL, NULL);
    }
}

static void set_frame(struct pp_sym_session *s, pp_sym_frame *f, const char *raw,
                      const char *file, int line)
{
    f->system_name = raw;
    f->function = demangle(s, raw);
    f->filename = file;
    f->line = line;
    f->entry = 0;
}

/* Functions of one compile unit by address. dwarf_getscopes walks every
 * top-level DIE of the unit on each call (60 us per address in a unit that
 * includes a few system headers) and does not look inside C++ namespaces;
 * this index is built once per unit and searched by bisection. */
static int cmp_fn_range(const void *x, const void *y)
{
    const fn_range *a = x, *b = y;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    /* Enclosing range first, so bisection lands on the innermost. */
    return a->hi > b->hi ? -1 : a->hi < b->hi;
}

typedef struct fn_vec {
    fn_range *r;
    size_t n, cap;
    bool ok;
} fn_vec;

static void collect_functions(Dwarf_Die *parent, fn_vec *v, int depth)
{
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0)
        return;
    do {
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_subprogram) {
            Dwarf_Addr base, lo, hi;
            ptrdiff_t off = 0;
            while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
                if (hi <= lo)
                    continue;
                if (v->n == v->cap) {
                    size_t cap = v->cap ? v->cap * 2 : 64;
                    fn_range *t = realloc(v->r, cap * sizeof *t);
                    if (!t) {
                        v->ok = false;
                        return;
                    }
                    v->r = t;
                    v->cap = cap;
                }
                v->r[v->n++] = (fn_range){lo, hi, child};
            }
        } else if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
                    tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
                    tag == DW_TAG_module) &&
                   depth < 32) {
            collect_functions(&child, v, depth + 1);
        }
    } while (dwarf_siblingof(&child, &child) == 0);
}

static cu_index *cuidx_get(struct pp_sym_session *s, Dwarf_Die *cudie)
{
    const void *key = cudie->addr; /* where the unit's DIE lives: unique */
    if (s->cuidx_cap) {
        size_t mask = s->cuidx_cap - 1;
        for (size_t i = hash_u64((uint64_t)(uintptr_t)key) & mask; s->cuidx[i].key;
             i = (i + 1) & mask)
            if (s->cuidx[i].key == key)
                return &s->cuidx[i];
    }
    if ((s->cuidx_count + 1) * 2 > s->cuidx_cap) {
        size_t cap = s->cuidx_cap ? s->cuidx_cap * 2 : 256;
        cu_index *t = calloc(cap, sizeof *t);
        if (!t)
            return NULL;
        for (size_t j = 0; j < s->cuidx_cap; j++) {
            if (!s->cuidx[j].key)
                continue;
            size_t i = hash_u64((uint64_t)(uintptr_t)s->cuidx[j].key) & (cap - 1);
            while (t[i].key)
                i = (i + 1) & (cap - 1);
            t[i] = s->cuidx[j];
        }
        free(s->cuidx);
        s->cuidx = t;
        s->cuidx_cap = cap;
    }
    fn_vec v = {NULL, 0, 0, true};
    collect_functions(cudie, &v, 0);
    if (!v.ok) {
        free(v.r);
        return NULL;
    }
    if (v.n > 1)
        qsort(v.r, v.n, sizeof *v.r, cmp_fn_range);
    size_t mask = s->cuidx_cap - 1;
    size_t i = hash_u64((uint64_t)(uintptr_t)key) & mask;
    while (s->cuidx[i].key)
        i = (i + 1) & mask;
    s->cuidx[i] = (cu_index){key, v.r, v.n};
    s->cuidx_count++;
    return &s->cuidx[i];
}

/* The subprogram DIE (with code) of the unit that holds pc. */
static bool function_die(struct pp_sym_session *s, Dwarf_Die *cudie, Dwarf_Addr pc,
                         Dwarf_Die *out)
{
    cu_index *ix = cuidx_get(s, cudie);
    if (!ix || ix->n == 0)
        return false;
    size_t lo = 0, hi = ix->n; /* first range with lo > pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->r[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = 0; k < 8 && lo > 0; k++, lo--) {
        if (pc < ix->r[lo - 1].hi) {
            *out = ix->r[lo - 1].die;
            return true;
        }
    }
    return false;
}

/* The inlined-subroutine DIEs inside fn that contain pc, outermost first,
 * found by descending through the scopes that contain pc. */
static int inlined_chain(Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die out[MAX_NESTING])
{
    int n = 0;
    Dwarf_Die cur = *fn;
    for (int depth = 0; depth < 256; depth++) {
        Dwarf_Die child;
        bool found = false;
        int tag = 0;
        if (dwarf_child(&cur, &child) == 0) {
            do {
                tag = dwarf_tag(&child);
                if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
                     tag == DW_TAG_try_block || tag == DW_TAG_catch_block) &&
                    dwarf_haspc(&child, pc) == 1) {
                    found = true;
                    break;
                }
            } while (dwarf_siblingof(&child, &child) == 0);
        }
        if (!found)
            break;
        if (tag == DW_TAG_inlined_subroutine) {
            if (n == MAX_NESTING) { /* keep the innermost */
                memmove(out, out + 1, (MAX_NESTING - 1) * sizeof *out);
                n--;
            }
            out[n++] = child;
        }
        cur = child;
    }
    return n;
}

/* The loader's own symbol table (exported symbols only, with their sizes)
 * names functions of objects whose file libdwfl could not open, such as a
 * library deleted since it was loaded when /proc/self/map_files is closed
 * to unprivileged processes. The name is copied: the object may be
 * unloaded before the cache is dropped. */
static const char *loader_symbol(struct pp_sym_session *s, uint64_t addr)
{
    /* dladdr1 points into the object's own tables, which another thread
     * may unmap at any moment: copy through the kernel, which fails with
     * EFAULT where a load would crash. */
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1((void *)(uintptr_t)addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !info.dli_sname ||
        !info.dli_saddr || !sym)
        return NULL;
    ElfW(Sym) copy;
    char name[512];
    struct iovec l1 = {&copy, sizeof copy}, r1 = {(void *)sym, sizeof copy};
    struct iovec l2 = {name, sizeof name - 1}, r2 = {(void *)info.dli_sname, sizeof name - 1};
    if (process_vm_readv(getpid(), &l1, 1, &r1, 1, 0) != (ssize_t)sizeof copy)
        return NULL;
    /* The name may end less than a buffer before an unmapped page: read
     * the part up to the page end first. */
    size_t to_page_end = 4096 - ((uintptr_t)info.dli_sname & 4095);
    if (to_page_end < r2.iov_len)
        r2.iov_len = l2.iov_len = to_page_end;
    ssize_t got = process_vm_readv(getpid(), &l2, 1, &r2, 1, 0);
    if (got <= 0)
        return NULL;
    name[got] = 0;
    uint64_t start = (uint64_t)(uintptr_t)info.dli_saddr;
    if (addr < start || addr - start >= copy.st_size || strlen(name) == (size_t)got)
        return NULL; /* no symbol there, or a name longer than we read */
    return arena_strdup(&s->cache_arena, name);
}

/* The compile unit that covers addr. libdw finds it through
 * .debug_aranges, which clang does not emit unless asked
 * (-gdwarf-aranges); without them the units' own address ranges are
 * looked at, one unit after another. */
static Dwarf_Die *unit_of(Dwfl_Module *mod, uint64_t addr, Dwarf_Addr *bias)
{
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
    for (Dwarf_Die *it = NULL; !cu && (it = dwfl_module_nextcu(mod, it, bias)) != NULL;)
        if (dwarf_haspc(it, addr - *bias) == 1)
            cu = it;
    return cu;
}

/* Resolves addr into frames[], innermost first; returns the count. */
static int resolve(struct pp_sym_session *s, uint64_t addr, pp_sym_frame *frames)
{
    Dwfl_Module *mod = s->dwfl ? dwfl_addrmodule(s->dwfl, addr) : NULL;
    if (!mod) {
        const char *name = loader_symbol(s, addr);
        if (!name)
            return 0;
        set_frame(s, &frames[0], name, NULL, 0);
        return 1;
    }

    uint64_t entry;
    const char *symname = symbol_at(s, mod, addr, &entry);

    const char *file = NULL;
    int line = 0;
    Dwarf_Addr bias;
    Dwarf_Die *cudie = unit_of(mod, addr, &bias);
    Dwfl_Line *dl = dwfl_module_getsrc(mod, addr);
    if (dl) {
        file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);
    } else if (cudie) { /* no .debug_aranges: the unit's own line table */
        Dwarf_Line *l = dwarf_getsrc_die(cudie, addr - bias);
        if (l && (file = dwarf_linesrc(l, NULL, NULL)) != NULL)
            dwarf_lineno(l, &line);
    }
    if (!file)
        line = 0;

    int n = 0;
    const char *outer_die_name = NULL;
    Dwarf_Die fn;
    if (cudie && function_die(s, cudie, addr - bias, &fn)) {
        outer_die_name = die_raw_name(&fn);
        Dwarf_Die inl[MAX_NESTING];
        int ninl = inlined_chain(&fn, addr - bias, inl);
        /* Innermost first; keep the innermost frames and always leave
         * room for the out-of-line function. */
        for (int i = ninl - 1; i >= 0; i--) {
            if (n < PP_SYM_MAX_INLINE - 1)
                set_frame(s, &frames[n++], die_raw_name(&inl[i]), file, line);
            call_site(&inl[i], &file, &line);
        }
    }

    const char *raw = symname ? symname : outer_die_name;
    if (raw == NULL && n == 0)
        raw = loader_symbol(s, addr);
    if (raw == NULL && file == NULL && n == 0)
        return 0;
    set_frame(s, &frames[n++], raw, file, line);
    for (int i = 0; i < n; i++) /* inlined frames are in the same physical function */
        frames[i].entry = symname ? entry : 0;
    return n;
}

/* ------------------------------------------------------------ interface */

pp_sym_session *pp_sym_begin(void)
{
    pthread_once(&g_once, sym_init_once);
    struct pp_sym_session *s = &g_sym;
    pthread_mutex_lock(&s->mu);
    if (s->cache_count > CACHE_MAX_ENTRIES)
        cache_clear(s);
    /* When /proc/self/maps cannot be read (or memory runs out) the session
     * still works, with the previous snapshot or no mappings at all, and
     * lookups fall back on the loader's symbols. */
    refresh(s);
    return s;
}

size_t pp_sym_mappings(pp_sym_session *s, const pp_sym_mapping **out)
{
    if (!s) {
        if (out)
            *out = NULL;
        return 0;
    }
    if (out)
        *out = s->maps;
    return s->nmaps;
}

void pp_sym_lookup(pp_sym_session *s, uint64_t addr, pp_sym_result *res)
{
    res->mapping = -1;
    res->nframes = 0;
    if (!s)
        return;
    res->mapping = find_mapping(s, addr);
    /* Anonymous executable memory (JIT code) has no symbols, even when it
     * was mapped into a hole of a library's address range, where libdw
     * and the loader would name the library's nearest function. */
    if (res->mapping >= 0 && s->maps[res->mapping].path[0] == '\0')
        return;
    cache_slot *c = cache_find(s, addr);
    if (!c) {
        pp_sym_frame frames[PP_SYM_MAX_INLINE];
        int n = resolve(s, addr, frames);
        pp_sym_frame *stored = NULL;
        if (n > 0) {
            stored = arena_alloc(&s->cache_arena, (size_t)n * sizeof *stored,
                                 _Alignof(pp_sym_frame));
            if (!stored) {
                /* Out of memory: answer from the stack copy, uncached. */
                memcpy(res->frames, frames, (size_t)n * sizeof *frames);
                res->nframes = n;
                return;
            }
            memcpy(stored, frames, (size_t)n * sizeof *frames);
        }
        c = cache_insert(s, addr);
        if (!c) {
            if (n > 0)
                memcpy(res->frames, frames, (size_t)n * sizeof *frames);
            res->nframes = n;
            return;
        }
        c->frames = stored;
        c->nframes = (uint32_t)n;
    }
    res->nframes = (int)c->nframes;
    if (c->nframes)
        memcpy(res->frames, c->frames, c->nframes * sizeof *c->frames);
}

void pp_sym_end(pp_sym_session *s)
{
    if (s)
        pthread_mutex_unlock(&s->mu);
}

PPROF_API int pprof_symbol_name(uint64_t addr, char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return pp_fail(PPROF_EINVAL);
    buf[0] = '\0';
    pthread_once(&g_once, sym_init_once);
    struct pp_sym_session *s = &g_sym;
    pthread_mutex_lock(&s->mu);
    /* The symbol endpoint may resolve thousands of addresses one call at a
     * time: only consult the loader's counters here and re-read the maps
     * when they moved (or no Dwfl has been tried yet). */
    struct dl_counts dc = dl_counts_now();
    if (!s->dl_known || s->dwfl_pid != getpid() || !dc.ok || dc.adds != s->dl_adds ||
        dc.subs != s->dl_subs) {
        if (s->cache_count > CACHE_MAX_ENTRIES)
            cache_clear(s);
        refresh(s);
    }
    pp_sym_result res;
    pp_sym_lookup(s, addr, &res);
    int rc = PPROF_ENOTFOUND;
    if (res.nframes > 0) {
        const pp_sym_frame *f = &res.frames[res.nframes - 1];
        const char *name = f->function ? f->function : f->system_name;
        if (name) {
            size_t n = strlen(name);
            if (n >= len)
                n = len - 1;
            memcpy(buf, name, n);
            buf[n] = '\0';
            rc = 0;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc ? pp_fail(rc) : 0;
}
