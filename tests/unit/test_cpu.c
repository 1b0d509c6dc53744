/* test_cpu.c: CPU sampling accuracy, per-thread timers, rates and snapshots.
 * test-labels: plain-only timing
 *
 * Two threads burn CPU in differently named functions in a 3:1 ratio. The
 * profile must show that ratio within 10% (counted by the threads' root
 * functions: on a loaded machine a thread can end before its first
 * signal, and then its time is on the function it was started with), and its weighted sample count
 * must be within 10% of the process's CPU time x rate, at 100 Hz and at
 * 1000 Hz (where the 250 Hz kernel tick makes most of the weight arrive as
 * timer overruns): >= 2,000 samples at 1000 Hz, >= 500 at 100 Hz. The
 * timers count each thread's own CPU time, so a count is within a sample
 * or two of CPU time x rate (not Poisson: 1650:550 for 22 s of CPU at 100
 * Hz, 450:150 for 6 s), and the 10% bands hold with wide margins; the
 * runs are short in CPU time so that a loaded machine, which stretches CPU
 * time into wall time, does not run the test past its limit. Also: one timer per thread
 * while profiling (a thread started mid-profile included) and none after;
 * recorders at different rates beside each other (rates_beside); snapshots that lose nothing; exact
 * counts for threads crowded off the CPUs, ended before the window
 * (tail_under_load) or running at its end (window_end_under_load).
 * Runs in the plain build: sanitizers change signal delivery.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "../burn.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The profile tells these two apart by name; their factors differ so that
 * they stay two symbols. */
__attribute__((noinline)) static void burn_three_parts(double s) { burn_cpu(s, 1.0000001); }
__attribute__((noinline)) static void burn_one_part(double s) { burn_cpu(s, 1.0000002); }

static void *run_three(void *arg) { burn_three_parts(*(double *)arg * 3); return NULL; }
static void *run_one(void *arg) { burn_one_part(*(double *)arg); return NULL; }

/* Value v (0: samples, 1: ns) summed over the samples whose stack
 * mentions `fn` anywhere (*count) and over all (*total). */
static void sum_value_for(const pprof_profile *p, const char *fn, int v, int64_t *count, int64_t *total)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    *count = 0;
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        *total += s[i].values[v];
        for (size_t k = 0; k < s[i].nlocations; k++) {
            const pprof_location *l = s[i].locations[k];
            int hit = 0;
            for (size_t j = 0; j < l->nlines; j++)
                hit |= strcmp(l->lines[j].function, fn) == 0;
            if (hit) {
                *count += s[i].values[v];
                break;
            }
        }
    }
}

/* The samples of `fn` (*count) and of all (*total). */
static void sum_for(const pprof_profile *p, const char *fn, int64_t *count, int64_t *total)
{
    sum_value_for(p, fn, 0, count, total);
}

static int stacks_contain(const pprof_profile *p, const char *needle)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s[i].nlocations; k++)
            for (size_t j = 0; j < s[i].locations[k]->nlines; j++)
                if (strstr(s[i].locations[k]->lines[j].function, needle))
                    return 1;
    return 0;
}

static void accuracy(int hz, double unit_s)
{
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = hz}, &r) == 0);
    pprof_cpu_stats st0, st1;
    pprof_cpu_stats_get(&st0);
    double cpu0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    CHECK(pprof_recorder_start(r) == 0);
    pthread_t a, b;
    pthread_create(&a, NULL, run_three, &unit_s);
    pthread_create(&b, NULL, run_one, &unit_s);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    double cpu = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    int64_t three, one, total;
    sum_for(p, "run_three", &three, &total); /* the threads' roots: one that had no signal has its time there */
    sum_for(p, "run_one", &one, &total);
    double ratio = one ? (double)three / (double)one : 0;
    double expect = cpu * hz;
    pprof_cpu_stats_get(&st1);
    printf("%d Hz: run_three %lld, run_one %lld, ratio %.3f; total %lld vs cpu %.3f s x %d = %.0f; "
           "signals %llu, lost %llu, blocked %llu\n",
           hz, (long long)three, (long long)one, ratio, (long long)total, cpu, hz, expect,
           (unsigned long long)(st1.signals - st0.signals), (unsigned long long)(st1.lost - st0.lost),
           (unsigned long long)(st1.blocked - st0.blocked));
    CHECKF(total >= (hz >= 1000 ? 2000 : 500), "only %lld samples", (long long)total);
    CHECKF(ratio > 2.7 && ratio < 3.3, "ratio %.3f", ratio);
    CHECKF(total > 0.9 * expect && total < 1.1 * expect, "total %lld, expected %.0f", (long long)total, expect);
    CHECK(!stacks_contain(p, "on_signal") && !stacks_contain(p, "__restore_rt"));
    CHECK(stacks_contain(p, "run_three"));  /* callers are there, not just leaves */
    size_t nt;
    const pprof_value_type *t = pprof_profile_sample_types(p, &nt);
    CHECK(nt == 2 && !strcmp(t[0].type, "samples") && !strcmp(t[1].unit, "nanoseconds"));
    CHECK(pprof_profile_period(p) == 1000000000 / hz);
    CHECK(pprof_profile_duration_nanos(p) > 0);
    pprof_profile_free(p);
    pprof_recorder_free(r);
}

/* Our timers in /proc/self/timers, counted by target thread. */
static int count_timers(int tid)
{
    FILE *f = fopen("/proc/self/timers", "r");
    if (!f)
        return -1;
    char line[256];
    int n = 0, ours = 0;
    while (fgets(line, sizeof line, f)) {
        int t;
        if (!strncmp(line, "signal:", 7))
            ours = atoi(line + 7) == 16; /* SIGSTKFLT, the profiling signal */
        else if (ours && sscanf(line, "notify: signal/tid.%d", &t) == 1 && (tid == 0 || t == tid))
            n++;
    }
    fclose(f);
    return n;
}

static int count_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Timers come and go asynchronously (thread start, exit, rescan): waits up
 * to 2 s for count_timers(tid) to reach `want`, and returns the last count. */
static int settle_timers(int tid, int want)
{
    int n = -1;
    for (int i = 0; i < 200 && (n = count_timers(tid)) != want; i++)
        usleep(10000);
    return n;
}

static _Atomic int quit;
static _Atomic int late_tid;

static void *idle_thread(void *arg)
{
    (void)arg;
    atomic_store(&late_tid, gettid());
    while (!atomic_load(&quit))
        usleep(1000);
    return NULL;
}

static void timers_per_thread(void)
{
    pthread_t early;
    pthread_create(&early, NULL, idle_thread, NULL);
    while (!atomic_load(&late_tid))
        usleep(100);
    atomic_store(&late_tid, 0);
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(NULL, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    usleep(50 * 1000);
    int main_timers = settle_timers(gettid(), 1);
    CHECKF(main_timers == 1, "main thread has %d timers", main_timers);
    pthread_t late;
    pthread_create(&late, NULL, idle_thread, NULL);
    while (!atomic_load(&late_tid))
        usleep(100);
    int lt = settle_timers(atomic_load(&late_tid), 1);
    CHECKF(lt == 1, "thread started mid-profile has %d timers", lt);
    int threads = count_tasks();
    int all = settle_timers(0, threads);
    CHECKF(all == threads && all >= 4, "%d timers for %d threads", all, threads);
    atomic_store(&quit, 1);
    pthread_join(late, NULL);
    pthread_join(early, NULL);
    int after = settle_timers(0, threads - 2);
    CHECKF(after == threads - 2, "after two threads exited: %d timers for %d threads", after, threads - 2);
    CHECK(pprof_recorder_stop(r, NULL) == 0);
    CHECKF(count_timers(0) == 0, "%d timers left after stop", count_timers(0));
    pprof_recorder_free(r);
}

__attribute__((noinline)) static void deep_burn(int depth)
{
    if (depth > 0) {
        deep_burn(depth - 1);
        __asm__ volatile("" ::: "memory"); /* not a tail call */
        return;
    }
    burn_one_part(0.3);
}

/* Burns 100 frames deep until the process has taken 20 signals (on a
 * loaded machine 0.3 s of CPU can pass without one), at most 3 s of CPU;
 * *arg gets the thread's CPU time. */
static void *run_deep(void *arg)
{
    pprof_cpu_stats st0, st;
    pprof_cpu_stats_get(&st0);
    double end = burn_thread_cpu_s() + 3;
    do {
        deep_burn(100);
        pprof_cpu_stats_get(&st);
    } while (st.signals - st0.signals < 20 && burn_thread_cpu_s() < end);
    *(double *)arg = burn_thread_cpu_s();
    return NULL;
}

/* Runs fn on a thread of its own and waits for it. The burns that a check
 * counts exactly run on threads that end before the window does: such a
 * thread's time after its last signal is counted when it exits, and on a
 * loaded machine signals can be hundreds of milliseconds of CPU apart. */
static void on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fn, arg) == 0);
    pthread_join(t, NULL);
}

/* A 100-deep stack with max_frames 16: every sample has 16 real frames and
 * ends in "[truncated]". */
static void truncation(void)
{
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000, .max_frames = 16}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    double deep_cpu = 0;
    on_thread(run_deep, &deep_cpu);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    size_t n, deep = 0, bad = 0;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    for (size_t i = 0; i < n; i++) {
        const pprof_location *last = s[i].locations[s[i].nlocations - 1];
        int truncated = !strcmp(last->lines[0].function, "[truncated]");
        if (truncated) {
            deep += (size_t)s[i].values[0];
            if (s[i].nlocations != 17)
                bad++;
        }
    }
    CHECKF(deep >= 0.9 * deep_cpu * 1000 && bad == 0, "%zu truncated samples for %.0f ms of CPU, %zu of the wrong depth",
           deep, deep_cpu * 1000, bad);
    pprof_cpu_stats st;
    pprof_cpu_stats_get(&st);
    CHECK(st.truncated > 0);
    pprof_profile_free(p);
    pprof_recorder_free(r);
}

/* Threads that share the CPUs with many others get their timer signals
 * rarely (the kernel checks CPU timers at the ticks that find them
 * running). A thread's time after its last signal is counted when it
 * exits, so each burner's samples are its own CPU time x rate, to a sample
 * or two, however few its signals were. The crowd makes the load itself:
 * eight runnable threads on this machine's two cores. */
__attribute__((noinline)) static void burn_crowded(double s) { burn_cpu(s, 1.0000003); }

static _Atomic int crowd_quit;
static _Atomic int64_t crowded_cpu_us;

static void *crowd(void *unused)
{
    (void)unused;
    while (!atomic_load(&crowd_quit))
        burn_sink += 1;
    return NULL;
}

enum { CROWD = 6 };

static void crowd_begin(pthread_t c[CROWD])
{
    atomic_store(&crowd_quit, 0);
    for (int i = 0; i < CROWD; i++)
        pthread_create(&c[i], NULL, crowd, NULL);
}

/* Ends the crowd, and with it every thread that burns until crowd_quit. */
static void crowd_end(pthread_t c[CROWD])
{
    atomic_store(&crowd_quit, 1);
    for (int i = 0; i < CROWD; i++)
        pthread_join(c[i], NULL);
}

static void *run_crowded(void *arg)
{
    burn_crowded(*(double *)arg);
    atomic_fetch_add(&crowded_cpu_us, (int64_t)(burn_thread_cpu_s() * 1e6));
    return NULL;
}

static void tail_under_load(void)
{
    enum { BURNERS = 4 };
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    pprof_cpu_stats st0, st1;
    pprof_cpu_stats_get(&st0);
    pthread_t c[CROWD], b[BURNERS];
    crowd_begin(c);
    double each = 0.15;
    for (int i = 0; i < BURNERS; i++)
        pthread_create(&b[i], NULL, run_crowded, &each);
    for (int i = 0; i < BURNERS; i++)
        pthread_join(b[i], NULL);
    crowd_end(c);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    pprof_cpu_stats_get(&st1);
    int64_t got, total;
    sum_for(p, "run_crowded", &got, &total);
    double expect = atomic_load(&crowded_cpu_us) / 1e3;
    printf("crowded: run_crowded %lld samples, its threads' CPU x rate %.1f; signals in all %llu\n",
           (long long)got, expect, (unsigned long long)(st1.signals - st0.signals));
    CHECKF(got >= expect - 2 * BURNERS && got <= expect + BURNERS, "%lld samples for %.1f ms of CPU",
           (long long)got, expect);
    pprof_profile_free(p);
    pprof_recorder_free(r);
}

/* The same crowd, and a window that ends while threads burn: the main
 * thread's time since its last signal (it stops the recorder) and that of
 * the threads still running go into the window that closes, so its counts
 * are each one's CPU time x rate, to a sample or two. The kernel can leave
 * the main thread without a signal for all of its burn (catch-up signals
 * then sample it), and the first sample in the burn also weighs the CPU
 * the main thread used in the window before it. */
__attribute__((noinline)) static void burn_main_part(double s) { burn_cpu(s, 1.0000004); }
__attribute__((noinline)) static void burn_until_quit(void)
{
    while (!atomic_load(&crowd_quit))
        burn_cpu(0.001, 1.0000005);
}

static void *run_until_quit(void *unused)
{
    (void)unused;
    burn_until_quit();
    return NULL;
}

static double cpu_of(pthread_t t) /* s */
{
    clockid_t c;
    return pthread_getcpuclockid(t, &c) == 0 ? cpu_s(c) : 0;
}

static void window_end_under_load(void)
{
    enum { LIVE = 2 };
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) == 0);
    pprof_cpu_stats st0, st1;
    pprof_cpu_stats_get(&st0);
    double w0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    CHECK(pprof_recorder_start(r) == 0);
    pthread_t c[CROWD], l[LIVE];
    crowd_begin(c);
    for (int i = 0; i < LIVE; i++)
        pthread_create(&l[i], NULL, run_until_quit, NULL);
    double m0 = cpu_s(CLOCK_THREAD_CPUTIME_ID), t0 = cpu_s(CLOCK_MONOTONIC);
    volatile double main_s = 0.15; /* not a constant the compiler could fold into a clone */
    burn_main_part(main_s);
    double main_ms = (cpu_s(CLOCK_THREAD_CPUTIME_ID) - m0) * 1e3, wall_ms = (cpu_s(CLOCK_MONOTONIC) - t0) * 1e3;
    double before = 0, after = 0;
    for (int i = 0; i < LIVE; i++)
        before += cpu_of(l[i]) * 1e3;
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    double window_ms = (cpu_s(CLOCK_THREAD_CPUTIME_ID) - w0) * 1e3;
    pprof_cpu_stats_get(&st1);
    for (int i = 0; i < LIVE; i++)
        after += cpu_of(l[i]) * 1e3;
    crowd_end(c);
    for (int i = 0; i < LIVE; i++)
        pthread_join(l[i], NULL);
    int64_t main_n, live_n, total;
    sum_for(p, "burn_main_part", &main_n, &total);
    sum_for(p, "burn_until_quit", &live_n, &total);
    printf("window end: burn_main_part %lld samples for %.1f ms of CPU (%.1f ms in the window); burn_until_quit "
           "%lld for %.1f to %.1f ms\n",
           (long long)main_n, main_ms, window_ms, (long long)live_n, before, after);
    CHECKF(main_n >= main_ms - 2 && main_n <= window_ms + 3, "main thread: %lld samples for %.1f ms (%.1f in all)",
           (long long)main_n, main_ms, window_ms);
    /* Crowded this much, the kernel checks a thread's timer a few times a
     * second of wall time, and running threads fall 8 ms of CPU behind. */
    uint64_t caught = st1.catch_ups - st0.catch_ups;
    printf("window end: the main thread's burn took %.0f ms for %.0f ms of CPU; %llu catch-up signals\n", wall_ms,
           main_ms, (unsigned long long)caught);
    if (wall_ms > 3 * main_ms)
        CHECKF(caught > 0, "no catch-up signal in %.0f ms of a crowded window", wall_ms);
    CHECKF(live_n >= before - 2 * LIVE && live_n <= after + LIVE, "running threads: %lld samples for %.1f-%.1f ms",
           (long long)live_n, before, after);
    pprof_profile_free(p);
    pprof_recorder_free(r);
}

static void rates_and_snapshots(void)
{
    pprof_recorder *a, *b, *c, *d;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 250}, &a) == 0);
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 500}, &b) == 0);
    CHECK(pprof_cpu_recorder_new(NULL, &c) == 0);
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 250}, &d) == 0);
    CHECK(pprof_recorder_start(c) == 0); /* c snapshots; started first, stopped last */
    int rate = pprof_recorder_rate(c);
    CHECK(rate == 100);
    CHECK(pprof_recorder_stop(c, NULL) == 0);
    CHECK(pprof_recorder_start(a) == 0);
    CHECK(pprof_recorder_start(a) == PPROF_EBUSY);
    pprof_cpu_stats st;
    CHECK(pprof_recorder_start(b) == 0); /* a higher rate: the sampler's is raised */
    pprof_cpu_stats_get(&st);
    CHECKF(st.hz == 500, "the sampler at %d Hz with recorders at 250 and 500", (int)st.hz);
    CHECK(pprof_recorder_stop(b, NULL) == 0);
    pprof_cpu_stats_get(&st);
    CHECKF(st.hz == 250, "the sampler at %d Hz with one recorder at 250", (int)st.hz);
    CHECK(pprof_recorder_start(c) == 0);
    CHECK(pprof_recorder_rate(c) == 100); /* its own (LIBPPROF_CPU_HZ's default); samples come at 250 */
    CHECK(pprof_recorder_start(d) == 0);
    int64_t snap_total = 0, t, cnt;
    double slice = 0.05;
    for (int i = 0; i < 8; i++) {
        on_thread(run_one, &slice);
        pprof_profile *p;
        CHECK(pprof_recorder_snapshot(c, &p) == 0);
        sum_for(p, "run_one", &cnt, &t);
        snap_total += t;
        pprof_profile_free(p);
    }
    pprof_profile *pd, *pc;
    CHECK(pprof_recorder_stop(d, &pd) == 0);
    CHECK(pprof_recorder_stop(c, &pc) == 0);
    sum_for(pc, "run_one", &cnt, &t);
    snap_total += t;
    int64_t d_total;
    sum_for(pd, "run_one", &cnt, &d_total);
    printf("snapshots: %lld samples in all; a recorder over the same span: %lld\n",
           (long long)snap_total, (long long)d_total);
    CHECKF(d_total >= 80 && snap_total >= d_total && snap_total <= d_total + 5,
           "snapshots %lld vs %lld", (long long)snap_total, (long long)d_total);
    pprof_profile_free(pc);
    pprof_profile_free(pd);
    CHECK(pprof_recorder_stop(a, NULL) == 0);
    CHECK(pprof_recorder_stop(a, NULL) == PPROF_ESTATE);
    pprof_cpu_stats_get(&st);
    CHECK(st.hz == 0 && st.threads_timed == 0);
    pprof_recorder_free(a);
    pprof_recorder_free(b);
    pprof_recorder_free(c);
    pprof_recorder_free(d);

    pprof_recorder *bad;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = -1}, &bad) == PPROF_EINVAL);
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000000}, &bad) == PPROF_EINVAL);
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.max_frames = 100000}, &bad) == PPROF_EINVAL);
    CHECK(pprof_cpu_recorder_new(NULL, NULL) == PPROF_EINVAL);
    CHECK(pprof_recorder_start(NULL) == PPROF_EINVAL);
}

/* A 20 Hz recorder (as the history's) with a 1000 Hz one started and
 * stopped beside it: the sampler runs at 1000 Hz while both run and at 20
 * Hz again after, and each recorder's CPU time (ns) is what it covered.
 * The burns run on threads that end inside the windows, and a thread's
 * time is counted in whole periods from a random first one, rounded
 * down at its exit: a 500 ms burn counts 500 ms at 20 Hz, or 450 or 550
 * when it ran a little under or over; 499 to 501 at 1000 Hz. */
static void rates_beside(void)
{
    pprof_recorder *lo, *hi;
    pprof_cpu_stats st;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 20}, &lo) == 0);
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &hi) == 0);
    CHECK(pprof_recorder_start(lo) == 0);
    double part = 0.5;
    on_thread(run_one, &part);
    CHECK(pprof_recorder_start(hi) == 0);
    pprof_cpu_stats_get(&st);
    CHECKF(st.hz == 1000, "the sampler at %d Hz beside a 1000 Hz recorder", (int)st.hz);
    on_thread(run_one, &part);
    pprof_profile *ph, *pl;
    CHECK(pprof_recorder_stop(hi, &ph) == 0);
    pprof_cpu_stats_get(&st);
    CHECKF(st.hz == 20, "the sampler at %d Hz once the 1000 Hz recorder stopped", (int)st.hz);
    on_thread(run_one, &part);
    CHECK(pprof_recorder_stop(lo, &pl) == 0);
    int64_t lo_ns, hi_ns, total;
    sum_value_for(pl, "run_one", 1, &lo_ns, &total);
    sum_value_for(ph, "run_one", 1, &hi_ns, &total);
    printf("rates beside: 20 Hz recorder %.1f ms of 1500, 1000 Hz recorder %.1f ms of 500\n", lo_ns / 1e6,
           hi_ns / 1e6);
    CHECKF(lo_ns >= 1400e6 && lo_ns <= 1600e6, "20 Hz recorder: %.1f ms of 1500", lo_ns / 1e6);
    CHECKF(hi_ns >= 495e6 && hi_ns <= 505e6, "1000 Hz recorder: %.1f ms of 500", hi_ns / 1e6);
    CHECK(pprof_profile_period(pl) == 50000000 && pprof_profile_period(ph) == 1000000);
    pprof_profile_free(pl);
    pprof_profile_free(ph);
    pprof_recorder_free(lo);
    pprof_recorder_free(hi);
}

/* Threads too short to be sampled (a thread per request): each burns
 * 0.3 ms at 1000 Hz and exits. Their CPU is counted at their exit, from
 * a random first period, in whole periods: 0 or 1 ms each, 1 with
 * chance 0.3 (2,000 threads: 600 ms, sd 20 ms), and must come within 15%
 * of what their own clocks say (4 sd), under a root frame that says they
 * were counted at exit. */
#define SHORT_THREADS 2000
static _Atomic int64_t short_cpu_ns;

__attribute__((noinline)) static void *run_short(void *arg)
{
    burn_cpu(*(double *)arg, 1.0000003);
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    atomic_fetch_add(&short_cpu_ns, ts.tv_sec * 1000000000ll + ts.tv_nsec);
    return NULL;
}

static void short_threads(void)
{
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    double s = 0.0003;
    for (int i = 0; i < SHORT_THREADS; i++)
        on_thread(run_short, &s);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    int64_t ns, total;
    sum_value_for(p, "run_short", 1, &ns, &total);
    double own = atomic_load(&short_cpu_ns) / 1e6;
    printf("short threads: %d of them, %.1f ms of CPU by their clocks, %.1f ms in the profile\n", SHORT_THREADS, own,
           ns / 1e6);
    CHECKF(ns / 1e6 > 0.85 * own && ns / 1e6 < 1.15 * own, "short threads: %.1f ms in the profile for %.1f ms",
           ns / 1e6, own);
    /* most had no signal: their time is on run_short under a root that says so */
    CHECK(stacks_contain(p, "[not sampled: a thread's CPU time counted at its exit, on the function it started]"));
    pprof_profile_free(p);
    pprof_recorder_free(r);
}

int main(void)
{
    timers_per_thread();
    rates_and_snapshots();
    rates_beside();
    short_threads();
    truncation();
    accuracy(1000, 0.6);
    accuracy(100, 1.5);
    tail_under_load();
    window_end_under_load();
    return check_summary("test_cpu");
}
