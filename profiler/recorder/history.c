/* history.c: the history, the last LIBPPROF_HISTORY seconds of samples
 * kept from start-up, so that a profile of the past answers at once
 * (profile?last=60, allocs?last=60, pprof_history_recorder_new, read by
 * history_recorder.c).
 *
 * Recorders of the history's own run from start-up: CPU at
 * LIBPPROF_HISTORY_HZ (19; a profile asked for meanwhile raises the
 * sampler's rate while it runs, and the history keeps those samples too),
 * allocations when heap sampling is on, mutex and block contention (their
 * slices are empty while those are off), and wall-clock with
 * LIBPPROF_HISTORY_WALL=1. The history thread ("pprof-history") cuts
 * their windows every SLICE_S seconds (a gapless snapshot, the builder
 * left open: pp_cpu_recorder_cut, pp_recorder_cut) and keeps the closed
 * windows unsymbolized, oldest first: series of slices that follow each
 * other with no gap, each with its exact start and duration. The oldest
 * go once the others cover LIBPPROF_HISTORY seconds, or while all of them
 * (every series) hold more than LIBPPROF_HISTORY_MB.
 *
 * Dumps (LIBPPROF_HISTORY_DUMP_DIR): pprof_history_dump, a span that
 * lasted LIBPPROF_HISTORY_DUMP_SPAN_MS, or the process's CPU use or
 * resident set rising to LIBPPROF_HISTORY_DUMP_CPU or _RSS_MB (the thread
 * looks once a second) sets a flag and posts the history thread's
 * semaphore (async-signal-safe: it never waits); the thread
 * writes all it keeps of each kind, symbolized, as gzipped pprof through
 * the library's encoder (base/process.h), at most one dump a second,
 * triggers in between coalesced, and keeps the last LIBPPROF_HISTORY_DUMPS.
 * With LIBPPROF_HISTORY_DUMP_AT_EXIT=1 the exiting thread asks for a last
 * dump and waits for it.
 *
 * Memory: the windows are built by the collector thread and the history
 * thread, and merged by the history recorder, all in the profiler's own
 * heap; nothing is taken from the program's.
 *
 * Fork: the lock is not held across fork (a fork never waits for a merge);
 * the child resets everything it guards. A child starts a history of its
 * own, 50 ms after the fork (a child that execs does so before, and pays
 * no sampler), from a thread started in the fork's child
 * handler (as a tree's member starts its agent); the parent's slices stay
 * behind unreferenced in the child's copy of the own heap (freeing them
 * would copy their pages), its recorders too (the child has no collector).
 * An exec'd program reads LIBPPROF_HISTORY afresh. A process that exits or
 * enters a sandbox stops the thread before (a shutdown hook).
 */
#define _GNU_SOURCE
#include "history.h"
#include "base/base.h"
#include "labels/labels.h"
#include "model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLICE_S 5
#define FORK_DELAY_MS 50 /* a forked child's history starts this long after the fork */

pthread_mutex_t pp_history_mu = PTHREAD_MUTEX_INITIALIZER;
static sem_t wake;          /* the thread's: a trigger, or the stop */
static int cpu_hz, wall_hz; /* LIBPPROF_HISTORY_HZ, LIBPPROF_HISTORY_WALL_HZ */

/* The history's CPU and wall recorders keep the IDs of units of work. */
static int with_units(int rc, pprof_recorder **r)
{
    if (rc == 0)
        (*r)->units = 1;
    return rc;
}

static int make_cpu(pprof_recorder **r)
{
    return with_units(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = cpu_hz}, r), r);
}

static int make_wall(pprof_recorder **r)
{
    return with_units(pprof_wall_recorder_new(&(pprof_wall_config){.hz = wall_hz}, r), r);
}

static int make_allocs(pprof_recorder **r)
{
    return pp_alloc_recorder_new_deltas(r);
}

static int make_mutex(pprof_recorder **r)
{
    return pprof_mutex_recorder_new(NULL, r);
}

static int make_block(pprof_recorder **r)
{
    return pprof_block_recorder_new(NULL, r);
}

pp_series pp_history_series[PP_HISTORY_KINDS] = {
    {.what = "CPU", .file = "cpu", .kind = PPROF_HISTORY_CPU, .make = make_cpu, .cut = pp_cpu_recorder_cut,
     .peek = pp_cpu_recorder_peek},
    {.what = "wall", .file = "wall", .kind = PPROF_HISTORY_WALL, .make = make_wall, .cut = pp_wall_recorder_cut,
     .peek = pp_wall_recorder_peek},
    /* alloc_objects, alloc_space: counts; inuse_objects, inuse_space: the live heap's change */
    {.what = "allocation", .file = "allocs", .kind = PPROF_HISTORY_ALLOCS, .make = make_allocs,
     .cut = pp_recorder_cut, .peek = pp_recorder_peek, .end_values = 0xc},
    {.what = "mutex", .file = "mutex", .kind = PPROF_HISTORY_MUTEX, .make = make_mutex, .cut = pp_recorder_cut,
     .peek = pp_recorder_peek},
    {.what = "block", .file = "block", .kind = PPROF_HISTORY_BLOCK, .make = make_block, .cut = pp_recorder_cut,
     .peek = pp_recorder_peek},
};
static pp_series *const kinds = pp_history_series;
static pp_series *const cpu = &pp_history_series[PPROF_HISTORY_CPU], *const wall = &pp_history_series[PPROF_HISTORY_WALL];
size_t pp_history_cap;
static _Atomic bool stopping;
static bool wall_on;
int64_t pp_history_keep_ns;
static uint64_t bound;

enum { DUMP_API = 1, DUMP_SPAN = 2, DUMP_CPU = 4, DUMP_RSS = 8, DUMP_EXIT = 16 };
static int dump_cpu_pct, dump_rss_mb, dump_at_exit; /* LIBPPROF_HISTORY_DUMP_CPU, _RSS_MB, _AT_EXIT */
static sem_t exit_dumped;       /* the history thread's answer to DUMP_EXIT */
static _Atomic bool alive;      /* the history thread runs its loop */
static char dump_dir[PATH_MAX]; /* "": no dumps */
static int dump_keep;
static _Atomic int dump_asked;  /* DUMP_* since the last dump */
static _Atomic uint64_t triggers, dumps, dump_failures;
static uint64_t dump_seq;       /* the history thread's */
static int64_t last_dump_ns;    /* CLOCK_MONOTONIC; the history thread's */

pp_slice *pp_history_at(pp_series *k, size_t i)
{
    return &k->ring[(k->head + i) % pp_history_cap];
}

/* Whether sample s has a value other than 0. */
static int nonzero(const pprof_sample *s, void *arg)
{
    size_t n = *(const size_t *)arg;
    for (size_t i = 0; i < n; i++)
        if (s->values[i])
            return 1;
    return 0;
}

/* Adds the states' changes of slice `raw` to k's base, leaving out the
 * samples that come to 0 (objects freed since); the base stays as it was
 * when memory runs out (mu held; the own heap entered). */
static void fold_into_base(pp_series *k, const pprof_profile *raw)
{
    pprof_profile *sum = pp_profile_new_like(raw), *next = pp_profile_new_like(raw);
    int rc = sum && next ? 0 : PPROF_ENOMEM;
    if (rc == 0 && k->base)
        rc = pp_profile_add_values(sum, k->base, 1, k->end_values);
    if (rc == 0)
        rc = pp_profile_add_values(sum, raw, 1, k->end_values);
    if (rc == 0)
        rc = pp_profile_add_profile_if(next, sum, nonzero, &sum->ntypes, NULL);
    pprof_profile_free(sum);
    if (rc) {
        pprof_profile_free(next);
        return;
    }
    if (k->base)
        k->total -= pp_profile_bytes(k->base);
    pprof_profile_free(k->base);
    k->base = next;
    k->total += pp_profile_bytes(next);
}

/* Drops k's oldest slice (mu held; the own heap entered). */
static void drop_oldest(pp_series *k)
{
    pp_slice *s = pp_history_at(k, 0);
    k->total -= s->bytes;
    if (k->end_values && s->raw)
        fold_into_base(k, s->raw);
    pprof_profile_free(s->raw);
    k->head = (k->head + 1) % pp_history_cap;
    k->n--;
}

/* Cuts k's open window into a new slice (mu held; the own heap entered). */
static int cut_locked(pp_series *k)
{
    pprof_profile *raw;
    int rc = k->rec ? k->cut(k->rec, &raw) : PPROF_ESTATE;
    if (rc)
        return rc;
    if (k->n == pp_history_cap)
        drop_oldest(k);
    pp_slice s = {.raw = raw, .start = raw->time_nanos, .dur = raw->duration_nanos, .bytes = pp_profile_bytes(raw)};
    if (raw->nsamples == 0) { /* an idle spell, or a profile that is off: kept as its span only */
        pprof_profile_free(raw);
        s.raw = NULL;
        s.bytes = 0;
    }
    *pp_history_at(k, k->n++) = s;
    k->total += pp_history_at(k, k->n - 1)->bytes;
    k->rate = pprof_recorder_rate(k->rec);
    /* Keep what covers pp_history_keep_ns: the oldest goes when the rest do. */
    while (k->n > 1 && pp_history_at(k, k->n - 1)->start + pp_history_at(k, k->n - 1)->dur - pp_history_at(k, 1)->start >= pp_history_keep_ns)
        drop_oldest(k);
    return 0;
}

/* What every series holds (mu held). */
static uint64_t total_locked(void)
{
    uint64_t t = 0;
    for (int i = 0; i < PP_HISTORY_KINDS; i++)
        t += kinds[i].total;
    return t;
}

/* While the series hold more than the bound, the oldest slice of any
 * goes (each keeps its newest; mu held). */
static void bound_locked(void)
{
    while (total_locked() > bound) {
        pp_series *k = NULL;
        for (int i = 0; i < PP_HISTORY_KINDS; i++)
            if (kinds[i].n > 1 && (!k || pp_history_at(&kinds[i], 0)->start < pp_history_at(k, 0)->start))
                k = &kinds[i];
        if (!k)
            return;
        drop_oldest(k);
        k->dropped++;
    }
}

/* Starts k's recorder (mu held). Only CPU and wall-clock samples were
 * asked for: the others are kept where their profiling is on, and a
 * refusal is said on stderr for those two only. */
static void start_locked(pp_series *k)
{
    pprof_recorder *r = NULL;
    int rc = k->make(&r);
    if (rc == 0)
        pprof_recorder_set_symbolize(r, PPROF_SYMBOLIZE_NONE); /* its windows are cut raw */
    if (rc == 0 && pprof_recorder_start(r) == 0) {
        k->rec = r;
        k->rate = pprof_recorder_rate(r);
        return;
    }
    snprintf(k->why_off, sizeof k->why_off, "its %s sampling could not start: %s", k->what, pprof_last_error());
    if (k == cpu || k == wall)
        pp_say("libpprof: no %s history is kept: %s\n", k->what, k->why_off);
    pprof_recorder_free(r);
}

/* async-signal-safe */
static void trigger(int why)
{
    if (!dump_dir[0])
        return;
    atomic_fetch_add(&triggers, 1);
    if (!(atomic_fetch_or(&dump_asked, why) & why))
        sem_post(&wake); /* async-signal-safe (POSIX) */
}

/* async-signal-safe */
static void span_alarm(void)
{
    trigger(DUMP_SPAN);
}

/* Writes k's history to <dir>/libpprof-<pid>-<seq>-<kind>.pb.gz (through
 * a temporary name: a reader never sees half a file). */
static int dump_one(const pp_series *k, const char *why)
{
    pprof_profile *p = NULL;
    char note[160];
    snprintf(note, sizeof note, "history dump %llu of process %d: %s", (unsigned long long)dump_seq, (int)getpid(),
             why);
    int rc = pp_history_write(k->kind, note, &p);
    if (rc)
        return rc;
    char tmp[PATH_MAX + 64], path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/libpprof-%d-%llu-%s.pb.gz", dump_dir, (int)getpid(),
             (unsigned long long)dump_seq, k->file);
    snprintf(tmp, sizeof tmp, "%s/.libpprof-%d-%llu.tmp", dump_dir, (int)getpid(), (unsigned long long)dump_seq);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    rc = fd < 0 ? pp_error_detail(PPROF_ESYS, "cannot create %s: %s", tmp, strerror(errno))
                : pp_write_gzip_profile(p, fd);
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = pp_error_detail(PPROF_ESYS, "cannot write %s: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = pp_error_detail(PPROF_ESYS, "cannot rename to %s: %s", path, strerror(errno));
    if (rc && fd >= 0)
        unlink(tmp);
    pprof_profile_free(p);
    return rc;
}

/* A dump of every kind kept, and the oldest past LIBPPROF_HISTORY_DUMPS
 * removed (the history thread, mu not held). */
static void dump_now(void)
{
    static const char *const reasons[] = {"asked through pprof_history_dump",
                                          "a span lasted LIBPPROF_HISTORY_DUMP_SPAN_MS or more",
                                          "the process's CPU use rose to LIBPPROF_HISTORY_DUMP_CPU",
                                          "the process's resident set grew to LIBPPROF_HISTORY_DUMP_RSS_MB",
                                          "the process exits (LIBPPROF_HISTORY_DUMP_AT_EXIT)"};
    int why = atomic_exchange(&dump_asked, 0);
    last_dump_ns = pp_now_ns(CLOCK_MONOTONIC);
    dump_seq++;
    char text[400] = "";
    for (size_t i = 0, len = 0; i < sizeof reasons / sizeof *reasons && len < sizeof text; i++)
        if (why >> i & 1)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%s", len ? "; " : "", reasons[i]);
    int rc = 0;
    for (int i = 0; i < PP_HISTORY_KINDS && rc == 0; i++)
        if (i == PPROF_HISTORY_CPU || kinds[i].rec)
            rc = dump_one(&kinds[i], text);
    if (rc) {
        atomic_fetch_add(&dump_failures, 1);
        pp_say("libpprof: the history's dump %llu failed: %s\n", (unsigned long long)dump_seq, pprof_last_error());
    } else {
        atomic_fetch_add(&dumps, 1);
    }
    if (dump_seq > (uint64_t)dump_keep)
        for (int i = 0; i < PP_HISTORY_KINDS; i++) {
            char old[PATH_MAX + 64];
            snprintf(old, sizeof old, "%s/libpprof-%d-%llu-%s.pb.gz", dump_dir, (int)getpid(),
                     (unsigned long long)(dump_seq - (uint64_t)dump_keep), kinds[i].file);
            unlink(old);
        }
}

/* The resident set in bytes, or -1 when /proc cannot be read. */
static int64_t rss_bytes(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    long long pages;
    if (n <= 0)
        return -1;
    buf[n] = 0;
    return sscanf(buf, "%*s %lld", &pages) == 1 ? pages * sysconf(_SC_PAGESIZE) : -1;
}

/* Once a second with LIBPPROF_HISTORY_DUMP_CPU or _RSS_MB: a dump when the
 * process's CPU use over the last second, or its resident set, rises to
 * its threshold (not again until it has fallen below it). */
static void watch_thresholds(void)
{
    static int64_t last_wall, last_cpu;
    static bool cpu_over, rss_over;
    int64_t wall_ns = pp_now_ns(CLOCK_MONOTONIC), cpu_ns = pp_now_ns(CLOCK_PROCESS_CPUTIME_ID);
    if (dump_cpu_pct && last_wall && wall_ns > last_wall) {
        bool over = (cpu_ns - last_cpu) * 100 >= (int64_t)dump_cpu_pct * (wall_ns - last_wall);
        if (over && !cpu_over)
            trigger(DUMP_CPU);
        cpu_over = over;
    }
    last_wall = wall_ns;
    last_cpu = cpu_ns;
    int64_t rss = dump_rss_mb ? rss_bytes() : -1;
    if (rss >= 0) {
        bool over = rss >= (int64_t)dump_rss_mb << 20;
        if (over && !rss_over)
            trigger(DUMP_RSS);
        rss_over = over;
    }
}

/* Waits until `until_ns` (CLOCK_MONOTONIC), a trigger or the stop. */
static void rest_until(int64_t until_ns)
{
    struct timespec until = {until_ns / 1000000000, until_ns % 1000000000};
    while (!atomic_load(&stopping) && sem_clockwait(&wake, CLOCK_MONOTONIC, &until) != 0 && errno == EINTR)
        ;
}

static void *history_main(void *arg)
{
    int delay_ms = (int)(intptr_t)arg;
    pthread_setname_np(pthread_self(), "pprof-history");
    int64_t next = pp_now_ns(CLOCK_MONOTONIC) + delay_ms * 1000000ll;
    while (delay_ms && !atomic_load(&stopping) && pp_now_ns(CLOCK_MONOTONIC) < next)
        rest_until(next);
    pthread_mutex_lock(&pp_history_mu);
    bool running = false;
    for (int i = 0; i < PP_HISTORY_KINDS && !atomic_load(&stopping); i++) {
        if (&kinds[i] != wall || wall_on)
            start_locked(&kinds[i]);
        running |= kinds[i].rec != NULL;
    }
    pthread_mutex_unlock(&pp_history_mu);
    next = pp_now_ns(CLOCK_MONOTONIC) + SLICE_S * 1000000000ll;
    int64_t watch = dump_dir[0] && (dump_cpu_pct || dump_rss_mb) ? pp_now_ns(CLOCK_MONOTONIC) : INT64_MAX;
    atomic_store(&alive, running);
    while (running && !atomic_load(&stopping)) {
        int64_t again = last_dump_ns + 1000000000; /* one dump a second at most */
        int64_t until = watch < next ? watch : next;
        int asked = atomic_load(&dump_asked);
        rest_until(asked & DUMP_EXIT ? 0 : asked && again < until ? again : until);
        if (atomic_load(&stopping))
            break;
        int64_t now = pp_now_ns(CLOCK_MONOTONIC);
        if (atomic_load(&dump_asked) & DUMP_EXIT) { /* the exiting thread waits for it */
            dump_now();
            sem_post(&exit_dumped);
            break;
        }
        if (now >= watch) {
            watch_thresholds();
            watch = now + 1000000000;
        }
        if (now >= next) {
            pthread_mutex_lock(&pp_history_mu);
            pp_own_heap_enter();
            for (int i = 0; i < PP_HISTORY_KINDS; i++)
                cut_locked(&kinds[i]);
            bound_locked();
            pp_own_heap_leave();
            pthread_mutex_unlock(&pp_history_mu);
            next += SLICE_S * 1000000000ll;
        }
        if (atomic_load(&dump_asked) && (!last_dump_ns || now - last_dump_ns >= 1000000000))
            dump_now();
    }
    atomic_store(&alive, false);
    return NULL;
}

/* Before the process exits or enters a sandbox: no cut after this. At
 * exit with LIBPPROF_HISTORY_DUMP_AT_EXIT=1, the history thread dumps
 * first, the exiting thread waiting for it (10 s at most). */
static void stop(void)
{
    pp_span_times_alarm(0, NULL);
    if (dump_at_exit && dump_dir[0] && !pp_sandboxed() && atomic_load(&alive)) {
        atomic_fetch_add(&triggers, 1);
        atomic_fetch_or(&dump_asked, DUMP_EXIT);
        sem_post(&wake);
        int64_t t = pp_now_ns(CLOCK_MONOTONIC) + 10 * 1000000000ll;
        struct timespec until = {t / 1000000000, t % 1000000000};
        while (sem_clockwait(&exit_dumped, CLOCK_MONOTONIC, &until) != 0 && errno == EINTR)
            ;
    }
    atomic_store(&stopping, true);
    sem_post(&wake);
}

static void spawn(int delay_ms)
{
    if (pp_spawn_detached(history_main, (void *)(intptr_t)delay_ms, NULL) != 0)
        for (int i = 0; i < PP_HISTORY_KINDS; i++)
            snprintf(kinds[i].why_off, sizeof kinds[i].why_off, "its thread could not start");
}

/* An absolute path of a directory libpprof may write to. */
static int dump_dir_ok(const char *v)
{
    return v[0] == '/' && strlen(v) < PATH_MAX && access(v, W_OK | X_OK) == 0;
}

void pp_history_init(void)
{
    sem_init(&wake, 0, 0);
    int keep_s = pp_env_int("LIBPPROF_HISTORY", 0, 0, 86400);
    bound = (uint64_t)pp_env_int("LIBPPROF_HISTORY_MB", 16, 1, 65536) << 20;
    int span_ms = pp_env_int("LIBPPROF_HISTORY_SPAN_MS", 100, 1, 3600000);
    wall_on = pp_env_int("LIBPPROF_HISTORY_WALL", 0, 0, 1);
    cpu_hz = pp_env_int("LIBPPROF_HISTORY_HZ", 19, 1, PPROF_CPU_MAX_HZ);
    wall_hz = pp_env_int("LIBPPROF_HISTORY_WALL_HZ", PPROF_WALL_DEFAULT_HZ, 1, PPROF_WALL_MAX_HZ);
    const char *dir = pp_env_text("LIBPPROF_HISTORY_DUMP_DIR", dump_dir_ok,
                                  "an absolute path of a directory this process can write to", "no dumps");
    dump_keep = pp_env_int("LIBPPROF_HISTORY_DUMPS", 10, 1, 10000);
    int dump_span_ms = pp_env_int("LIBPPROF_HISTORY_DUMP_SPAN_MS", 0, 0, 86400000);
    dump_cpu_pct = pp_env_int("LIBPPROF_HISTORY_DUMP_CPU", 0, 0, 100000);
    dump_rss_mb = pp_env_int("LIBPPROF_HISTORY_DUMP_RSS_MB", 0, 0, 1 << 30);
    dump_at_exit = pp_env_int("LIBPPROF_HISTORY_DUMP_AT_EXIT", 0, 0, 1);
    sem_init(&exit_dumped, 0, 0);
    snprintf(wall->why_off, sizeof wall->why_off, "LIBPPROF_HISTORY_WALL=1 keeps wall-clock samples too");
    if (keep_s == 0)
        return;
    pp_history_keep_ns = (int64_t)keep_s * 1000000000;
    pp_history_cap = (size_t)(keep_s + SLICE_S - 1) / SLICE_S + 2;
    bool rings = true;
    pp_own_heap_enter();
    for (int i = 0; i < PP_HISTORY_KINDS; i++)
        rings &= (kinds[i].ring = calloc(pp_history_cap, sizeof *kinds[i].ring)) != NULL;
    pp_own_heap_leave();
    if (!rings) {
        pp_history_keep_ns = 0;
        return;
    }
    if (dir)
        snprintf(dump_dir, sizeof dump_dir, "%s", dir);
    pp_shutdown_hook_add(stop);
    /* spans are timed from now: min_span_ms filters the history by them */
    pp_span_times_start((int64_t)span_ms * 1000000); /* else min_span is refused */
    if (dump_dir[0] && dump_span_ms) {
        pp_span_times_alarm((int64_t)(dump_span_ms < span_ms ? span_ms : dump_span_ms) * 1000000, span_alarm);
    }
    spawn(0);
}

void pp_history_fork_child(void)
{
    pp_history_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    sem_init(&wake, 0, 0);
    sem_init(&exit_dumped, 0, 0);
    atomic_store(&alive, false);
    atomic_store(&dump_asked, 0);
    dump_seq = 0;
    last_dump_ns = 0;
    for (int i = 0; i < PP_HISTORY_KINDS; i++) {
        kinds[i].rec = NULL; /* the parent's: left behind, see the top */
        kinds[i].base = NULL;
        kinds[i].head = kinds[i].n = 0;
        kinds[i].total = kinds[i].dropped = 0;
        kinds[i].rate = 0;
    }
    if (pp_history_keep_ns && !atomic_load(&stopping))
        spawn(FORK_DELAY_MS);
}

/* async-signal-safe */
PPROF_API int pprof_history_dump(void)
{
    if (!pp_history_keep_ns || !dump_dir[0])
        return PPROF_ENOTSUP; /* no error text: async-signal-safe */
    trigger(DUMP_API);
    return 0;
}

PPROF_API void pprof_history_stats_get(pprof_history_stats *out)
{
    if (!out)
        return;
    *out = (pprof_history_stats){0};
    pthread_mutex_lock(&pp_history_mu);
    out->keep_ns = pp_history_keep_ns;
    out->slices = cpu->n;
    out->bytes = total_locked();
    out->bound = bound;
    for (int i = 0; i < PP_HISTORY_KINDS; i++) {
        out->dropped += kinds[i].dropped;
        out->kinds |= kinds[i].rec ? 1u << i : 0;
    }
    out->hz = cpu->rec ? cpu->rate : 0;
    out->wall_hz = wall->rec ? wall->rate : 0;
    out->wall_slices = wall->n;
    out->dump_triggers = atomic_load(&triggers);
    out->dumps = atomic_load(&dumps);
    out->dump_failures = atomic_load(&dump_failures);
    out->dumps_kept = dump_dir[0] ? (uint64_t)dump_keep : 0;
    if (cpu->n) {
        out->oldest_unix_ns = pp_history_at(cpu, 0)->start;
        out->kept_ns = pp_history_at(cpu, cpu->n - 1)->start + pp_history_at(cpu, cpu->n - 1)->dur - pp_history_at(cpu, 0)->start;
    }
    pthread_mutex_unlock(&pp_history_mu);
}
