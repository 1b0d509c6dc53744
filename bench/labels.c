/* labels.c: the cost of profiler labels, against Go's on the same machine.
 *
 * Figures, each the median of 7 timed batches:
 *  - pprof_do enter+leave with a prebuilt 2-pair set (no set current:
 *    the set is used as it is), and nested under another set (a merge);
 *  - pprof_labels_new + unref of a 2-pair set;
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

#define BATCH 2000000
#define ROUNDS 7

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static volatile int sink;
static void body(void *arg) { sink += arg != NULL; }

static pprof_labels *inner_set;
static double nested_ns[ROUNDS];
static void nested_batch(void *arg)
{
    int r = *(int *)arg;
    double t0 = now_ns();
    for (int i = 0; i < BATCH; i++)
        pprof_do(inner_set, body, NULL);
    nested_ns[r] = (now_ns() - t0) / BATCH;
}

int main(int argc, char **argv)
{
    const char *gosrc = argc > 1 ? argv[1] : "bench/labels_go/main.go";
    pprof_label pairs[] = {{"endpoint", "/checkout"}, {"tenant", "acme"}};
    pprof_label inner[] = {{"request", "42"}};
    pprof_labels *set, *outer;
    pprof_labels_new(pairs, 2, &set);
    pprof_labels_new(pairs, 2, &outer);
    pprof_labels_new(inner, 1, &inner_set);
    double do_ns[ROUNDS], build_ns[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < BATCH; i++)
            pprof_do(set, body, NULL);
        do_ns[r] = (now_ns() - t0) / BATCH;
        t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            pprof_labels *s;
            pprof_labels_new(pairs, 2, &s);
            pprof_labels_unref(s);
        }
        build_ns[r] = (now_ns() - t0) / BATCH;
        pprof_do(outer, nested_batch, &r);
    }
    printf("raw pprof_do_ns:");
    for (int r = 0; r < ROUNDS; r++)
        printf(" %.1f", do_ns[r]);
    printf("\nraw pprof_do_nested_ns:");
    for (int r = 0; r < ROUNDS; r++)
        printf(" %.1f", nested_ns[r]);
    printf("\nraw pprof_labels_new_ns:");
    for (int r = 0; r < ROUNDS; r++)
        printf(" %.1f", build_ns[r]);
    bench_sort(do_ns, ROUNDS);
    bench_sort(nested_ns, ROUNDS);
    bench_sort(build_ns, ROUNDS);

    double go_do = -1, go_labels = -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "go run %s 2>&1", gosrc);
    FILE *f = popen(cmd, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "go_do_ns=%lf go_labels_ns=%lf", &go_do, &go_labels) == 2)
            printf("\nraw %s", line);
    if (f)
        pclose(f);
    printf("\n%-40s %10s %10s\n", "figure", "libpprof", "Go");
    printf("%-40s %10.1f %10.1f\n", "do enter+leave, prebuilt 2-pair set (ns)", do_ns[ROUNDS / 2], go_do);
    printf("%-40s %10.1f %10s\n", "do nested under a set (merge, ns)", nested_ns[ROUNDS / 2], "-");
    printf("%-40s %10.1f %10.1f\n", "build a 2-pair set (ns)", build_ns[ROUNDS / 2], go_labels);
    if (go_do < 0)
        printf("(Go figures unavailable: `go run %s` failed)\n", gosrc);
    pprof_labels_unref(set);
    pprof_labels_unref(outer);
    pprof_labels_unref(inner_set);
    return 0;
}
