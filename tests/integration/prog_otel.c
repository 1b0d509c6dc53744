/* prog_otel.c: labelled, traced requests for otel_reader, profiled through
 * LD_PRELOAD (it finds libpprof's API with dlsym, as a program that uses it
 * only when present would).
 *
 * Four workers run requests numbered k = 1, 2, ...: each builds the label
 * set {request: k, worker: w}, enters a span whose span ID is k and trace
 * ID (k, ~k) (big-endian), runs under the set with pprof_do and computes
 * for about 200 us. Inside, and only there, truth[w] = {tid, k}: what the
 * program has set at that moment, for the reader to compare with the
 * thread's record. An updater thread republishes the process context every
 * millisecond with check.a = check.b = N (one call), so a reader can tell
 * a torn read.
 *
 * Prints "truth 0xADDR" and "ready"; with --fork, forks once the workers
 * run and prints "child PID" (the child runs the same work under its own
 * process context). Runs for SECONDS (default 60).
 * Usage: prog_otel [--fork] [SECONDS]
 */
#define _GNU_SOURCE
#include "pprof.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4

struct truth {
    volatile int32_t tid, pad;
    volatile int64_t k;
} truth[16];

static int (*labels_new)(const pprof_label *, size_t, pprof_labels **);
static void (*labels_unref)(pprof_labels *);
static int (*do_)(const pprof_labels *, void (*)(void *), void *);
static const pprof_trace_context *(*trace_enter)(const pprof_trace_context *);
static void (*trace_leave)(const pprof_trace_context *);
static int (*set_resource)(const pprof_label *, size_t);

static atomic_long next_k;
static volatile int stop;
static volatile double sink;

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct req {
    int w;
    long k;
};

static void handle(void *arg)
{
    struct req *r = arg;
    truth[r->w].k = r->k;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    double end = cpu_s() + 0.0002, x = 1;
    while (cpu_s() < end)
        for (int i = 0; i < 100; i++)
            x = x * 1.0000001 + 1.0 / (x + i);
    sink += x;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    truth[r->w].k = 0;
}

static void put_be64(uint8_t *b, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        b[i] = (uint8_t)v;
}

static void *worker(void *arg)
{
    int w = (int)(intptr_t)arg;
    truth[w].tid = (int32_t)syscall(SYS_gettid);
    char wname[16];
    snprintf(wname, sizeof wname, "%d", w);
    while (!stop) {
        struct req r = {w, atomic_fetch_add(&next_k, 1) + 1};
        char id[24];
        snprintf(id, sizeof id, "%ld", r.k);
        pprof_label pairs[] = {{"request", id}, {"worker", wname}};
        pprof_labels *set;
        if (labels_new(pairs, 2, &set))
            continue;
        pprof_trace_context span = {.trace_flags = 1};
        put_be64(span.trace_id, (uint64_t)r.k);
        put_be64(span.trace_id + 8, ~(uint64_t)r.k);
        put_be64(span.span_id, (uint64_t)r.k);
        const pprof_trace_context *prev = trace_enter(&span);
        do_(set, handle, &r);
        trace_leave(prev);
        labels_unref(set);
    }
    return NULL;
}

static void *updater(void *arg)
{
    (void)arg;
    for (long n = 1; !stop; n++) {
        char v[24];
        snprintf(v, sizeof v, "%ld", n);
        pprof_label pairs[] = {{"check.a", v}, {"check.b", v}};
        set_resource(pairs, 2);
        usleep(1000);
    }
    return NULL;
}

static void run(int seconds)
{
    pthread_t t[WORKERS + 1];
    for (int w = 0; w < WORKERS; w++)
        pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w);
    pthread_create(&t[WORKERS], NULL, updater, NULL);
    struct timespec ts = {seconds, 0};
    while (nanosleep(&ts, &ts))
        ;
    stop = 1;
    for (int w = 0; w <= WORKERS; w++)
        pthread_join(t[w], NULL);
}

int main(int argc, char **argv)
{
    int fork_child = argc > 1 && !strcmp(argv[1], "--fork");
    int seconds = argc > 1 + fork_child ? atoi(argv[1 + fork_child]) : 60;
    labels_new = (int (*)(const pprof_label *, size_t, pprof_labels **))dlsym(RTLD_DEFAULT, "pprof_labels_new");
    labels_unref = (void (*)(pprof_labels *))dlsym(RTLD_DEFAULT, "pprof_labels_unref");
    do_ = (int (*)(const pprof_labels *, void (*)(void *), void *))dlsym(RTLD_DEFAULT, "pprof_do");
    trace_enter = (const pprof_trace_context *(*)(const pprof_trace_context *))dlsym(RTLD_DEFAULT, "pprof_trace_enter");
    trace_leave = (void (*)(const pprof_trace_context *))dlsym(RTLD_DEFAULT, "pprof_trace_leave");
    set_resource = (int (*)(const pprof_label *, size_t))dlsym(RTLD_DEFAULT, "pprof_otel_set_resource");
    if (!labels_new || !labels_unref || !do_ || !trace_enter || !trace_leave || !set_resource) {
        fprintf(stderr, "prog_otel: run it with LD_PRELOAD=libpprof.so\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("truth %p\n", (void *)truth);
    printf("ready\n");
    if (fork_child) {
        pid_t c = fork();
        if (c == 0) {
            run(seconds);
            _exit(0);
        }
        printf("child %d\n", (int)c);
        run(seconds);
        kill(c, SIGTERM);
        waitpid(c, NULL, 0);
        return 0;
    }
    run(seconds);
    return 0;
}
