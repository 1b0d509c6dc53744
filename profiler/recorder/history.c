/* history.c: the history, the last LIBPPROF_HISTORY seconds of CPU
 * samples (and with LIBPPROF_HISTORY_WALL=1 of wall-clock samples) kept
 * from start-up, so that a profile of the past answers at once
 * (profile?last=60, wall?last=60, pprof_history_recorder_new).
 *
 * A CPU recorder of the history's own runs from start-up at
 * LIBPPROF_HISTORY_HZ (19): a profile asked for meanwhile raises the
 * sampler's rate to its own while it runs, and the history keeps those
 * samples too. The
 * history thread ("pprof-history") cuts its window every SLICE_S seconds
 * (pp_cpu_recorder_cut, a gapless snapshot) and keeps the closed windows
 * unsymbolized, oldest first: slices that follow each other with no gap,
 * each with its exact start and duration. A wall recorder of its own, when
 * asked for, is cut at the same ticks into a second series. The oldest go
 * once the others cover LIBPPROF_HISTORY seconds, or while all of them
 * (both series) hold more than LIBPPROF_HISTORY_MB. A history recorder's write_to adds the slices that
 * overlap its span into one profile, and the open window as it stands
 * when the span reaches it (read under the collector lock, not cut, so
 * requests never make slices shorter), then symbolizes that; its
 * time_nanos and duration_nanos are the slices' exactly.
 *
 * Slow spans only (min_span): spans are timed from start-up
 * (labels/span_times.c), and a history recorder with min_span keeps only
 * the samples whose span_id label names a span that lasted that long,
 * decided from the spans' ends at the moment it is asked.
 *
 * Dumps (LIBPPROF_HISTORY_DUMP_DIR): pprof_history_dump, or a span that
 * lasted LIBPPROF_HISTORY_DUMP_SPAN_MS, sets a flag and posts the history
 * thread's semaphore (async-signal-safe: it never waits); the thread
 * writes all it keeps of each kind, symbolized, as gzipped pprof through
 * the library's encoder (base/process.h), at most one dump a second,
 * triggers in between coalesced, and keeps the last LIBPPROF_HISTORY_DUMPS.
 *
 * Memory: the windows are built by the collector thread and merged here,
 * both in the profiler's own heap; nothing is taken from the program's.
 *
 * Fork: the lock is not held across fork (a fork never waits for a merge);
 * the child resets everything it guards. A child starts a history of its
 * own, a second after the fork
 * (most children exec before), from a thread started in the fork's child
 * handler (as a tree's member starts its agent); the parent's slices stay
 * behind unreferenced in the child's copy of the own heap (freeing them
 * would copy their pages), its recorder too (the child has no collector).
 * An exec'd program reads LIBPPROF_HISTORY afresh. A process that exits or
 * enters a sandbox stops the thread before (a shutdown hook).
 */
#define _GNU_SOURCE
#include "recorder.h"
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

typedef struct slice {
    pprof_profile *raw;   /* unsymbolized, its builder open */
    int64_t start, dur;   /* Unix ns, ns */
    size_t bytes;
} slice;

/* One kind's slices and the recorder they are cut from. */
typedef struct series {
    const char *what;     /* "CPU", "wall" */
    const char *file;     /* a dump's name ends -FILE.pb.gz */
    pprof_history_kind kind;
    int (*make)(pprof_recorder **r);
    pprof_recorder *rec;  /* running; NULL: not kept */
    int (*cut)(pprof_recorder *r, pprof_profile **raw);
    int (*peek)(pprof_recorder *r, int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg), void *arg);
    slice *ring;          /* cap entries; n from head, oldest first */
    size_t head, n;
    uint64_t total, dropped;
    int64_t hz;
    char why_off[160];    /* why it is not kept, when it is not */
} series;

typedef struct history_recorder {
    pprof_recorder base;
    series *k;
    int64_t from, until;
    int64_t min_span;       /* ns; 0: every sample */
    const char *note;       /* a comment to add (a dump's), or NULL */
} history_recorder;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static sem_t wake;          /* the thread's: a trigger, or the stop */
static int cpu_hz; /* LIBPPROF_HISTORY_HZ */

static int make_cpu(pprof_recorder **r)
{
    return pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = cpu_hz}, r);
}

static int make_wall(pprof_recorder **r)
{
    return pprof_wall_recorder_new(NULL, r);
}

static series kinds[2] = {
    {.what = "CPU", .file = "cpu", .kind = PPROF_HISTORY_CPU, .make = make_cpu, .cut = pp_cpu_recorder_cut,
     .peek = pp_cpu_recorder_peek},
    {.what = "wall", .file = "wall", .kind = PPROF_HISTORY_WALL, .make = make_wall, .cut = pp_wall_recorder_cut,
     .peek = pp_wall_recorder_peek},
};
static series *const cpu = &kinds[0], *const wall = &kinds[1];
static size_t cap;
static _Atomic bool stopping;
static bool wall_on;
static int64_t keep_ns;
static uint64_t bound;

enum { DUMP_API = 1, DUMP_SPAN = 2 };
static char dump_dir[PATH_MAX]; /* "": no dumps */
static int dump_keep;
static _Atomic int dump_asked;  /* DUMP_* since the last dump */
static _Atomic uint64_t triggers, dumps, dump_failures;
static uint64_t dump_seq;       /* the history thread's */
static int64_t last_dump_ns;    /* CLOCK_MONOTONIC; the history thread's */

static slice *at(series *k, size_t i)
{
    return &k->ring[(k->head + i) % cap];
}

/* Drops k's oldest slice (mu held). */
static void drop_oldest(series *k)
{
    slice *s = at(k, 0);
    k->total -= s->bytes;
    pprof_profile_free(s->raw);
    k->head = (k->head + 1) % cap;
    k->n--;
}

/* Cuts k's open window into a new slice (mu held; the own heap entered). */
static int cut_locked(series *k)
{
    pprof_profile *raw;
    int rc = k->rec ? k->cut(k->rec, &raw) : PPROF_ESTATE;
    if (rc)
        return rc;
    if (k->n == cap)
        drop_oldest(k);
    *at(k, k->n++) = (slice){.raw = raw, .start = raw->time_nanos, .dur = raw->duration_nanos, .bytes = pp_profile_bytes(raw)};
    k->total += at(k, k->n - 1)->bytes;
    /* Keep what covers keep_ns: the oldest goes when the rest do. */
    while (k->n > 1 && at(k, k->n - 1)->start + at(k, k->n - 1)->dur - at(k, 1)->start >= keep_ns)
        drop_oldest(k);
    return 0;
}

/* While both series hold more than the bound, the oldest slice of either
 * goes (each keeps its newest; mu held). */
static void bound_locked(void)
{
    while (cpu->total + wall->total > bound) {
        series *k = cpu->n > 1 && (wall->n < 2 || at(cpu, 0)->start <= at(wall, 0)->start) ? cpu
                    : wall->n > 1 ? wall : NULL;
        if (!k)
            return;
        drop_oldest(k);
        k->dropped++;
    }
}

/* Starts k's recorder (mu held). */
static void start_locked(series *k)
{
    pprof_recorder *r = NULL;
    int rc = k->make(&r);
    if (rc == 0)
        pprof_recorder_set_symbolize(r, PPROF_SYMBOLIZE_NONE); /* its windows are cut raw */
    if (rc == 0 && (rc = pprof_recorder_start(r)) == 0) {
        k->rec = r;
        k->hz = pprof_recorder_rate(r);
        return;
    }
    snprintf(k->why_off, sizeof k->why_off, "its %s sampling could not start: %s", k->what, pprof_last_error());
    fprintf(stderr, "libpprof: no %s history is kept: %s\n", k->what, k->why_off);
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
static int dump_one(const series *k, const char *why)
{
    pprof_recorder *r = NULL;
    pprof_profile *p = NULL;
    char note[160];
    snprintf(note, sizeof note, "history dump %llu of process %d: %s", (unsigned long long)dump_seq, (int)getpid(),
             why);
    int rc = pprof_history_recorder_new(&(pprof_history_config){.kind = k->kind}, &r);
    if (rc == 0) {
        ((history_recorder *)r)->note = note;
        rc = pprof_recorder_write_to(r, &p);
    }
    pprof_recorder_free(r);
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
    int why = atomic_exchange(&dump_asked, 0);
    last_dump_ns = pp_now_ns(CLOCK_MONOTONIC);
    dump_seq++;
    const char *text = why & DUMP_SPAN ? "a span lasted LIBPPROF_HISTORY_DUMP_SPAN_MS or more"
                                       : "asked through pprof_history_dump";
    int rc = dump_one(cpu, text);
    if (rc == 0 && wall->rec)
        rc = dump_one(wall, text);
    if (rc) {
        atomic_fetch_add(&dump_failures, 1);
        fprintf(stderr, "libpprof: the history's dump %llu failed: %s\n", (unsigned long long)dump_seq,
                pprof_last_error());
    } else {
        atomic_fetch_add(&dumps, 1);
    }
    if (dump_seq > (uint64_t)dump_keep)
        for (int i = 0; i < 2; i++) {
            char old[PATH_MAX + 64];
            snprintf(old, sizeof old, "%s/libpprof-%d-%llu-%s.pb.gz", dump_dir, (int)getpid(),
                     (unsigned long long)(dump_seq - (uint64_t)dump_keep), kinds[i].file);
            unlink(old);
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
    int delay_s = (int)(intptr_t)arg;
    pthread_setname_np(pthread_self(), "pprof-history");
    int64_t next = pp_now_ns(CLOCK_MONOTONIC) + delay_s * 1000000000ll;
    while (delay_s && !atomic_load(&stopping) && pp_now_ns(CLOCK_MONOTONIC) < next)
        rest_until(next);
    pthread_mutex_lock(&mu);
    if (!atomic_load(&stopping)) {
        start_locked(cpu);
        if (wall_on)
            start_locked(wall);
    }
    bool running = cpu->rec || wall->rec;
    pthread_mutex_unlock(&mu);
    next = pp_now_ns(CLOCK_MONOTONIC) + SLICE_S * 1000000000ll;
    while (running && !atomic_load(&stopping)) {
        int64_t again = last_dump_ns + 1000000000; /* one dump a second at most */
        rest_until(atomic_load(&dump_asked) && again < next ? again : next);
        if (atomic_load(&stopping))
            break;
        int64_t now = pp_now_ns(CLOCK_MONOTONIC);
        if (now >= next) {
            pthread_mutex_lock(&mu);
            pp_own_heap_enter();
            cut_locked(cpu);
            cut_locked(wall);
            bound_locked();
            pp_own_heap_leave();
            pthread_mutex_unlock(&mu);
            next += SLICE_S * 1000000000ll;
        }
        if (atomic_load(&dump_asked) && (!last_dump_ns || now - last_dump_ns >= 1000000000))
            dump_now();
    }
    return NULL;
}

/* Before the process exits or enters a sandbox: no cut after this. */
static void stop(void)
{
    pp_span_times_alarm(0, NULL);
    atomic_store(&stopping, true);
    sem_post(&wake);
}

static void spawn(int delay_s)
{
    if (pp_spawn_detached(history_main, (void *)(intptr_t)delay_s, NULL) != 0)
        for (int i = 0; i < 2; i++)
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
    const char *dir = pp_env_text("LIBPPROF_HISTORY_DUMP_DIR", dump_dir_ok,
                                  "an absolute path of a directory this process can write to", "no dumps");
    dump_keep = pp_env_int("LIBPPROF_HISTORY_DUMPS", 10, 1, 10000);
    int dump_span_ms = pp_env_int("LIBPPROF_HISTORY_DUMP_SPAN_MS", 0, 0, 86400000);
    snprintf(wall->why_off, sizeof wall->why_off, "LIBPPROF_HISTORY_WALL=1 keeps wall-clock samples too");
    if (keep_s == 0)
        return;
    keep_ns = (int64_t)keep_s * 1000000000;
    cap = (size_t)(keep_s + SLICE_S - 1) / SLICE_S + 2;
    pp_own_heap_enter();
    cpu->ring = calloc(cap, sizeof *cpu->ring);
    wall->ring = calloc(cap, sizeof *wall->ring);
    pp_own_heap_leave();
    if (!cpu->ring || !wall->ring) {
        keep_ns = 0;
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
    mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    sem_init(&wake, 0, 0);
    atomic_store(&dump_asked, 0);
    dump_seq = 0;
    last_dump_ns = 0;
    for (int i = 0; i < 2; i++) {
        kinds[i].rec = NULL; /* the parent's: left behind, see the top */
        kinds[i].head = kinds[i].n = 0;
        kinds[i].total = kinds[i].dropped = 0;
        kinds[i].hz = 0;
    }
    if (keep_ns && !atomic_load(&stopping))
        spawn(1);
}

/* ------------------------------------------------------ history recorder */


/* A comment on what p covers, and on what it could not. */
static void describe(pprof_profile *p, const history_recorder *h, int64_t oldest)
{
    char note[320];
    time_t t = (time_t)(p->time_nanos / 1000000000);
    struct tm tm;
    char when[32] = "";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int len = snprintf(note, sizeof note, "history: %s samples from %s for %.1f s, taken at %lld Hz%s (LIBPPROF_HISTORY keeps %lld s)",
                       h->k->what, when, p->duration_nanos / 1e9, (long long)h->k->hz,
                       h->k == cpu ? " or more (while other CPU profiles ran)" : "", (long long)(keep_ns / 1000000000));
    if (h->from && h->from < oldest && len > 0 && (size_t)len < sizeof note)
        snprintf(note + len, sizeof note - (size_t)len, "; asked from %.1f s earlier than it reaches",
                 (oldest - h->from) / 1e9);
    pp_profile_add_comment(p, note);
}

typedef struct span {
    pprof_profile *p;
    const history_recorder *h;
    int64_t first, last; /* Unix ns: what the slices added cover */
    pp_table slow;       /* with min_span: the IDs of the spans that lasted that long */
    size_t nslow;
} span;

typedef struct slow_id {
    uint64_t key;
} slow_id;

static void note_slow(uint64_t id, int64_t end_ns, void *arg)
{
    (void)end_ns;
    span *sp = arg;
    sp->nslow += pp_table_add(&sp->slow, id) != NULL;
}

/* Whether sample s was taken inside one of the slow spans. */
static int in_slow_span(const pprof_sample *s, void *arg)
{
    const span *sp = arg;
    for (size_t i = 0; i < s->nlabels; i++) {
        const char *v = s->labels[i].value;
        if (strcmp(s->labels[i].key, "span_id") != 0 || strlen(v) != 16)
            continue;
        uint64_t id = 0;
        for (int k = 0; k < 16; k++) {
            int c = v[k], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                return 0;
            id = id << 4 | (uint64_t)d;
        }
        return pp_table_find(&sp->slow, id) != NULL;
    }
    return 0;
}

/* Adds a slice (or the open window) when it overlaps the span. */
static int add_slice(span *sp, const pprof_profile *raw, int64_t start, int64_t dur)
{
    const history_recorder *h = sp->h;
    if ((h->until && start > h->until) || (h->from && start + dur < h->from))
        return 0;
    if (!sp->first)
        sp->first = start;
    sp->last = start + dur;
    return h->min_span ? pp_profile_add_profile_if(sp->p, raw, in_slow_span, sp) : pp_profile_add_profile(sp->p, raw, 1);
}

static int add_open(const pprof_profile *w, int64_t dur_ns, void *arg)
{
    return w ? add_slice(arg, w, w->time_nanos, dur_ns) : 0;
}

static int history_write_to(pprof_recorder *r, pprof_profile **out)
{
    history_recorder *h = (history_recorder *)r;
    static const pprof_value_type cpu_types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    static const pprof_value_type wall_types[] = {{"samples", "count"}, {"wall", "nanoseconds"}};
    const pprof_value_type *types = h->k == cpu ? cpu_types : wall_types;
    series *k = h->k;
    span sp = {.h = h, .slow = PP_TABLE_INIT(slow_id)};
    pp_own_heap_enter();
    if (h->min_span)
        pp_span_times_each(h->min_span, note_slow, &sp);
    pthread_mutex_lock(&mu);
    int rc = k->rec ? 0
                    : pp_error_detail(PPROF_ESTATE, "no %s history is kept: %s", k->what,
                                      k->why_off[0] ? k->why_off : "not started yet");
    if (rc == 0 && !(sp.p = pp_profile_new(types, 2, types[1], k->hz ? 1000000000 / k->hz : 0)))
        rc = pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; rc == 0 && i < k->n; i++)
        rc = add_slice(&sp, at(k, i)->raw, at(k, i)->start, at(k, i)->dur);
    /* The open window, read where it stands: no cut, so requests never
     * make slices shorter. */
    if (rc == 0)
        rc = k->peek(k->rec, add_open, &sp);
    pprof_profile *p = sp.p;
    int64_t first = sp.first, last = sp.last;
    int64_t oldest = k->n ? at(k, 0)->start : 0;
    pthread_mutex_unlock(&mu);
    pp_table_free(&sp.slow);
    pp_own_heap_leave();
    if (rc) {
        pprof_profile_free(p);
        return rc;
    }
    p->time_nanos = first ? first : (h->until ? h->until : pp_now_ns(CLOCK_REALTIME));
    p->duration_nanos = last - first;
    if (h->note)
        pp_profile_add_comment(p, h->note);
    describe(p, h, oldest);
    if (h->min_span) {
        char note[200];
        snprintf(note, sizeof note, "history: only the samples of the %zu spans that lasted %lld ms or more", sp.nslow,
                 (long long)(h->min_span / 1000000));
        pp_profile_add_comment(p, note);
    }
    return pp_recorder_finish(r, p, out);
}

static const pp_recorder_ops history_ops = {.write_to = history_write_to};

PPROF_API int pprof_history_recorder_new(const pprof_history_config *cfg, pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    pprof_history_config c = cfg ? *cfg : (pprof_history_config){0};
    if (c.from_unix_ns < 0 || c.until_unix_ns < 0 || (c.until_unix_ns && c.from_unix_ns > c.until_unix_ns))
        return pp_error_detail(PPROF_EINVAL, "the span must run forward: from %lld, until %lld",
                               (long long)c.from_unix_ns, (long long)c.until_unix_ns);
    if (c.kind != PPROF_HISTORY_CPU && c.kind != PPROF_HISTORY_WALL)
        return pp_error_detail(PPROF_EINVAL, "kind must be PPROF_HISTORY_CPU or PPROF_HISTORY_WALL, not %d", (int)c.kind);
    if (!keep_ns)
        return pp_error_detail(PPROF_ENOTSUP, "no history is kept (LIBPPROF_HISTORY=SECONDS keeps one)");
    if (c.kind == PPROF_HISTORY_WALL && !wall_on)
        return pp_error_detail(PPROF_ENOTSUP, "no wall history is kept (LIBPPROF_HISTORY_WALL=1 keeps one)");
    int64_t floor = pp_span_times_floor();
    if (c.min_span_ns && floor < 0)
        return pp_error_detail(PPROF_EINVAL, "spans are not timed in this process (their memory could not be mapped)");
    if (c.min_span_ns && c.min_span_ns < floor)
        return pp_error_detail(PPROF_EINVAL, "min_span must be at least %lld ms (LIBPPROF_HISTORY_SPAN_MS: shorter spans are not timed)",
                               (long long)(floor / 1000000));
    history_recorder *h = (history_recorder *)pp_recorder_new(sizeof *h, &history_ops);
    if (!h)
        return PPROF_ENOMEM;
    h->k = c.kind == PPROF_HISTORY_WALL ? wall : cpu;
    h->from = c.from_unix_ns;
    h->until = c.until_unix_ns;
    h->min_span = c.min_span_ns;
    *out = &h->base;
    return 0;
}

/* async-signal-safe */
PPROF_API int pprof_history_dump(void)
{
    if (!keep_ns || !dump_dir[0])
        return PPROF_ENOTSUP; /* no error text: async-signal-safe */
    trigger(DUMP_API);
    return 0;
}

PPROF_API void pprof_history_stats_get(pprof_history_stats *out)
{
    if (!out)
        return;
    *out = (pprof_history_stats){0};
    pthread_mutex_lock(&mu);
    out->keep_ns = keep_ns;
    out->slices = cpu->n;
    out->bytes = cpu->total + wall->total;
    out->bound = bound;
    out->dropped = cpu->dropped + wall->dropped;
    out->hz = cpu->rec ? cpu->hz : 0;
    out->wall_hz = wall->rec ? wall->hz : 0;
    out->wall_slices = wall->n;
    out->dump_triggers = atomic_load(&triggers);
    out->dumps = atomic_load(&dumps);
    out->dump_failures = atomic_load(&dump_failures);
    out->dumps_kept = dump_dir[0] ? (uint64_t)dump_keep : 0;
    if (cpu->n) {
        out->oldest_unix_ns = at(cpu, 0)->start;
        out->kept_ns = at(cpu, cpu->n - 1)->start + at(cpu, cpu->n - 1)->dur - at(cpu, 0)->start;
    }
    pthread_mutex_unlock(&mu);
}
