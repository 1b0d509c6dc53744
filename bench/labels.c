/* labels.c: the cost of profiler labels, against Go's on the same machine.
 *
 * Figures, each the median of 7 timed batches in a fresh process, three
 * processes with OpenTelemetry publication off (LIBPPROF_OTEL_CONTEXT=0)
 * and three with it on, alternating (each thread's record is written on
 * every label-set and trace-context change when on):
 *  - pprof_do enter+leave with a prebuilt 2-pair set (no set current:
 *    the set is used as it is), and nested under another set (a merge);
 *  - pprof_labels_new + unref of a 2-pair set;
 *  - pprof_trace_enter + pprof_trace_leave of a span (the span-profile
 *    path: no allocation, no copy);
 *  - Go's pprof.Do with a prebuilt 2-label set and pprof.Labels with 2 pairs,
 *    measured by bench/labels_go in the same run (needs `go`).
 *
 * Usage: labels [path/to/bench/labels_go/main.go]
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH 2000000
#define ROUNDS 7


static volatile int sink;
static void body(void *arg) { sink += arg != NULL; }

static pprof_labels *inner_set;
static double nested_ns[ROUNDS];
static void nested_batch(void *arg)
{
    int r = *(int *)arg;
    double t0 = bench_now_ns();
    for (int i = 0; i < BATCH; i++)
        pprof_do(inner_set, body, NULL);
    nested_ns[r] = (bench_now_ns() - t0) / BATCH;
}

/* One process's figures (medians of ROUNDS batches), printed on a line:
 * the run whose OpenTelemetry publication is as the environment says. */
static int figures(void)
{
    pprof_label pairs[] = {{"endpoint", "/checkout"}, {"tenant", "acme"}};
    pprof_label inner[] = {{"request", "42"}};
    pprof_labels *set, *outer;
    pprof_labels_new(pairs, 2, &set);
    pprof_labels_new(pairs, 2, &outer);
    pprof_labels_new(inner, 1, &inner_set);
    double do_ns[ROUNDS], build_ns[ROUNDS], trace_ns[ROUNDS];
    pprof_trace_context span = {.trace_id = {1}, .span_id = {2}, .span_name = "GET /search"};
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = bench_now_ns();
        for (int i = 0; i < BATCH; i++)
            pprof_do(set, body, NULL);
        do_ns[r] = (bench_now_ns() - t0) / BATCH;
        t0 = bench_now_ns();
        for (int i = 0; i < BATCH; i++) {
            pprof_labels *s;
            pprof_labels_new(pairs, 2, &s);
            pprof_labels_unref(s);
        }
        build_ns[r] = (bench_now_ns() - t0) / BATCH;
        pprof_do(outer, nested_batch, &r);
        t0 = bench_now_ns();
        for (int i = 0; i < BATCH; i++) {
            const pprof_trace_context *prev = pprof_trace_enter(&span);
            sink += span.trace_flags;
            pprof_trace_leave(prev);
        }
        trace_ns[r] = (bench_now_ns() - t0) / BATCH;
    }
    bench_sort(do_ns, ROUNDS);
    bench_sort(nested_ns, ROUNDS);
    bench_sort(build_ns, ROUNDS);
    bench_sort(trace_ns, ROUNDS);
    pprof_otel_stats st;
    pprof_otel_stats_get(&st);
    printf("published=%d do=%.2f nested=%.2f build=%.2f trace=%.2f\n", st.published, do_ns[ROUNDS / 2],
           nested_ns[ROUNDS / 2], build_ns[ROUNDS / 2], trace_ns[ROUNDS / 2]);
    pprof_labels_unref(set);
    pprof_labels_unref(outer);
    pprof_labels_unref(inner_set);
    return 0;
}

#define RUNS 3
enum { DO, NESTED, BUILD, TRACE, NFIG };

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--figures"))
        return figures();
    const char *gosrc = argc > 1 ? argv[1] : "bench/labels_go/main.go";
    /* Publication off and on, alternating, each in a fresh process. */
    double fig[2][NFIG][RUNS];
    for (int run = 0; run < RUNS; run++)
        for (int on = 0; on < 2; on++) {
            char cmd[4200], line[512], exe[4096];
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            exe[n > 0 ? n : 0] = 0;
            snprintf(cmd, sizeof cmd, "LIBPPROF_OTEL_CONTEXT=%d %s --figures", on, exe);
            FILE *f = popen(cmd, "r");
            int published = -1;
            while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "published=%d do=%lf nested=%lf build=%lf trace=%lf", &published,
                           &fig[on][DO][run], &fig[on][NESTED][run], &fig[on][BUILD][run], &fig[on][TRACE][run]) == 5)
                    printf("raw otel=%s %s", on ? "on " : "off", line);
            if (f)
                pclose(f);
            if (published != on) {
                fprintf(stderr, "labels: the run with LIBPPROF_OTEL_CONTEXT=%d failed\n", on);
                return 1;
            }
        }
    for (int on = 0; on < 2; on++)
        for (int k = 0; k < NFIG; k++)
            bench_sort(fig[on][k], RUNS);

    double go_do = -1, go_labels = -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "go run %s 2>&1", gosrc);
    FILE *f = popen(cmd, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "go_do_ns=%lf go_labels_ns=%lf", &go_do, &go_labels) == 2)
            printf("raw %s", line);
    if (f)
        pclose(f);
#define MID(on, k) fig[on][k][RUNS / 2]
    printf("\n%-44s %10s %10s %10s\n", "figure (median of runs)", "otel off", "otel on", "Go");
    printf("%-44s %10.1f %10.1f %10.1f\n", "do enter+leave, prebuilt 2-pair set (ns)", MID(0, DO), MID(1, DO), go_do);
    printf("%-44s %10.1f %10.1f %10s\n", "do nested under a set (merge, ns)", MID(0, NESTED), MID(1, NESTED), "-");
    printf("%-44s %10.1f %10.1f %10.1f\n", "build a 2-pair set (ns)", MID(0, BUILD), MID(1, BUILD), go_labels);
    printf("%-44s %10.1f %10.1f %10s\n", "trace context enter+leave (ns)", MID(0, TRACE), MID(1, TRACE), "-");
    printf("%-44s %10s %10.1f\n", "do: publication's cost (on - off, ns)", "", MID(1, DO) - MID(0, DO));
    if (go_do < 0)
        printf("(Go figures unavailable: `go run %s` failed)\n", gosrc);
    return 0;
}
