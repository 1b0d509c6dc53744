/* symbolize.c: addresses of this process -> mappings, functions, files, lines.
 *
 * This file holds the folder's design, the one session and its interface;
 * the parts it is made of are in sym_*.c (see sym_internal.h).
 *
 * What it is for
 *   Profiles carry raw addresses. Before a profile is encoded, the recorder
 *   asks the symbolizer which executable mapping holds each address (pprof's
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
 *   Debug files are searched on the machine first (see find_debuginfo),
 *   then in the stores of fetched files; when fetching is on, a missing
 *   one is fetched from debuginfod on the profiler's own thread
 *   (sym_fetch.c), never while the lock is held, and the Dwfl is built
 *   again once it arrives. libdwfl's standard search is not used: it
 *   would load elfutils' debuginfod client, and with it libcurl, into
 *   every host process, and download files while the lock is held.
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
 *   - Results are cached per address in a pp_table (base/hash.h); the
 *     cache (and the arena holding its frames and demangled names) is dropped
 *     when the Dwfl it points into is replaced, or in pp_sym_begin when its
 *     memory has passed LIBPPROF_SYMBOLIZER_CACHE_MB (sym_cache.c).
 *   - Debug information is read lazily: a compile unit's function index
 *     is built when an address first falls in it, from the unit's
 *     top-level and namespace entries only (classes are skipped unless
 *     that finds nothing, see sym_resolve.c); line tables per unit by
 *     libdw. The pages of the mapped files a batch read are given back
 *     when it ends (sym_pages.c); the tables built from them stay until
 *     the symbolizer has been idle (sym_idle.c). The per-module symbol
 *     arrays and per-unit function indexes live exactly as long as their
 *     Dwfl. Mapping indexes are not cached: they are found by binary
 *     search in the current mapping snapshot, which can change
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
#include "sym_internal.h"

static struct pp_sym_session g_sym = SESSION_INIT;
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static pprof_symbolizer_stats published;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
cxa_demangle_fn pp_sym_demangler;

/* A forked child starts with an empty symbolizer: the parent's may have
 * been mid-update in another thread. Its memory is left behind rather than
 * freed (the child usually execs). Taking the lock around fork instead
 * would stall the host's fork for as long as a symbolization runs. */
static void atfork_child(void)
{
    g_sym = (struct pp_sym_session)SESSION_INIT;
    stats_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    published = (pprof_symbolizer_stats){0};
    pp_sym_idle_fork_child();
}

void pp_sym_release(struct pp_sym_session *s)
{
    pp_sym_cache_clear(s);
    pp_sym_indexes_clear(s);
    if (s->dwfl)
        dwfl_end(s->dwfl);
    s->dwfl = NULL; /* the next refresh builds one */
}

static void sym_init_once(void)
{
    /* Present only when the program links libstdc++ (or another C++
     * runtime); C programs have no mangled names to show. */
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    pp_sym_demangler = (cxa_demangle_fn)f;
    elf_version(EV_CURRENT);
    pp_sym_cache_init();
    pp_atfork(NULL, NULL, atfork_child);
}

/* A debug file fetched since the Dwfl was built: libdwfl keeps what it
 * found for a module (nothing, for one whose file was on its way), so the
 * next session builds everything again and finds the file. */
static void forget_if_fetched(struct pp_sym_session *s)
{
    unsigned gen = pp_sym_fetch_generation();
    if (gen == s->fetch_gen)
        return;
    s->fetch_gen = gen;
    pp_sym_release(s);
}

/* ------------------------------------------------------------ interface */

pp_sym_session *pp_sym_begin(void)
{
    pp_own_heap_enter(); /* until pp_sym_end: libdw's allocations are the profiler's own */
    pthread_once(&g_once, sym_init_once);
    struct pp_sym_session *s = &g_sym;
    pthread_mutex_lock(&s->mu);
    forget_if_fetched(s);
    pp_sym_cache_keep_budget(s);
    /* When /proc/self/maps cannot be read (or memory runs out) the session
     * still works, with the previous snapshot or no mappings at all, and
     * lookups fall back on the loader's symbols. */
    pp_sym_refresh(s);
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
    pp_sym_lookup_how(s, addr, 0, res);
}

int pp_sym_mapping_of(pp_sym_session *s, uint64_t addr)
{
    return s ? pp_sym_find_mapping(s, addr) : -1;
}

/* Function-only answers are cached apart: addresses are below 2^63. */
#define FUNCTIONS_ONLY_KEY (1ull << 63)

void pp_sym_lookup_how(pp_sym_session *s, uint64_t addr, int functions_only, pp_sym_result *res)
{
    res->mapping = -1;
    res->nframes = 0;
    if (!s)
        return;
    res->mapping = pp_sym_find_mapping(s, addr);
    /* Anonymous executable memory (JIT code) has no symbols, even when it
     * was mapped into a hole of a library's address range, where libdw
     * and the loader would name the library's nearest function. */
    if (res->mapping >= 0 && s->maps[res->mapping].path[0] == '\0')
        return;
    uint64_t key = functions_only ? addr | FUNCTIONS_ONLY_KEY : addr;
    cache_slot *c = pp_table_find(&s->cache, key);
    if (!c) {
        pp_sym_frame frames[PP_SYM_MAX_INLINE];
        int n = pp_sym_resolve(s, addr, functions_only, frames);
        PP_ASSERT(n >= 0 && n <= PP_SYM_MAX_INLINE);
        pp_sym_frame *stored = NULL;
        if (n > 0) {
            stored = pp_arena_alloc_aligned(&s->cache_arena, (size_t)n * sizeof *stored,
                                            _Alignof(pp_sym_frame));
            if (!stored) {
                /* Out of memory: answer from the stack copy, uncached. */
                memcpy(res->frames, frames, (size_t)n * sizeof *frames);
                res->nframes = n;
                return;
            }
            memcpy(stored, frames, (size_t)n * sizeof *frames);
        }
        c = pp_table_add(&s->cache, key);
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
    if (!s)
        return;
    s->n_sessions++;
    s->n_page_releases += pp_sym_pages_release(s);
    pp_sym_publish(s);
    pp_sym_idle_note(s);
    pthread_mutex_unlock(&s->mu);
    pp_own_heap_leave();
}

void pp_sym_publish(struct pp_sym_session *s)
{
    pprof_symbolizer_stats st = {0};
    pp_sym_cache_stats(s, &st);
    st.sessions = s->n_sessions;
    st.page_releases = s->n_page_releases;
    st.idle_releases = s->n_idle_releases;
    st.loaded = s->dwfl != NULL;
    pp_sym_fetch_stats(&st);
    pthread_mutex_lock(&stats_mu);
    published = st;
    pthread_mutex_unlock(&stats_mu);
}

PPROF_API void pprof_symbolizer_stats_get(pprof_symbolizer_stats *out)
{
    if (!out)
        return;
    pthread_once(&g_once, sym_init_once);
    pthread_mutex_lock(&stats_mu);
    *out = published;
    out->cache_budget = pp_sym_cache_budget(); /* also before the first batch */
    pthread_mutex_unlock(&stats_mu);
    out->debuginfo_pending = 0;
    pp_sym_fetch_stats(out); /* fetches go on between batches */
}

int pp_sym_fetch_note_of(pp_sym_session *s, int mapping, char *out, size_t n)
{
    if (!s || mapping < 0 || (size_t)mapping >= s->nmaps)
        return 0;
    return pp_sym_fetch_note(s->maps[mapping].build_id, out, n);
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
    struct dl_counts dc = pp_sym_dl_counts_now();
    if (!s->dwfl || !s->dl_known || s->dwfl_pid != getpid() || !dc.ok || dc.adds != s->dl_adds ||
        dc.subs != s->dl_subs) {
        pp_sym_cache_keep_budget(s);
        pp_sym_refresh(s);
    }
    forget_if_fetched(s);
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
    s->n_sessions++;
    pp_sym_publish(s);
    pp_sym_idle_note(s);
    pthread_mutex_unlock(&s->mu);
    return rc ? pp_fail(rc) : 0;
}
