/* wall_cost.c: what the wall-clock sampler costs with many idle threads.
 *
 * Starts IDLE threads waiting in epoll_wait for ever and BUSY threads
 * computing, then for SECONDS each, measures the process's CPU time less
 * the busy threads' (the profiler's cost, idle threads use none):
 *   none      no profile (the floor: the measurement itself)
 *   wall      a wall recorder at HZ (pprof_wall_recorder_new), with its
 *             sampler thread's own CPU clock (pprof_wall_stats): the
 *             process's first wall window, whose first tick looks at
 *             every thread once
 *   again     the next window, as a scraper's next (Alloy's fgprof job
 *             asks for 14 s every 15 s): only threads that ran are looked
 *             at
 *   signal    a thread that signals every thread at every tick, each
 *             handler walking its own stack with backtrace(): the cost of
 *             taking every thread's stack by a signal each time
 * The busy threads' CPU includes the signal handlers that take their
 * stacks; their work per CPU second, against none's, shows that part.
 * Usage: wall_cost [IDLE [BUSY [HZ [SECONDS]]]] (1000 2 99 5). Prints one
 * line per mode: CPU ms, % of one core, the busy threads' work per CPU
 * second as a ratio to none's, and the sampler's counters.
 */
#define _GNU_SOURCE
#include <pprof.h>

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int *tids;
static _Atomic int ntids;
static pthread_t *busy_threads;
static _Atomic int stop_signaller;
static _Atomic uint64_t sink, work;

static int64_t ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *idle(void *arg)
{
    (void)arg;
    tids[atomic_fetch_add(&ntids, 1)] = (int)syscall(SYS_gettid);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;
    for (;;)
        epoll_wait(ep, &ev, 1, -1);
    return NULL;
}

static void *busy(void *arg)
{
    (void)arg;
    tids[atomic_fetch_add(&ntids, 1)] = (int)syscall(SYS_gettid);
    uint64_t x = 1;
    for (;;) {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ull + 1;
        sink += x;
        work++;
    }
    return NULL;
}

static void on_sig(int sig)
{
    (void)sig;
    void *pcs[64];
    backtrace(pcs, 64);
}

static int hz = 99;

static void *signaller(void *arg)
{
    (void)arg;
    int64_t next = ns(CLOCK_MONOTONIC);
    while (!stop_signaller) {
        next += 1000000000 / hz;
        struct timespec ts = {next / 1000000000, next % 1000000000};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        int n = ntids;
        for (int i = 0; i < n; i++)
            syscall(SYS_tgkill, getpid(), tids[i], SIGURG);
    }
    return NULL;
}

static int64_t busy_cpu(int nbusy)
{
    int64_t s = 0;
    for (int i = 0; i < nbusy; i++) {
        clockid_t c;
        pthread_getcpuclockid(busy_threads[i], &c);
        s += ns(c);
    }
    return s;
}

int main(int argc, char **argv)
{
    int nidle = argc > 1 ? atoi(argv[1]) : 1000, nbusy = argc > 2 ? atoi(argv[2]) : 2;
    hz = argc > 3 ? atoi(argv[3]) : 99;
    int secs = argc > 4 ? atoi(argv[4]) : 5;
    tids = calloc((size_t)(nidle + nbusy), sizeof *tids);
    busy_threads = calloc((size_t)nbusy, sizeof *busy_threads);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t t;
    for (int i = 0; i < nidle; i++)
        pthread_create(&t, &a, idle, NULL);
    for (int i = 0; i < nbusy; i++)
        pthread_create(&busy_threads[i], NULL, busy, NULL);
    signal(SIGURG, on_sig);
    void *warm[8];
    backtrace(warm, 8); /* loads libgcc_s before any handler needs it */
    sleep(1);
    printf("%d idle threads in epoll_wait, %d busy, %d Hz, %d s per mode\n", nidle, nbusy, hz, secs);
    static const char *const names[] = {"none", "wall", "again", "signal"};
    double base_rate = 0;
    for (int mode = 0; mode < 4; mode++) {
        pprof_recorder *r = NULL;
        pthread_t sg;
        if (mode == 1 || mode == 2) {
            pprof_wall_recorder_new(&(pprof_wall_config){.hz = hz}, &r);
            pprof_recorder_start(r);
        } else if (mode == 3) {
            stop_signaller = 0;
            pthread_create(&sg, NULL, signaller, NULL);
        }
        pprof_wall_stats w0, w1;
        pprof_wall_stats_get(&w0);
        int64_t p0 = ns(CLOCK_PROCESS_CPUTIME_ID), b0 = busy_cpu(nbusy), m0 = ns(CLOCK_MONOTONIC);
        uint64_t k0 = work;
        sleep((unsigned)secs);
        int64_t p1 = ns(CLOCK_PROCESS_CPUTIME_ID), b1 = busy_cpu(nbusy), m1 = ns(CLOCK_MONOTONIC);
        uint64_t k1 = work;
        pprof_wall_stats_get(&w1);
        if (mode == 1 || mode == 2) {
            pprof_recorder_stop(r, NULL);
            pprof_recorder_free(r);
        } else if (mode == 3) {
            stop_signaller = 1;
            pthread_join(sg, NULL);
        }
        double cost = (double)((p1 - p0) - (b1 - b0)) / 1e6, wall = (double)(m1 - m0) / 1e6;
        double rate = (double)(k1 - k0) / ((double)(b1 - b0) / 1e9);
        if (mode == 0)
            base_rate = rate;
        printf("%-7s other CPU %8.1f ms = %6.3f%% of one core; busy work/CPU-s %.4f of none's", names[mode], cost,
               100 * cost / wall, base_rate > 0 ? rate / base_rate : 0);
        if (mode == 1 || mode == 2)
            printf("; sampler thread %.1f ms = %.3f%%; %llu ticks, %llu still, %llu looks, %llu signals, "
                   "%llu full scans",
                   (double)(w1.sampler_ns - w0.sampler_ns) / 1e6,
                   100.0 * (double)(w1.sampler_ns - w0.sampler_ns) / 1e6 / wall,
                   (unsigned long long)(w1.ticks - w0.ticks), (unsigned long long)(w1.still - w0.still),
                   (unsigned long long)(w1.looks - w0.looks), (unsigned long long)(w1.signals - w0.signals),
                   (unsigned long long)(w1.full_scans - w0.full_scans));
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
