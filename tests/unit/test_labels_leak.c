/* test_labels_leak.c: per-request label sets do not leak while profiling.
 * test-labels: plain-only
 *
 * A million requests, each with its own label set (a distinct request id),
 * run under pprof_do while CPU profiling runs at 1000 Hz; one request in a
 * thousand burns 2 ms of CPU so that samples carry request labels through
 * the ring and the collector. Afterwards every set has been freed (the live
 * counter is back where it started) and resident memory is within 4 MiB of
 * where it was after a warm-up. Plain build only: it needs real signals.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "burn.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void request(void *arg)
{
    if ((long)(intptr_t)arg % 1000)
        return;
    burn_cpu(0.002, 1.0000001);
}

static long rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = -1;
    if (f)
        fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void run(long from, long to)
{
    for (long i = from; i < to; i++) {
        char id[24];
        snprintf(id, sizeof id, "req-%ld", i);
        pprof_label pairs[] = {{"request_id", id}, {"endpoint", "/api"}};
        pprof_labels *set;
        if (pprof_labels_new(pairs, 2, &set) == 0) {
            pprof_do(set, request, (void *)(intptr_t)i);
            pprof_labels_unref(set);
        }
    }
}

int main(void)
{
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    run(0, 20000); /* warm-up: allocator arenas, ring pages, symbol caches */
    pprof_profile *p;
    CHECK(pprof_recorder_snapshot(r, &p) == 0);
    pprof_profile_free(p);
    pprof_labels_stats st0, st1;
    pprof_labels_stats_get(&st0);
    long rss0 = rss_kib();

    run(20000, 1000000);
    CHECK(pprof_recorder_stop(r, &p) == 0);
    size_t n, labeled = 0;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    for (size_t i = 0; i < n; i++)
        labeled += s[i].nlabels == 2;
    pprof_profile_free(p);
    pprof_recorder_free(r);

    pprof_labels_stats_get(&st1);
    long rss1 = rss_kib();
    printf("label sets created %llu, live before %llu after %llu; labeled samples %zu; RSS %ld -> %ld KiB\n",
           (unsigned long long)(st1.created - st0.created), (unsigned long long)st0.live,
           (unsigned long long)st1.live, labeled, rss0, rss1);
    CHECK(st1.created - st0.created >= 980000);
    CHECKF(st1.live == st0.live, "%llu sets leaked", (unsigned long long)(st1.live - st0.live));
    CHECKF(labeled >= 100, "only %zu samples carried request labels", labeled);
    CHECKF(rss1 - rss0 < 4096, "RSS grew by %ld KiB", rss1 - rss0);
    return check_summary("test_labels_leak");
}
