/* idle_cost.c: what CPU profiling costs a program that does nothing.
 *
 * A continuous profiler (LIBPPROF_HISTORY) keeps the sampler on while the
 * program idles, so the collector's own wakes are its whole cost there.
 * The driver starts a CPU recorder at 100 Hz and at 1000 Hz, with 1 and
 * with 64 threads that wait on a condition variable, for SECONDS each,
 * and prints the collector thread's CPU time over the window
 * (pprof_cpu_stats.collector_ns) and the whole process's (getrusage), as
 * a share of one core; every round's raw numbers, then the medians.
 *
 * Usage: idle_cost [ROUNDS [SECONDS]]   (default 3 rounds of 10 s)
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "pprof_stats.h"
#include "bench.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_WAITERS 63

static bench_gate gate = BENCH_GATE_INIT;

static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static double collector_s(void)
{
    pprof_cpu_stats st;
    pprof_cpu_stats_get(&st);
    return (double)st.collector_ns / 1e9;
}

/* One window: the collector's and the process's CPU, in % of one core. */
static int window(int hz, int seconds, double *col_pct, double *proc_pct)
{
    pprof_recorder *r;
    int rc = pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = hz}, &r);
    if (rc == 0)
        rc = pprof_recorder_start(r);
    if (rc) {
        fprintf(stderr, "idle_cost: %s\n", pprof_strerror(rc));
        return rc;
    }
    struct timespec one = {1, 0};
    nanosleep(&one, NULL); /* the timers armed, the collector settled */
    double c0 = collector_s(), p0 = process_cpu_s();
    for (int s = 0; s < seconds; s++)
        nanosleep(&one, NULL);
    *col_pct = (collector_s() - c0) * 100 / seconds;
    *proc_pct = (process_cpu_s() - p0) * 100 / seconds;
    pprof_profile *p;
    if (pprof_recorder_stop(r, &p) == 0)
        pprof_profile_free(p);
    pprof_recorder_free(r);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3, seconds = argc > 2 ? atoi(argv[2]) : 10;
    if (rounds < 1 || seconds < 1) {
        fprintf(stderr, "usage: idle_cost [ROUNDS [SECONDS]]\n");
        return 2;
    }
    static const int hzs[] = {100, 1000}, threads[] = {1, 64};
    double col[2][2][64], proc[2][2][64];
    if (rounds > 64)
        rounds = 64;
    pthread_t w[MAX_WAITERS];
    int nw = 0;
    printf("%-5s %-6s %-7s %12s %12s\n", "round", "hz", "threads", "collector_%", "process_%");
    for (int k = 0; k < rounds; k++)
        for (int t = 0; t < 2; t++) {
            while (nw < threads[t] - 1)
                pthread_create(&w[nw++], NULL, bench_wait_gate, &gate);
            for (int h = 0; h < 2; h++) {
                if (window(hzs[h], seconds, &col[t][h][k], &proc[t][h][k]))
                    return 1;
                printf("%-5d %-6d %-7d %12.3f %12.3f\n", k + 1, hzs[h], threads[t], col[t][h][k],
                       proc[t][h][k]);
                fflush(stdout);
            }
        }
    printf("medians over %d rounds of %d s:\n", rounds, seconds);
    for (int t = 0; t < 2; t++)
        for (int h = 0; h < 2; h++)
            printf("%-5s %-6d %-7d %12.3f %12.3f\n", "med", hzs[h], threads[t], bench_median(col[t][h], rounds),
                   bench_median(proc[t][h], rounds));
    bench_open_gate(&gate);
    for (int i = 0; i < nw; i++)
        pthread_join(w[i], NULL);
    return 0;
}
