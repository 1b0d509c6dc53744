/* prog_spans_linked.c: a service whose requests are spans (or pprof_do
 * units of work), one in 50 of them slow, for test_history_spans.sh.
 *
 *   prog_spans_linked [FAST_MS [SLOW_MS [EVERY [burn|sleep [span|do]]]]]   (10, 300, 50, burn, span)
 *
 * Serves /debug/pprof/ on 127.0.0.1, any free port (port=P on stdout).
 * One worker thread handles requests in a loop, each inside its own
 * trace context (pprof_trace_enter, a new span ID each): request number k
 * burns SLOW_MS of CPU in slow_request_work() when k % EVERY == 0, else
 * FAST_MS in fast_request_work(). With do, each request is a pprof_do
 * call under the label request=handle instead, outside any span. Every
 * second it prints "slow_cpu_ns=N
 * fast_cpu_ns=M" (its thread's CPU time in each, since start). With
 * sleep, both functions sleep instead of burning, and the lines say
 * "slow_wall_ns=N fast_wall_ns=M" (the time each took). The first slow
 * request's end prints "first_slow_end=NS" (CLOCK_REALTIME). With
 * PROG_DUMP_STORM=N in the environment, the reporter calls
 * pprof_history_dump() N times in a row 3 s after the start and prints
 * "storm=N ok=K" (K of them answered 0). SIGTERM or SIGINT end it.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "serve.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fast_ms = 10, slow_ms = 300, every = 50, sleeps, units;
static pprof_labels *request_labels;
static _Atomic int64_t slow_ns, fast_ns;
static volatile double sink;

static int64_t thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Burns ms of the thread's CPU; returns what it burnt. */
static int64_t burn(int ms)
{
    int64_t t0 = thread_cpu_ns(), t;
    double x = 1.0;
    do {
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
        sink = x;
    } while ((t = thread_cpu_ns()) - t0 < (int64_t)ms * 1000000);
    return t - t0;
}

/* Sleeps ms; returns the time it took. */
static int64_t rest(int ms)
{
    struct timespec t0, t1, d = {ms / 1000, (long)(ms % 1000) * 1000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (nanosleep(&d, &d) != 0)
        ;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
}

__attribute__((noinline)) static void slow_request_work(void)
{
    slow_ns += sleeps ? rest(slow_ms) : burn(slow_ms);
}

__attribute__((noinline)) static void fast_request_work(void)
{
    fast_ns += sleeps ? rest(fast_ms) : burn(fast_ms);
}

/* Request number k (a pointer to it). */
static void handle(void *arg)
{
    uint64_t k = *(const uint64_t *)arg;
    if (k % (uint64_t)every == 0) {
        slow_request_work();
        if (k == (uint64_t)every) {
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            printf("first_slow_end=%lld\n", (long long)t.tv_sec * 1000000000 + t.tv_nsec);
            fflush(stdout);
        }
    } else
        fast_request_work();
}

static void *worker(void *arg)
{
    (void)arg;
    for (uint64_t k = 1;; k++) {
        if (units) {
            if (pprof_do(request_labels, handle, &k))
                abort();
            continue;
        }
        pprof_trace_context span = {.trace_flags = 1, .span_name = "request"};
        span.trace_id[15] = 1;
        for (int i = 0; i < 8; i++)
            span.span_id[i] = (uint8_t)(k >> (8 * (7 - i)));
        const pprof_trace_context *prev = pprof_trace_enter(&span);
        handle(&k);
        pprof_trace_leave(prev);
    }
    return NULL;
}

static void *reporter(void *arg)
{
    (void)arg;
    const char *storm = getenv("PROG_DUMP_STORM");
    for (int s = 1;; s++) {
        sleep(1);
        if (storm && s == 3) {
            int n = atoi(storm), ok = 0;
            for (int i = 0; i < n; i++)
                ok += pprof_history_dump() == 0;
            printf("storm=%d ok=%d\n", n, ok);
        }
        const char *kind = sleeps ? "wall" : "cpu";
        printf("slow_%s_ns=%lld fast_%s_ns=%lld\n", kind, (long long)slow_ns, kind, (long long)fast_ns);
        fflush(stdout);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        fast_ms = atoi(argv[1]);
    if (argc > 2)
        slow_ms = atoi(argv[2]);
    if (argc > 3)
        every = atoi(argv[3]);
    if (argc > 4)
        sleeps = !strcmp(argv[4], "sleep");
    if (argc > 5)
        units = !strcmp(argv[5], "do");
    if (pprof_labels_new(&(pprof_label){"request", "handle"}, 1, &request_labels))
        return 1;
    sigset_t set;
    serve_prepare(&set, NULL, 0);
    pprof_server_config cfg = {.addr = "127.0.0.1:0"};
    if (serve_start("prog_spans_linked", &cfg))
        return 1;
    pthread_t w, r;
    pthread_create(&w, NULL, worker, NULL);
    pthread_create(&r, NULL, reporter, NULL);
    serve_announce();
    serve_wait(&set);
    return 0;
}
