/* malloc_overhead_worker.c: one run of malloc_overhead (its driver,
 * malloc_overhead.c, describes the benchmarks): the process the driver
 * starts under each configuration, as `malloc_overhead worker
 * probe|mix|pair|sampled ...`. It prints its figures on one line of
 * key=value pairs, with which library provides malloc.
 */
#define _GNU_SOURCE
#include "malloc_overhead.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static size_t pick_size(uint64_t *s)
{
    uint64_t r = xorshift(s);
    unsigned big = (unsigned)(r >> 48) % 100, cls = (unsigned)(r >> 32 & 0xffff) % 100;
    uint32_t v = (uint32_t)r;
    if (big < 3)
        return 4096 + v % (65536 - 4096 + 1);
    if (cls < 50)
        return 16 + v % 49;
    if (cls < 80)
        return 65 + v % 64;
    if (cls < 95)
        return 129 + v % 128;
    return 257 + v % 256;
}

static void oom(size_t n)
{
    fprintf(stderr, "malloc_overhead: allocation of %zu bytes failed\n", n);
    _exit(3);
}

/* Which object provides malloc in this process, and whether the
 * allocator's own profiler is on (1/0; -1 when it cannot tell). */
static void describe(char *from, size_t n, int *prof)
{
    Dl_info di;
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    const char *f = m && dladdr(m, &di) && di.dli_fname ? di.dli_fname : "?";
    const char *slash = strrchr(f, '/');
    snprintf(from, n, "%s", slash ? slash + 1 : f);
    *prof = -1;
    int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
        (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
    int (*running)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "IsHeapProfilerRunning");
    if (mallctl) {
        bool on = false;
        size_t len = sizeof on;
        if (mallctl("opt.prof", &on, &len, NULL, 0) == 0)
            *prof = on;
    } else if (running) {
        *prof = running() != 0;
    }
}

static void print_tail(void)
{
    char from[128];
    int prof;
    describe(from, sizeof from, &prof);
    printf(" malloc_from=%s prof=%d\n", from, prof);
}

typedef struct mix_arg {
    int id;
    long ops, done;
    double cap_s;
    pthread_barrier_t *start, *end;
    uint64_t sum;
} mix_arg;

static void *mix_thread(void *p)
{
    mix_arg *a = p;
    char *ring[RING];
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(a->id + 1), sum = 0;
    for (int i = 0; i < RING; i++) {
        size_t sz = pick_size(&s);
        if (!(ring[i] = malloc(sz)))
            oom(sz);
        ring[i][0] = (char)i;
    }
    pthread_barrier_wait(a->start);
    double deadline = now(CLOCK_MONOTONIC) + a->cap_s;
    long i = 0;
    for (; i < a->ops; i++) {
        if ((i & 4095) == 0 && now(CLOCK_MONOTONIC) > deadline)
            break;
        uint64_t r = xorshift(&s);
        unsigned slot = (unsigned)r & (RING - 1), kind = (unsigned)(r >> 16) % 100;
        size_t sz = pick_size(&s);
        char *old = ring[slot], *q;
        sum += (unsigned char)old[0];
        if (kind < 10) {
            q = realloc(old, sz);
        } else {
            free(old);
            q = kind < 20 ? calloc(1, sz) : malloc(sz);
        }
        if (!q)
            oom(sz);
        q[0] = (char)(r >> 40);
        ring[slot] = q;
    }
    a->done = i;
    pthread_barrier_wait(a->end);
    for (int j = 0; j < RING; j++)
        free(ring[j]);
    a->sum = sum;
    return NULL;
}

static int worker_mix(int threads, long ops, long cap_ms)
{
    pthread_barrier_t start, end;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&end, NULL, (unsigned)threads + 1);
    pthread_t t[64];
    mix_arg a[64];
    for (int i = 0; i < threads; i++) {
        a[i] = (mix_arg){.id = i, .ops = ops, .cap_s = cap_ms / 1e3, .start = &start, .end = &end};
        if (pthread_create(&t[i], NULL, mix_thread, &a[i]))
            return 1;
    }
    pthread_barrier_wait(&start);
    double w0 = now(CLOCK_MONOTONIC);
    double c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    pthread_barrier_wait(&end);
    double wall = now(CLOCK_MONOTONIC) - w0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    long done = 0;
    uint64_t sum = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        done += a[i].done;
        sum += a[i].sum;
    }
    printf("ops=%ld wall=%.6f cpu=%.6f check=%llu", done, wall, cpu, (unsigned long long)(sum & 0xffff));
    print_tail();
    return 0;
}

static int worker_pair(long pairs)
{
    for (long i = 0; i < 100000; i++) { /* warm up */
        char *p = malloc(64);
        if (!p)
            oom(64);
        *(volatile char *)p = (char)i;
        free(p);
    }
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    for (long i = 0; i < pairs; i++) {
        char *p = malloc(64);
        if (!p)
            oom(64);
        *(volatile char *)p = (char)i;
        __asm__ volatile("" ::"r"(p) : "memory");
        free(p);
    }
    double wall = now(CLOCK_MONOTONIC) - w0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("pairs=%ld wall=%.6f cpu=%.6f ns_per_pair=%.2f", pairs, wall, cpu, wall * 1e9 / pairs);
    print_tail();
    return 0;
}

static int64_t ts_ns(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec; }

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The timed loop, at the bottom of the call chain; returns pairs done. */
__attribute__((noinline)) static long sampled_leaf(uint32_t *ns, long n, double deadline)
{
    for (int i = 0; i < 2000; i++) { /* warm up */
        char *p = malloc(64);
        if (!p)
            oom(64);
        *(volatile char *)p = 1;
        free(p);
    }
    long i = 0;
    for (; i < n; i++) {
        if ((i & 1023) == 0 && now(CLOCK_MONOTONIC) > deadline)
            break;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        char *p = malloc(64);
        if (!p)
            oom(64);
        *(volatile char *)p = (char)i;
        __asm__ volatile("" ::"r"(p) : "memory");
        free(p);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int64_t d = ts_ns(&t1) - ts_ns(&t0);
        ns[i] = d < 0 ? 0 : d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
    }
    return i;
}

__attribute__((noinline)) static long descend(int depth, uint32_t *ns, long n, double deadline)
{
    if (depth <= 1)
        return sampled_leaf(ns, n, deadline);
    long r = descend(depth - 1, ns, n, deadline);
    __asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
    return r;
}

static int worker_sampled(long n, long cap_ms)
{
    uint32_t *ns = calloc((size_t)n, sizeof *ns), timer[10000];
    if (!ns)
        oom((size_t)n * sizeof *ns);
    for (int i = 0; i < 10000; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        timer[i] = (uint32_t)(ts_ns(&t1) - ts_ns(&t0));
    }
    qsort(timer, 10000, sizeof timer[0], cmp_u32);
    long done = descend(SAMPLED_DEPTH, ns, n, now(CLOCK_MONOTONIC) + cap_ms / 1e3);
    if (done < 1)
        return 1;
    qsort(ns, (size_t)done, sizeof *ns, cmp_u32);
    printf("pairs=%ld median_ns=%u p90_ns=%u p99_ns=%u timer_ns=%u", done, ns[done / 2], ns[done * 9 / 10],
           ns[done * 99 / 100], timer[5000]);
    print_tail();
    free(ns);
    return 0;
}

int mo_worker(int argc, char **argv)
{
    alarm(600); /* a hung run must not hang the benchmark */
    if (argc == 3 && !strcmp(argv[2], "probe")) {
        free(malloc(1));
        printf("probe=1");
        print_tail();
        return 0;
    }
    if (argc == 6 && !strcmp(argv[2], "mix"))
        return worker_mix(atoi(argv[3]), atol(argv[4]), atol(argv[5]));
    if (argc == 4 && !strcmp(argv[2], "pair"))
        return worker_pair(atol(argv[3]));
    if (argc == 5 && !strcmp(argv[2], "sampled"))
        return worker_sampled(atol(argv[3]), atol(argv[4]));
    fprintf(stderr, "bad worker arguments\n");
    return 2;
}
