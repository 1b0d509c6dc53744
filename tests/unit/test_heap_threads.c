/* test_heap_threads.c: the heap tables under concurrent sampling.
 * test-labels: plain-only quick
 *
 * Four threads allocate and free objects of random sizes in a sliding
 * window (malloc, calloc, realloc, aligned_alloc), sampled often
 * (LIBPPROF_HEAP_RATE=256, set by re-executing itself), while a fifth
 * takes heap profiles and allocation windows without pause. Afterwards
 * every object is freed, so the raw counts must balance exactly: each
 * call site's sampled in-use objects are 0 and its allocations equal its
 * frees. A lost or doubled update under the races would leave a residue.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define OPS 300000
#define WINDOW 512

static _Atomic int running = 1;

__attribute__((noinline)) static void *churn_alloc(unsigned r)
{
    size_t n = 16 + r % 2000;
    void *p;
    switch (r % 4) {
    case 0: p = malloc(n); break;
    case 1: p = calloc(1, n); break;
    case 2: p = aligned_alloc(64, (n + 63) & ~(size_t)63); break;
    default: p = realloc(NULL, n); break;
    }
    __asm__ volatile("" ::: "memory"); /* no tail calls: this frame is the call site */
    return p;
}

__attribute__((noinline)) static void *churn_grow(void *p, unsigned r)
{
    void *q = realloc(p, 16 + r % 4000);
    __asm__ volatile("" ::: "memory");
    return q;
}

static void *churner(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 7919 + 1;
    void *slots[WINDOW] = {0};
    for (int i = 0; i < OPS; i++) {
        unsigned r = (unsigned)rand_r(&seed);
        int k = (int)(r % WINDOW);
        if (slots[k] && (r >> 20) % 3 == 0) {
            void *q = churn_grow(slots[k], r >> 4);
            if (q)
                slots[k] = q;
            continue;
        }
        free(slots[k]);
        slots[k] = churn_alloc(r >> 3);
    }
    for (int k = 0; k < WINDOW; k++)
        free(slots[k]);
    return NULL;
}

static void *profiler(void *arg)
{
    (void)arg;
    pprof_recorder *h, *w;
    pprof_heap_config raw = {.raw = 1};
    pprof_heap_recorder_new(&raw, &h);
    pprof_alloc_recorder_new(&raw, &w);
    pprof_recorder_start(w);
    long n = 0;
    while (atomic_load(&running)) {
        pprof_profile *p = NULL;
        if (pprof_recorder_write_to(h, &p) == 0)
            pprof_profile_free(p);
        if (pprof_recorder_snapshot(w, &p) == 0)
            pprof_profile_free(p);
        n++;
    }
    pprof_recorder_free(w);
    pprof_recorder_free(h);
    return (void *)n;
}

int main(int argc, char **argv)
{
    (void)argc;
    rerun_with_heap_rate("256", argv);
    pthread_t t[THREADS], prof;
    pthread_create(&prof, NULL, profiler, NULL);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churner, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&running, 0);
    void *profiles;
    pthread_join(prof, &profiles);

    pprof_recorder *h;
    pprof_heap_config raw = {.raw = 1};
    pprof_profile *p = NULL;
    CHECK(pprof_heap_recorder_new(&raw, &h) == 0 && pprof_recorder_write_to(h, &p) == 0);
    int64_t a1 = sum_of(p, "churn_alloc", 0), u1 = sum_of(p, "churn_alloc", 2);
    int64_t a2 = sum_of(p, "churn_grow", 0), u2 = sum_of(p, "churn_grow", 2);
    printf("%ld profiles taken meanwhile; churn_alloc: %lld sampled, %lld left in use; churn_grow: %lld sampled, "
           "%lld left in use\n",
           (long)(intptr_t)profiles, (long long)a1, (long long)u1, (long long)a2, (long long)u2);
    CHECK(a1 > 10000 && a2 > 1000);
    CHECK(u1 == 0);
    CHECK(u2 == 0);
    CHECK((long)(intptr_t)profiles > 10);
    pprof_heap_stats st;
    pprof_heap_stats_get(&st);
    CHECK(st.unrecorded == 0);
    pprof_profile_free(p);
    pprof_recorder_free(h);
    return check_summary("test_heap_threads");
}
