/* window_end.c: what ending a CPU window costs with many threads.
 *
 * N threads wait on a condition variable (a server's idle pool), two burn
 * CPU; a 100 Hz CPU recorder runs, and each of K snapshots (taken with no
 * profile out, so nothing is symbolized) ends a window: the window end
 * signals the threads that run and counts the ending thread's time. Prints
 * the median and worst milliseconds per snapshot. The registry lock is
 * held while the threads are looked at, so this is also how long a thread
 * starting or exiting then can wait.
 * Usage: window_end [threads (1000)] [snapshots (21)]
 */
#define _GNU_SOURCE
#include "bench.h"
#include "pprof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static bench_gate gate = BENCH_GATE_INIT;
static _Atomic int stop;


static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, k = argc > 2 ? atoi(argv[2]) : 21;
    if (n < 0 || n > 4000 || k < 1 || k > 1000) {
        fprintf(stderr, "usage: window_end [threads 0-4000] [snapshots 1-1000]\n");
        return 2;
    }
    pthread_t *t = calloc((size_t)n + 2, sizeof *t);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], &attr, bench_wait_gate, &gate)) {
            fprintf(stderr, "window_end: thread %d not created\n", i);
            return 1;
        }
    pthread_create(&t[n], NULL, bench_burn, &stop);
    pthread_create(&t[n + 1], NULL, bench_burn, &stop);
    pprof_recorder *r;
    if (pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 100}, &r) || pprof_recorder_start(r)) {
        fprintf(stderr, "window_end: %s\n", pprof_last_error());
        return 1;
    }
    double *ms = calloc((size_t)k, sizeof *ms);
    for (int i = 0; i < k; i++) {
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        double t0 = now_ms();
        pprof_recorder_snapshot(r, NULL);
        ms[i] = now_ms() - t0;
    }
    pprof_recorder_stop(r, NULL);
    pprof_recorder_free(r);
    pprof_cpu_stats st;
    pprof_cpu_stats_get(&st);
    bench_sort(ms, k);
    printf("%d waiting threads, 2 burning: %d snapshots, median %.3f ms, worst %.3f ms; all:", n, k,
           bench_median(ms, k), ms[k - 1]);
    for (int i = 0; i < k; i++)
        printf(" %.3f", ms[i]);
    printf("\n");
    bench_open_gate(&gate);
    atomic_store(&stop, 1);
    for (int i = 0; i < n + 2; i++)
        pthread_join(t[i], NULL);
    free(ms);
    free(t);
    return 0;
}
