/* memory_cost.c: what the memory profile costs.
 *
 *   memory_cost [ROUNDS]      (default 5)
 *
 * mmap: a worker (this program again) maps 64 KiB, touches a page and
 * unmaps it, 200,000 times, and prints the wall time per round trip; each
 * round runs it without libpprof and with it preloaded (LIBPPROF_ADDR
 * unset), in an order that alternates, and prints both and their
 * difference. Then the medians of the rounds.
 *
 * answer: a worker with libpprof preloaded holds about 1 GB: 512 MiB of
 * heap objects of 1 to 64 KiB, 256 MiB in 1 MiB blocks (glibc maps those),
 * 256 MiB touched in its own mmap arena. It builds the memory profile
 * through the public API (looked up in the preloaded library), writes it
 * gzipped to /dev/null, and prints the time of each step, its resident
 * set, and how much the program's own heap (mallinfo2's bytes in use)
 * changed across each: building the profile allocates only from the
 * profiler's own heap; writing it is the caller's (the server's threads
 * write from the profiler's own heap too). Each round prints one such line; then the medians.
 */
#define _GNU_SOURCE
#include "bench.h"
#include "pprof.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define TRIPS 200000

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int mmap_worker(void)
{
    double t0 = now_ms();
    for (int i = 0; i < TRIPS; i++) {
        char *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 1;
        p[i % 65536] = 1;
        munmap(p, 65536);
    }
    printf("%.4f\n", (now_ms() - t0) * 1e3 / TRIPS);
    return 0;
}

static int discard(void *ctx, const void *buf, size_t len)
{
    (void)ctx;
    (void)buf;
    (void)len;
    return 0;
}

static int answer_worker(void)
{
    int (*rec_new)(pprof_recorder **) = (int (*)(pprof_recorder **))dlsym(RTLD_DEFAULT, "pprof_memory_recorder_new");
    int (*write_to)(pprof_recorder *, pprof_profile **) =
        (int (*)(pprof_recorder *, pprof_profile **))dlsym(RTLD_DEFAULT, "pprof_recorder_write_to");
    int (*pwrite)(const pprof_profile *, pprof_format, pprof_writer) =
        (int (*)(const pprof_profile *, pprof_format, pprof_writer))dlsym(RTLD_DEFAULT, "pprof_profile_write");
    void (*pfree)(pprof_profile *) = (void (*)(pprof_profile *))dlsym(RTLD_DEFAULT, "pprof_profile_free");
    if (!rec_new || !write_to || !pwrite || !pfree)
        return 2;
    static char *keep[1 << 17];
    size_t n = 0, held = 0;
    unsigned seed = 1;
    while (held < (512u << 20)) {
        size_t size = 1024 + (rand_r(&seed) % 64) * 1024;
        keep[n] = malloc(size);
        memset(keep[n++], 1, size);
        held += size;
    }
    for (int i = 0; i < 256; i++) {
        keep[n] = malloc(1u << 20);
        memset(keep[n++], 2, 1u << 20);
    }
    char *arena = mmap(NULL, 256u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(arena, 3, 256u << 20);
    pprof_recorder *r;
    if (rec_new(&r))
        return 3;
    pprof_profile *p;
    write_to(r, &p); /* the first one loads the symbolizer's tables */
    pfree(p);
    size_t heap0 = mallinfo2().uordblks;
    double t0 = now_ms();
    if (write_to(r, &p))
        return 4;
    double t1 = now_ms();
    size_t heap_mid = mallinfo2().uordblks;
    pprof_writer w = {discard, NULL};
    pwrite(p, PPROF_FORMAT_PROTO_GZIP, w);
    double t2 = now_ms();
    size_t heap1 = mallinfo2().uordblks;
    const pprof_sample *s;
    size_t ns;
    s = ((const pprof_sample *(*)(const pprof_profile *, size_t *))dlsym(RTLD_DEFAULT, "pprof_profile_samples"))(p, &ns);
    long long total = 0;
    for (size_t i = 0; i < ns; i++)
        total += s[i].values[0];
    pfree(p);
    printf("%.1f %.1f %lld %lld %lld\n", t1 - t0, t2 - t1, total, (long long)heap_mid - (long long)heap0,
           (long long)heap1 - (long long)heap_mid);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "mmap-worker"))
        return mmap_worker();
    if (argc > 1 && !strcmp(argv[1], "answer-worker"))
        return answer_worker();
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1 || rounds > 100)
        rounds = 5;
    double plain[100], with[100], diff[100], build[100], enc[100];
    char out[256];
    printf("mmap + touch + munmap of 64 KiB, us per round trip (%d trips)\nround plain libpprof difference\n", TRIPS);
    for (int i = 0; i < rounds; i++) {
        char *const av[] = {argv[0], "mmap-worker", NULL};
        for (int k = 0; k < 2; k++) {
            int lib = (i + k) % 2;
            if (bench_run_self(av, bench_preload, lib ? PPROF_LIB : NULL, -1, out, sizeof out))
                return 1;
            (lib ? with : plain)[i] = atof(out);
        }
        diff[i] = with[i] - plain[i];
        printf("%d %.4f %.4f %+.4f\n", i + 1, plain[i], with[i], diff[i]);
    }
    printf("median: plain %.4f libpprof %.4f difference %+.4f us\n", bench_median(plain, rounds),
           bench_median(with, rounds), bench_median(diff, rounds));
    printf("\nthe memory profile of a 1 GB process\nround build_ms write_ms resident_bytes host_heap_change_build host_heap_change_write\n");
    for (int i = 0; i < rounds; i++) {
        char *const av[] = {argv[0], "answer-worker", NULL};
        if (bench_run_self(av, bench_preload, PPROF_LIB, -1, out, sizeof out))
            return 1;
        double b = 0, e = 0;
        long long total = 0, heap = 0, heap_w = 0;
        sscanf(out, "%lf %lf %lld %lld %lld", &b, &e, &total, &heap, &heap_w);
        build[i] = b;
        enc[i] = e;
        printf("%d %.1f %.1f %lld %lld %lld\n", i + 1, b, e, total, heap, heap_w);
    }
    printf("median: build %.1f ms, write %.1f ms\n", bench_median(build, rounds), bench_median(enc, rounds));
    return 0;
}
