/* test_own_heap.c: the profiler's own heap (heap/own_heap.c).
 * test-labels: plain-only quick
 *
 * Between pp_own_heap_enter and leave, every entry of the malloc family
 * gives blocks of the own heap (aligned as asked, usable sizes at least
 * the request, calloc's zeroed even when a block is reused, realloc's
 * contents kept, errno kept by free), none of them sampled even at LIBPPROF_HEAP_RATE=1 (the
 * parent re-runs this program with it); outside, allocations are the next
 * allocator's again, and another thread frees, reallocs and sizes the own
 * heap's blocks through the plain entry points. pprof_heap_stats counts
 * its bytes. A symbolizer session's allocations (a CPU profile written)
 * are the own heap's.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "base/base.h"
#include "heap/heap.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N = 2000 };
static void *blocks[N];

static void *free_elsewhere(void *arg)
{
    (void)arg;
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0)
            blocks[i] = realloc(blocks[i], 3 * (size_t)i + 100);
        CHECK(malloc_usable_size(blocks[i]) >= (size_t)i);
        free(blocks[i]);
    }
    return NULL;
}

static int run(void)
{
    pprof_heap_stats a, b;
    pprof_heap_stats_get(&a);
    pp_own_heap_enter();
    int inside = 1, aligned = 1, usable = 1;
    for (int i = 0; i < N; i++) {
        size_t n = (size_t)i * 7 % 70000 + (size_t)i;
        blocks[i] = malloc(n ? n : 1);
        memset(blocks[i], 0xab, n);
        inside &= pp_own_owns(blocks[i]);
        aligned &= ((uintptr_t)blocks[i] & 15) == 0;
        usable &= malloc_usable_size(blocks[i]) >= n;
    }
    void *c = calloc(100, 40), *m = memalign(4096, 5000), *al = aligned_alloc(256, 512), *v = valloc(100), *pm = NULL;
    int prc = posix_memalign(&pm, 64, 1000);
    CHECK(inside && aligned && usable);
    CHECK(pp_own_owns(c) && pp_own_owns(m) && pp_own_owns(al) && pp_own_owns(v) && prc == 0 && pp_own_owns(pm));
    CHECK(((uintptr_t)m & 4095) == 0 && ((uintptr_t)al & 255) == 0 && ((uintptr_t)v & 4095) == 0 &&
          ((uintptr_t)pm & 63) == 0);
    CHECK(malloc_usable_size(m) >= 5000 && malloc_usable_size(pm) >= 1000);
    /* a reused block is zeroed by calloc; realloc keeps the bytes */
    char *r = malloc(4000);
    memset(r, 0x5a, 4000);
    free(r);
    char *z = calloc(1, 4000);
    int zero = 1;
    for (int i = 0; i < 4000; i++)
        zero &= z[i] == 0;
    CHECK(zero);
    char *g = malloc(10);
    memcpy(g, "own heap!", 10);
    g = realloc(g, 1000000);
    CHECK(pp_own_owns(g) && !memcmp(g, "own heap!", 10));
    errno = EINTR;
    free(g); /* a big block gives its pages back, and free keeps errno */
    CHECK(errno == EINTR);
    free(z);
    pp_own_heap_leave();
    pprof_heap_stats_get(&b);
    /* none of the 2,000 and more sampled (reading the stats may allocate a few) */
    CHECK(b.sampled - a.sampled < 20);
    CHECK(b.own_heap_bytes >= a.own_heap_bytes + 1000000 && b.own_heap_mapped >= b.own_heap_bytes);
    void *out = malloc(100);
    CHECK(!pp_own_owns(out));
    free(out);
    free(c);
    free(m);
    free(al);
    free(v);
    free(pm);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_elsewhere, NULL) == 0);
    pthread_join(t, NULL);
    pprof_heap_stats_get(&b);
    printf("own heap: %llu bytes in use, %llu mapped, %llu fell back\n", (unsigned long long)b.own_heap_bytes,
           (unsigned long long)b.own_heap_mapped, (unsigned long long)b.own_heap_fallbacks);
    CHECK(b.own_heap_bytes < 100000); /* all freed */
    uint64_t before = b.own_heap_bytes;

    /* a profile's symbolization reads debug information from the own heap
     * (and keeps what it read there: 98 KiB on arm64, more on x86-64) */
    pprof_recorder *rec;
    pprof_profile *p;
    CHECK(pprof_cpu_recorder_new(NULL, &rec) == 0 && pprof_recorder_start(rec) == 0);
    CHECK(pprof_recorder_stop(rec, &p) == 0);
    pprof_buffer buf = {0};
    CHECK(pprof_profile_write(p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&buf)) == 0);
    pprof_profile_free(p);
    pprof_buffer_free(&buf);
    pprof_recorder_free(rec);
    pprof_heap_stats_get(&b);
    printf("after a profile: %llu bytes of the own heap in use\n", (unsigned long long)b.own_heap_bytes);
    CHECK(b.own_heap_bytes > before + 32768);
    return check_summary("test_own_heap");
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        return run();
    pid_t pid = fork();
    if (pid == 0) {
        setenv("LIBPPROF_HEAP_RATE", "1", 1);
        execl("/proc/self/exe", "test_own_heap", "run", (char *)NULL);
        _exit(127);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return check_summary("test_own_heap (parent)");
}
