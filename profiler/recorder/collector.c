/* collector.c: drains the sample ring into the running CPU recorders.
 *
 * One collector thread runs while any CPU recorder does (in a process
 * that forbids itself new threads, it stays and waits while none does:
 * pp_collector_keep; it never drains a ring that sampling has not set
 * up, as in a forked child that has not sampled yet). Every 100 ms
 * while samples come (every 4 periods at rates under 40 Hz: 210 ms at the
 * history's 19 Hz, up to 500 ms), or as soon as the ring fills to a
 * quarter, it takes the collector lock,
 * moves every published record from the ring into each running
 * recorder's window (merged by stack and labels), and accounts samples
 * lost to a full ring as a "[lost samples]" frame. While it finds no
 * sample but its own it wakes half as often each time, down to once a
 * second: a program that idles under a continuous profiler costs it one
 * wake a second, whatever the rate (readers of an open window drain it
 * themselves). At most every 250 ms of its wakes (every 20 periods at
 * rates under 80 Hz: about a second at 19 Hz) it also arms timers for
 * threads that appeared without passing through pthread_create
 * (pp_cpu_rescan) and registers the unwind tables of newly loaded
 * objects. At a low rate each process's collector so costs it a few
 * wakes a second, which counts where a service is many processes.
 *
 * Recorders attach and detach under the same lock after a drain, so a
 * sample always lands in exactly the windows that were open when it was
 * taken (up to the drain delay); this is what makes snapshot gapless.
 * Lock order: collector lock, then the CPU registry lock.
 */
#define _GNU_SOURCE
#include "collector.h"
#include "base/base.h"
#include "cpu/cpu.h"
#include "labels/labels.h"
#include "model/model.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#define MAX_ACTIVE 256

static pp_mutex col_lock = PP_MUTEX_INIT;
static pp_cpu_window *active[MAX_ACTIVE];
static int nactive;
static int running;
static clockid_t col_clock;
static uint64_t col_ns_done;
static uint64_t lost_seen, blocked_seen;
static _Atomic int col_tid; /* the collector thread's */
/* pp_collector_keep: the thread waits on `park` while no recorder runs,
 * instead of ending (parked: it waits now). */
static int kept, parked;
static sem_t park;

void pp_collector_lock(void) { pp_mutex_lock(&col_lock); }
void pp_collector_unlock(void) { pp_mutex_unlock(&col_lock); }

/* Adds a sample of `count` periods at `hz` to every open window, with the
 * labels of its set and its span (windows differ in whether trace_id and
 * the unit of work are among them); hz 0: `ns` of CPU time not sampled,
 * counted in each window's own periods. */
static void add_to_all(const uint64_t *pcs, size_t npcs, uint64_t count, int hz, uint64_t ns,
                       const void *labels, const pp_trace_snap *trace)
{
    int at_exit = npcs && pcs[npcs - 1] == PP_PC_AT_EXIT;
    pp_trace_text text[4] = {{.heap = NULL}, {.heap = NULL}, {.heap = NULL}, {.heap = NULL}};
    pprof_label *pairs[4];
    size_t npairs[4] = {0, 0, 0, 0};
    int made[4] = {0, 0, 0, 0};
    for (int i = 0; i < nactive; i++) {
        pp_cpu_window *w = active[i];
        int t = (w->trace_id ? PP_TRACE_ID_LABEL : 0) | (w->units ? PP_TRACE_UNIT_LABEL : 0);
        if (!made[t]) {
            npairs[t] = pp_trace_labels(labels, trace, t, &text[t], &pairs[t]);
            made[t] = 1;
        }
        int64_t v[2] = {hz ? (int64_t)count : (int64_t)ns / w->period_ns, hz ? (int64_t)count * (1000000000ll / hz)
                                                                             : (int64_t)ns};
        if (hz && (hz < w->hz_min || !w->hz_min))
            w->hz_min = hz;
        if (hz > w->hz_max)
            w->hz_max = hz;
        w->ns += v[1];
        if (at_exit)
            w->at_exit_ns += v[1];
        pp_profile_add(w->profile, pcs, npcs, v, npairs[t] ? pairs[t] : NULL, npairs[t]);
    }
    for (int t = 0; t < 4; t++)
        pp_trace_text_free(&text[t]);
}

size_t pp_collector_drain_locked(void)
{
    static const pp_trace_snap no_trace;
    pp_record *rec;
    size_t n = 0;
    while ((rec = pp_ring_peek(&pp_cpu_ring))) {
        n += rec->tid != col_tid;
        PP_ASSERT(rec->npcs <= PPROF_MAX_FRAMES + 1); /* cpu/ring.h: a cell's pcs */
        add_to_all(rec->pcs, rec->npcs, rec->weight, rec->hz, 0, rec->labels, &rec->trace);
        if (rec->labels)
            pp_labels_unref(rec->labels);
        if (rec->release)
            pp_labels_unref(rec->release);
        pp_ring_pop(&pp_cpu_ring);
    }
    uint64_t lost = pp_cpu_lost_ns();
    if (lost > lost_seen) {
        uint64_t pc = PP_PC_LOST;
        add_to_all(&pc, 1, 0, 0, lost - lost_seen, NULL, &no_trace);
        lost_seen = lost;
    }
    uint64_t blocked = pp_cpu_blocked_ns();
    if (blocked > blocked_seen) {
        uint64_t pc = PP_PC_BLOCKED;
        add_to_all(&pc, 1, 0, 0, blocked - blocked_seen, NULL, &no_trace);
        blocked_seen = blocked;
    }
    return n;
}

static uint64_t thread_cpu_ns(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts))
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pprof_cpu_stats_get(pprof_cpu_stats *out)
{
    if (!out)
        return;
    pp_cpu_stats_fill(out);
    pp_mutex_lock(&col_lock);
    out->collector_ns = col_ns_done + (running ? thread_cpu_ns(col_clock) : 0);
    pp_mutex_unlock(&col_lock);
}

static void *collector_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-collector");
    pprof_labels_unref(pp_own_begin()); /* the profiler's own work, not its creator's request */
    col_tid = gettid();
    int64_t last_rescan = pp_now_ns(CLOCK_MONOTONIC), ms = 100;
    for (;;) {
        pp_mutex_lock(&col_lock);
        while (nactive == 0 && kept) { /* kept, and no CPU recorder runs: wait for one */
            parked = 1;
            pp_mutex_unlock(&col_lock);
            while (sem_wait(&park) != 0 && errno == EINTR)
                ;
            ms = 100; /* as a thread just started */
            pp_mutex_lock(&col_lock);
        }
        if (nactive == 0) { /* released (pp_collector_release), or every recorder detached: it ends */
            col_ns_done += thread_cpu_ns(col_clock);
            running = 0;
            pp_mutex_unlock(&col_lock);
            return NULL;
        }
        pp_mutex_unlock(&col_lock);
        int hz = pp_cpu_hz();
        int64_t period_ms = hz > 0 ? 1000 / hz : 1000;
        int64_t busy_ms = 4 * period_ms < 100 ? 100 : 4 * period_ms > 500 ? 500 : 4 * period_ms;
        int64_t rescan_ms = 20 * period_ms < 250 ? 250 : 20 * period_ms > 1000 ? 1000 : 20 * period_ms;
        pp_ring_wait(&pp_cpu_ring, ms);
        pp_mutex_lock(&col_lock);
        size_t n = pp_collector_drain_locked();
        int none = nactive == 0;
        pp_mutex_unlock(&col_lock);
        if (none)
            continue; /* it waits or ends, above */
        ms = n ? busy_ms : ms < 500 ? 2 * ms : 1000; /* a program that idles: one wake a second */
        pp_cpu_catch_up();
        int64_t now = pp_now_ns(CLOCK_MONOTONIC);
        if (now - last_rescan >= rescan_ms * 1000000ll) {
            last_rescan = now;
            pp_cpu_rescan();
            pp_unwind_refresh(0);
        }
    }
}

/* Wakes the collector thread if it waits (kept, no recorder running). */
static void unpark_locked(void)
{
    if (parked) {
        parked = 0;
        sem_post(&park);
    }
}

/* Starts the collector thread unless it runs. 0 or PPROF_ESYS (recorded). */
static int start_locked(void)
{
    if (running)
        return 0;
    pthread_t t; /* the profiler's own thread; the host's signals stay the host's */
    int rc = pp_spawn_detached(collector_main, NULL, &t);
    if (rc)
        return rc;
    pthread_getcpuclockid(t, &col_clock);
    running = 1;
    return 0;
}

void pp_collector_keep(void)
{
    pp_mutex_lock(&col_lock);
    if (!kept && sem_init(&park, 0, 0) == 0) {
        kept = 1;
        start_locked();
    }
    pp_mutex_unlock(&col_lock);
}

void pp_collector_release(void)
{
    pp_mutex_lock(&col_lock);
    kept = 0;
    unpark_locked();
    pp_mutex_unlock(&col_lock);
}

int pp_collector_attach_locked(pp_cpu_window *w)
{
    if (nactive == MAX_ACTIVE)
        return pp_fail(PPROF_ELIMIT);
    pp_collector_drain_locked();
    int rc = start_locked();
    if (rc)
        return rc;
    unpark_locked();
    PP_ASSERT(w->profile && w->period_ns > 0); /* collector.h: drains go to an open window */
    active[nactive++] = w;
    return 0;
}

void pp_collector_fork_prepare(void)
{
    pp_mutex_lock(&col_lock);
}

void pp_collector_fork_parent(void)
{
    pp_mutex_unlock(&col_lock);
}

void pp_collector_fork_child(void)
{
    col_lock = (pp_mutex)PP_MUTEX_INIT;
    running = 0;
    kept = parked = 0; /* the semaphore is the parent's thread's: not used here again */
    nactive = 0;
    col_ns_done = 0;
    pp_ring_reset(&pp_cpu_ring);
    lost_seen = pp_cpu_lost_ns();
    blocked_seen = pp_cpu_blocked_ns();
}

int pp_collector_rate_locked(void)
{
    int hz = 0;
    for (int i = 0; i < nactive; i++)
        if (active[i]->hz > hz)
            hz = active[i]->hz;
    return hz;
}

int pp_collector_detach_locked(pp_cpu_window *w)
{
    pp_collector_drain_locked();
    for (int i = 0; i < nactive; i++)
        if (active[i] == w) {
            active[i] = active[--nactive];
            break;
        }
    return nactive;
}
