/* cpu_overhead.c: what CPU profiling costs the profiled program.
 *
 * The workload: 2 threads, each running a fixed amount of floating-point
 * work at the bottom of a ~30-frame call chain. The driver runs it, in
 * fresh processes, with profiling off and then on under each of: libpprof
 * at 100 Hz and 1000 Hz, and gperftools' CPU profiler (libprofiler, via
 * LD_PRELOAD and CPUPROFILE) at 100 Hz and 1000 Hz. Off and on runs are
 * interleaved in pairs (the order alternating), so each pair's ratio sees
 * the same machine state; it reports the median ratio and its spread over
 * all pairs, and every run's raw numbers.
 *
 * Figures:
 *  - own CPU share (libpprof): signal-handler time plus the collector
 *    thread's CPU time, over the workload's CPU time; handler median from
 *    the handler's 100 ns histogram.
 *  - cost per delivered sample, for both profilers the same way:
 *    (CPU time on - CPU time off of the pair) / samples delivered.
 *
 * Usage: cpu_overhead [pairs]          (default 15)
 *        cpu_overhead worker MODE HZ   (one run; MODE off|pprof|gperf)
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>

#define DEPTH 28
#define ITERS 1200000000L
#define GPERF_LIB "/usr/lib/x86_64-linux-gnu/libprofiler.so.0"

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile double sink;

__attribute__((noinline)) static double leaf_work(long iters)
{
    double x = 1;
    for (long i = 0; i < iters; i++)
        x = x * 1.0000001 + 1.0 / (x + (double)(i & 1023));
    return x;
}

__attribute__((noinline)) static double descend(int depth, long iters)
{
    if (depth == 0)
        return leaf_work(iters);
    double r = descend(depth - 1, iters);
    __asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
    return r + depth;
}

static void *thread_main(void *arg)
{
    (void)arg;
    sink += descend(DEPTH, ITERS / 4);
    return NULL;
}

/* Sums the sample counts of a gperftools CPU profile file. */
static long gperf_samples(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uintptr_t hdr[5];
    long total = 0;
    if (fread(hdr, sizeof hdr[0], 5, f) != 5) {
        fclose(f);
        return -1;
    }
    for (;;) {
        uintptr_t rec[2];
        if (fread(rec, sizeof rec[0], 2, f) != 2)
            break;
        if (rec[0] == 0 && rec[1] == 1)
            break; /* trailer */
        total += (long)rec[0];
        if (fseek(f, (long)(rec[1] * sizeof(uintptr_t)), SEEK_CUR))
            break;
    }
    fclose(f);
    return total;
}

static int worker(const char *mode, int hz)
{
    pprof_recorder *r = NULL;
    if (!strcmp(mode, "pprof")) {
        if (pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = hz}, &r) || pprof_recorder_start(r))
            return 1;
    }
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, thread_main, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    double wall = now(CLOCK_MONOTONIC) - w0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    pprof_cpu_stats st;
    pprof_cpu_stats_get(&st);
    if (r) {
        pprof_profile *p;
        pprof_recorder_stop(r, &p);
        pprof_profile_free(p);
        pprof_recorder_free(r);
    }
    /* median of the handler histogram (100 ns buckets) */
    uint64_t seen = 0, half = (st.signals + 1) / 2, median = 0;
    for (int i = 0; i < PPROF_CPU_HIST_BUCKETS; i++) {
        seen += st.handler_hist[i];
        if (seen >= half && st.signals) {
            median = (uint64_t)i * 100 + 50;
            break;
        }
    }
    printf("wall=%.4f cpu=%.4f signals=%llu samples=%llu handler_ns=%llu collector_ns=%llu handler_median_ns=%llu\n",
           wall, cpu, (unsigned long long)st.signals, (unsigned long long)st.samples,
           (unsigned long long)st.handler_ns, (unsigned long long)st.collector_ns,
           (unsigned long long)median);
    return 0;
}

typedef struct run {
    double wall, cpu;
    double signals, samples, handler_ns, collector_ns, median_ns;
} run;

/* The environment of a gperftools run, set in its worker before the exec. */
typedef struct gperf_env {
    const char *prof, *hz;
} gperf_env;

static void set_gperf_env(void *arg)
{
    const gperf_env *g = arg;
    setenv("LD_PRELOAD", GPERF_LIB, 1);
    setenv("CPUPROFILE", g->prof, 1);
    setenv("CPUPROFILE_FREQUENCY", g->hz, 1);
}

static int run_child(const char *self, const char *mode, int hz, run *out)
{
    char hzs[16], prof[64], line[1024];
    snprintf(hzs, sizeof hzs, "%d", hz);
    snprintf(prof, sizeof prof, "/tmp/cpu_overhead.%d.prof", getpid());
    unlink(prof);
    int gperf = !strcmp(mode, "gperf");
    gperf_env env = {prof, hzs};
    char *argv[] = {(char *)self, "worker", gperf ? "off" : (char *)mode, hzs, NULL};
    /* Judged by the line it prints, whatever its exit status. */
    bench_run_self(argv, gperf ? set_gperf_env : NULL, &env, -1, line, sizeof line);
    memset(out, 0, sizeof *out);
    int n = sscanf(line,
                   "wall=%lf cpu=%lf signals=%lf samples=%lf handler_ns=%lf collector_ns=%lf handler_median_ns=%lf",
                   &out->wall, &out->cpu, &out->signals, &out->samples, &out->handler_ns,
                   &out->collector_ns, &out->median_ns);
    if (n != 7)
        return -1;
    if (gperf)
        out->samples = (double)gperf_samples(prof);
    unlink(prof);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "worker"))
        return worker(argv[2], atoi(argv[3]));
    int pairs = argc > 1 ? atoi(argv[1]) : 15;
    if (pairs < 1 || pairs > 1000) {
        fprintf(stderr, "usage: %s [pairs]\n", argv[0]);
        return 2;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = 0;
    int have_gperf = access(GPERF_LIB, R_OK) == 0;
    struct { const char *mode; int hz; } cfg[] = {{"pprof", 100}, {"pprof", 1000}, {"gperf", 100}, {"gperf", 1000}};
    int ncfg = have_gperf ? 4 : 2;
    run (*off)[4] = calloc((size_t)pairs, sizeof *off), (*on)[4] = calloc((size_t)pairs, sizeof *on);
    printf("# raw runs: pair config order off(wall cpu) on(wall cpu signals samples handler_ns collector_ns median_ns)\n");
    for (int p = 0; p < pairs; p++)
        for (int c = 0; c < ncfg; c++) {
            int first_on = (p + c) % 2;
            int rc = 0;
            if (first_on)
                rc |= run_child(self, cfg[c].mode, cfg[c].hz, &on[p][c]);
            rc |= run_child(self, "off", 0, &off[p][c]);
            if (!first_on)
                rc |= run_child(self, cfg[c].mode, cfg[c].hz, &on[p][c]);
            if (rc) {
                fprintf(stderr, "a run failed (%s %d Hz)\n", cfg[c].mode, cfg[c].hz);
                return 1;
            }
            run *a = &off[p][c], *b = &on[p][c];
            printf("raw %2d %s@%d %s off(%.4f %.4f) on(%.4f %.4f %.0f %.0f %.0f %.0f %.0f)\n", p, cfg[c].mode,
                   cfg[c].hz, first_on ? "on-first" : "off-first", a->wall, a->cpu, b->wall, b->cpu, b->signals,
                   b->samples, b->handler_ns, b->collector_ns, b->median_ns);
            fflush(stdout);
        }
    printf("\n%-12s %10s %18s %12s %14s %16s %12s\n", "config", "samples", "wall ratio med", "spread",
           "own CPU share", "ns/sample (cpu)", "handler med");
    for (int c = 0; c < ncfg; c++) {
        double ratio[1000], per[1000], share[1000], samples[1000], hmed[1000];
        for (int p = 0; p < pairs; p++) {
            run *a = &off[p][c], *b = &on[p][c];
            ratio[p] = b->wall / a->wall;
            per[p] = b->samples > 0 ? (b->cpu - a->cpu) * 1e9 / b->samples : 0;
            share[p] = (b->handler_ns + b->collector_ns) / (b->cpu * 1e9);
            samples[p] = b->samples;
            hmed[p] = b->median_ns;
        }
        double m = bench_median(ratio, pairs);
        char label[32];
        snprintf(label, sizeof label, "%s@%d", cfg[c].mode, cfg[c].hz);
        int gperf = !strcmp(cfg[c].mode, "gperf");
        printf("%-12s %10.0f %18.4f %5.3f..%5.3f %13.3f%% %16.0f %10.0f ns\n", label, bench_median(samples, pairs), m,
               ratio[0], ratio[pairs - 1], gperf ? 0.0 : 100 * bench_median(share, pairs), bench_median(per, pairs),
               gperf ? 0.0 : bench_median(hmed, pairs));
    }
    printf("(own CPU share and handler median are measured inside libpprof; for gperftools only the\n"
           " per-sample cost is comparable. Medians over %d pairs; spread is min..max of the pair ratios.)\n",
           pairs);
    return 0;
}
