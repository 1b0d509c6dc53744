/* delta_heap.c: what a delta heap profile costs to make, and what the heap
 * profiler's tables cost per live sampled object.
 *
 * Every allocation is sampled (LIBPPROF_HEAP_RATE=1, set by re-executing
 * itself), and allocations come from N distinct call stacks about 32
 * frames deep: 17 levels that each call one of two functions, chosen by a
 * bit of the stack's number, under 15 levels of plain recursion. For N =
 * 10,000 and 100,000, one object per stack is kept live; an allocation
 * recorder whose first window starts at process start (as delta_heap's)
 * takes a first profile (which symbolizes every address), every stack
 * allocates again, and the next profiles are timed: the snapshot (counts
 * copied, deltas computed, symbols from the cache) and the gzipped
 * protobuf, as delta_heap serves it. Prints every run, the median, the
 * size, and the tables' memory per live sampled object.
 *
 * Usage: delta_heap [runs]   (default 5)
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEVELS 17
#define PAD 11

static void **kept;

__attribute__((noinline)) static void leaf(unsigned long id)
{
    void *p = malloc(64);
    memcpy(p, &id, sizeof id);
    free(kept[id]);
    kept[id] = p;
}

static void step1(unsigned long id, int level);

/* One frame per level: the call site (step0 or step1 calling) differs by
 * the level's bit, so every id gets its own stack. The two are the same
 * function under two names (no tail call: each keeps its frame). */
#define STEP(name)                                                      \
    __attribute__((noinline)) static void name(unsigned long id, int level) \
    {                                                                   \
        if (level == LEVELS)                                            \
            leaf(id);                                                   \
        else if ((id >> level) & 1)                                     \
            step1(id, level + 1);                                       \
        else                                                            \
            step0(id, level + 1);                                       \
        __asm__ volatile("" ::: "memory");                              \
    }
STEP(step0)
STEP(step1)

__attribute__((noinline)) static void pad(unsigned long id, int depth)
{
    if (depth == 0)
        step0(id, 0);
    else
        pad(id, depth - 1);
    __asm__ volatile("" ::: "memory");
}

static double now_ms(void)
{
    return bench_now_ns() / 1e6;
}

static void run(unsigned long stacks, int runs)
{
    kept = calloc(stacks, sizeof *kept);
    for (unsigned long i = 0; i < stacks; i++)
        pad(i, PAD);
    pprof_recorder *r;
    pprof_heap_config cfg = {.from_start = 1};
    pprof_profile *p;
    pprof_buffer buf = {0};
    if (pprof_alloc_recorder_new(&cfg, &r) || pprof_recorder_start(r)) {
        fprintf(stderr, "cannot start: %s\n", pprof_last_error());
        exit(1);
    }
    double t0 = now_ms();
    pprof_recorder_snapshot(r, &p);
    pprof_profile_write(p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&buf));
    double first = now_ms() - t0;
    size_t nsamples;
    pprof_profile_samples(p, &nsamples);
    pprof_profile_free(p);
    printf("%lu stacks: first profile (symbolizing) %.1f ms, %zu samples, %zu bytes gzipped\n", stacks, first,
           nsamples, buf.len);
    double *ms = calloc((size_t)runs, sizeof *ms), *snap_ms = calloc((size_t)runs, sizeof *snap_ms);
    size_t size = 0;
    for (int k = 0; k < runs; k++) {
        for (unsigned long i = 0; i < stacks; i++)
            pad(i, PAD);
        buf.len = 0;
        t0 = now_ms();
        pprof_recorder_snapshot(r, &p);
        snap_ms[k] = now_ms() - t0;
        pprof_profile_write(p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&buf));
        ms[k] = now_ms() - t0;
        pprof_profile_samples(p, &nsamples);
        pprof_profile_free(p);
        size = buf.len;
        printf("  run %d: delta profile %.2f ms (snapshot %.2f ms + gzip protobuf %.2f ms), %zu samples, %zu bytes\n",
               k + 1, ms[k], snap_ms[k], ms[k] - snap_ms[k], nsamples, size);
    }
    bench_sort(ms, runs);
    printf("%lu stacks: median delta profile %.2f ms, %zu bytes gzipped\n", stacks, ms[runs / 2], size);
    pprof_heap_stats st;
    pprof_heap_stats_get(&st);
    printf("tables: %llu records (%llu bytes), %llu live sampled objects (live table %llu bytes): "
           "%.1f bytes per live sampled object in the live table, %.1f in all\n\n",
           (unsigned long long)st.records, (unsigned long long)st.table_bytes,
           (unsigned long long)st.live_sampled, (unsigned long long)st.live_table_bytes,
           (double)st.live_table_bytes / (double)st.live_sampled,
           (double)(st.live_table_bytes + st.table_bytes) / (double)st.live_sampled);
    pprof_buffer_free(&buf);
    pprof_recorder_free(r);
    for (unsigned long i = 0; i < stacks; i++)
        free(kept[i]);
    free(kept);
    free(ms);
    free(snap_ms);
}

int main(int argc, char **argv)
{
    const char *rate = getenv("LIBPPROF_HEAP_RATE");
    if (!rate || strcmp(rate, "1")) {
        setenv("LIBPPROF_HEAP_RATE", "1", 1);
        execv("/proc/self/exe", argv);
        perror("exec");
        return 1;
    }
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1)
        runs = 1;
    printf("delta_heap: stacks of about %d frames, every allocation sampled\n\n", LEVELS + PAD + 6);
    run(10000, runs);
    run(100000, runs);
    return 0;
}
