/* prog_wall_linked.c: threads whose wall time is known, for the wall
 * profile's accuracy (test_wall.sh).
 *
 *   w-compute   computes all the time (labels thread=compute)
 *   w-cycle     cycles of about 10 ms (each phase's length drawn at
 *               random, so cycles do not keep step with the sampler):
 *               computes ~40%, poll()s ~30%, waits ~20% for a mutex that
 *               w-holder holds (contended: a futex wait), nanosleeps ~10%;
 *               it measures each phase's wall time itself, the time it
 *               was ready to run but waited for a CPU (its run_delay in
 *               /proc) counted as running, as the kernel counts it
 *               (thread=cycle)
 *   w-holder    takes the mutex when w-cycle asks and holds it ~2 ms
 *   w-epoll     waits in epoll_wait for ever (thread=epoll)
 *   w-span      runs requests one after the other, each under a span of
 *               its own (span_name "GET /wait"; request k has span ID k
 *               and trace ID 7e57 followed by k, both in hex): computes
 *               ~20 ms, then waits 1.5 s in read() of a timer
 *               (thread=span); no other thread of the program waits in read
 * Serves /debug/pprof/ and prints "port=P"; every 100 ms prints
 * "m t=REALTIME_NS compute=NS poll=NS mutex=NS sleep=NS delay=NS polls=N
 * long=N" (w-cycle's phase times so far, the time it spent ready to run,
 * waiting for a CPU, its polls and those that took over 5.5 ms: a poll the
 * profiling signal broke after its 3 ms ran out, entered again for 3 ms
 * more); exits on SIGTERM.
 */
#define _GNU_SOURCE
#include "serve.h"

#include <fcntl.h>
#include <poll.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static sem_t go, held;
static _Atomic int64_t phase_ns[5]; /* compute, poll, mutex, sleep; and the time ready to run, not running */
static _Atomic int64_t polls, long_polls; /* w-cycle's 3 ms polls, and those that took over 5.5 ms */
static _Atomic uint64_t sink;

static int64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

__attribute__((noinline)) static void compute_for(int64_t ns)
{
    int64_t end = now_ns(CLOCK_MONOTONIC) + ns;
    uint64_t x = 1;
    while (now_ns(CLOCK_MONOTONIC) < end)
        for (int i = 0; i < 200; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink += x;
}

__attribute__((noinline)) static void compute_forever(void *arg)
{
    (void)arg;
    for (;;)
        compute_for(1000000000);
}

__attribute__((noinline)) static void poll_phase(void)
{
    poll(NULL, 0, 3);
}

__attribute__((noinline)) static void mutex_phase(void)
{
    sem_post(&go);
    sem_wait(&held);
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void sleep_phase(int64_t ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* This thread's time on a run queue so far (ns): ready to run, not running. */
static int64_t run_delay(int fd)
{
    char b[96];
    ssize_t n = pread(fd, b, sizeof b - 1, 0);
    if (n <= 0)
        return 0;
    b[n] = 0;
    char *p = strchr(b, ' ');
    return p ? strtoll(p + 1, NULL, 10) : 0;
}

__attribute__((noinline)) static void cycle_forever(void *arg)
{
    (void)arg;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    int64_t dprev = run_delay(fd);
    for (;;) {
        int64_t t0 = now_ns(CLOCK_MONOTONIC);
        compute_for(3000000 + (int64_t)(rnd(&x) % 2000000)); /* 3-5 ms */
        int64_t d1 = run_delay(fd), t1 = now_ns(CLOCK_MONOTONIC);
        poll_phase();                                         /* ~3 ms */
        int64_t d2 = run_delay(fd), t2 = now_ns(CLOCK_MONOTONIC);
        mutex_phase();                                        /* ~1.5-2.5 ms */
        int64_t d3 = run_delay(fd), t3 = now_ns(CLOCK_MONOTONIC);
        sleep_phase(500000 + (int64_t)(rnd(&x) % 1000000));   /* 0.5-1.5 ms */
        int64_t d4 = run_delay(fd), t4 = now_ns(CLOCK_MONOTONIC);
        /* A wait ends when the thread is woken; the time it then spends
         * ready to run before it runs is the kernel's "running" state,
         * as the wall profile's: it goes to the running share. */
        phase_ns[0] += t1 - t0 + (d2 - d1) + (d3 - d2) + (d4 - d3);
        phase_ns[1] += t2 - t1 - (d2 - d1);
        phase_ns[2] += t3 - t2 - (d3 - d2);
        phase_ns[3] += t4 - t3 - (d4 - d3);
        phase_ns[4] += d4 - dprev;
        polls++;
        if (t2 - t1 > 5500000)
            long_polls++;
        dprev = d4;
    }
}

static void *holder(void *arg)
{
    (void)arg;
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (;;) {
        sem_wait(&go);
        pthread_mutex_lock(&mu);
        sem_post(&held);
        sleep_phase(1500000 + (int64_t)(rnd(&x) % 1000000));
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

__attribute__((noinline)) static void epoll_forever(void *arg)
{
    (void)arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;
    for (;;)
        epoll_wait(ep, &ev, 1, -1);
}

__attribute__((noinline)) static void span_wait(int fd)
{
    struct itimerspec its = {.it_value = {1, 500000000}};
    uint64_t n;
    timerfd_settime(fd, 0, &its, NULL);
    while (read(fd, &n, sizeof n) != (ssize_t)sizeof n)
        ;
}

__attribute__((noinline)) static void span_forever(void *arg)
{
    (void)arg;
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    for (uint64_t k = 1;; k++) {
        pprof_trace_context span = {.trace_id = {0x7e, 0x57}, .trace_flags = 1, .span_name = "GET /wait"};
        for (int i = 0; i < 8; i++) {
            span.span_id[i] = (uint8_t)(k >> (56 - 8 * i));
            span.trace_id[8 + i] = span.span_id[i];
        }
        const pprof_trace_context *prev = pprof_trace_enter(&span);
        compute_for(20000000);
        span_wait(fd);
        pprof_trace_leave(prev);
    }
}

struct job {
    const char *name;
    void (*fn)(void *);
};

static void *run(void *arg)
{
    const struct job *j = arg;
    pthread_setname_np(pthread_self(), j->name);
    pprof_label l = {"thread", j->name + 2};
    pprof_labels *set;
    if (pprof_labels_new(&l, 1, &set) == 0) {
        pprof_do(set, j->fn, NULL);
        pprof_labels_unref(set);
    }
    return NULL;
}

static void *report(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(100000);
        printf("m t=%lld compute=%lld poll=%lld mutex=%lld sleep=%lld delay=%lld polls=%lld long=%lld\n",
               (long long)now_ns(CLOCK_REALTIME), (long long)phase_ns[0], (long long)phase_ns[1], (long long)phase_ns[2],
               (long long)phase_ns[3], (long long)phase_ns[4], (long long)polls, (long long)long_polls);
        fflush(stdout);
    }
    return NULL;
}

int main(void)
{
    sigset_t set;
    serve_prepare(&set, NULL, 0);
    pprof_server_config cfg = {.addr = "127.0.0.1:0"};
    if (serve_start("prog_wall_linked", &cfg))
        return 1;
    sem_init(&go, 0, 0);
    sem_init(&held, 0, 0);
    static const struct job jobs[] = {{"w-compute", compute_forever}, {"w-cycle", cycle_forever},
                                      {"w-epoll", epoll_forever}, {"w-span", span_forever}};
    pthread_t t;
    for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++)
        pthread_create(&t, NULL, run, (void *)&jobs[i]);
    pthread_create(&t, NULL, holder, NULL);
    pthread_setname_np(t, "w-holder");
    pthread_create(&t, NULL, report, NULL);
    pthread_setname_np(t, "w-report");
    serve_announce();
    serve_wait(&set);
    return 0;
}
