// test_heap_hooks.cpp: every interposed allocation function, with every
// allocation sampled (LIBPPROF_HEAP_RATE=1, set by re-executing itself).
// test-labels: plain-only quick
//
// Each function is called from its own function here, a known number of
// times with a known size, and some of the objects are released by the
// matching call; the heap profile must then show exactly those counts (at
// rate 1 nothing is scaled; bytes are the allocator's: each object counts
// the usable size of a malloc'd block of its size), and each call must still behave as its
// contract says: alignment, zeroing, contents kept across realloc, errors
// for bad arguments, usable size, nothrow new.
#include "pprof.h"
#include "check.h"

#include <errno.h>
#include <malloc.h>
#include <new>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern "C" void __libc_free(void *);
extern "C" void *__libc_malloc(size_t);

#define N 50
static void *objs[16][N];

// inuse objects and alloc objects of samples whose leaf function's name
// starts with fn.
static void counts(const pprof_profile *p, const char *fn, int64_t *alloc, int64_t *inuse, int64_t *bytes)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    *alloc = *inuse = *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const pprof_location *leaf = s[i].nlocations ? s[i].locations[0] : NULL;
        if (leaf && leaf->nlines && !strncmp(leaf->lines[0].function, fn, strlen(fn))) {
            *alloc += s[i].values[0];
            *inuse += s[i].values[2];
            *bytes += s[i].values[3];
        }
    }
}

#define SITE(name, body) __attribute__((noinline)) static void name(int i) { body; }

SITE(use_malloc, objs[0][i] = malloc(100))
SITE(use_calloc, objs[1][i] = calloc(10, 30))
SITE(use_realloc_grow, objs[2][i] = realloc(objs[2][i], 5000))
SITE(use_memalign, objs[3][i] = memalign(64, 200))
SITE(use_aligned_alloc, objs[4][i] = aligned_alloc(8192, 8192))
SITE(use_posix_memalign, if (posix_memalign(&objs[5][i], 32, 300)) objs[5][i] = NULL)
SITE(use_valloc, objs[6][i] = valloc(10))
SITE(use_pvalloc, objs[7][i] = pvalloc(10))
SITE(use_reallocarray, objs[8][i] = reallocarray(NULL, 7, 11))
SITE(use_new, objs[9][i] = new char[333])
SITE(use_new_nothrow, objs[10][i] = new (std::nothrow) char[444])
SITE(use_new_aligned, objs[11][i] = new (std::align_val_t(256)) char[555])

// Releases the objects of round i, each by the call that matches its allocation.
static void release(int i)
{
    for (int k = 0; k < 9; k++)
        free(objs[k][i]);
    delete[] (char *)objs[9][i];
    delete[] (char *)objs[10][i];
    operator delete[](objs[11][i], std::align_val_t(256));
}

static void check_site(pprof_profile *p, const char *fn, int64_t alloc, int64_t inuse, int64_t requested)
{
    int64_t a, u, b;
    counts(p, fn, &a, &u, &b);
    void *block = malloc((size_t)requested);
    int64_t size = (int64_t)malloc_usable_size(block);
    free(block);
    CHECKF(a == alloc && u == inuse && b == inuse * size, "%s: alloc %lld in use %lld (%lld bytes), want %lld %lld (%lld)",
           fn, (long long)a, (long long)u, (long long)b, (long long)alloc, (long long)inuse, (long long)(inuse * size));
}

int main(int argc, char **argv)
{
    (void)argc;
    rerun_with_heap_rate("1", argv);
    CHECK(pprof_heap_rate() == 1);
    for (int i = 0; i < N; i++) {
        use_malloc(i);
        use_calloc(i);
        objs[2][i] = malloc(10);
        memset(objs[2][i], 0x5a, 10);
        use_realloc_grow(i);
        use_memalign(i);
        use_aligned_alloc(i);
        use_posix_memalign(i);
        use_valloc(i);
        use_pvalloc(i);
        use_reallocarray(i);
        use_new(i);
        use_new_nothrow(i);
        use_new_aligned(i);
    }
    int zero = 1, kept = 1, aligned = 1;
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 300; k++)
            zero &= ((char *)objs[1][i])[k] == 0;
        for (int k = 0; k < 10; k++)
            kept &= ((char *)objs[2][i])[k] == 0x5a;
        aligned &= ((uintptr_t)objs[3][i] % 64 == 0) && ((uintptr_t)objs[4][i] % 8192 == 0) &&
                   ((uintptr_t)objs[5][i] % 32 == 0) && ((uintptr_t)objs[6][i] % 4096 == 0) &&
                   ((uintptr_t)objs[11][i] % 256 == 0);
        CHECK(malloc_usable_size(objs[0][i]) >= 100);
    }
    CHECK(zero);
    CHECK(kept);
    CHECK(aligned);
    void *bad = NULL;
    CHECK(posix_memalign(&bad, 3, 10) == EINVAL && bad == NULL);
    volatile size_t huge = SIZE_MAX; // the compiler must not see the overflow
    errno = 0;
    CHECK(reallocarray(NULL, huge, 2) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(huge, 2) == NULL && errno == ENOMEM);
    free(NULL);

    // release half of each by the matching call
    for (int i = 0; i < N; i += 2)
        release(i);
    pprof_recorder *r;
    pprof_heap_config cfg = {};
    cfg.raw = 1;
    pprof_profile *p = NULL;
    CHECK(pprof_heap_recorder_new(&cfg, &r) == 0);
    CHECK(pprof_recorder_write_to(r, &p) == 0);
    static const struct {
        const char *fn;
        int64_t size;
    } sites[] = {
        {"use_malloc", 100},
        {"use_calloc", 300},
        {"use_realloc_grow", 5000},
        {"use_memalign", 200},
        {"use_aligned_alloc", 8192},
        {"use_posix_memalign", 300},
        {"use_valloc", 10},
        {"use_pvalloc", 4096},
        {"use_reallocarray", 77},
        {"use_new(", 333},
        {"use_new_nothrow", 444},
        {"use_new_aligned", 555},
    };
    for (const auto &s : sites)
        check_site(p, s.fn, N, N / 2, s.size);
    pprof_profile_free(p);

    // the realloc of a sampled block to a smaller size frees the old record's object
    for (int i = 1; i < N; i += 2)
        objs[2][i] = realloc(objs[2][i], 16);
    CHECK(pprof_recorder_write_to(r, &p) == 0);
    check_site(p, "use_realloc_grow", N, 0, 5000);
    pprof_profile_free(p);
    pprof_recorder_free(r);

    /* a sampled block freed where the hooks cannot see (a library opened
     * with RTLD_DEEPBIND calls libc's free), its address handed out again
     * for a bigger request: realloc keeps all of that block's bytes. glibc's
     * per-thread cache hands the same chunk (1008 bytes) back at once. */
    char *lost = (char *)malloc(985);
    __libc_free(lost);
    char *reused = (char *)__libc_malloc(1000);
    if (reused == lost) {
        memset(reused, 'x', 1000);
        char *grown = (char *)realloc(reused, 6000);
        size_t kept_bytes = 0;
        while (kept_bytes < 1000 && grown[kept_bytes] == 'x')
            kept_bytes++;
        CHECKF(kept_bytes == 1000, "realloc kept %zu of 1000 bytes", kept_bytes);
        free(grown);
    } else {
        __libc_free(reused);
        printf("(the stale-entry realloc case did not arise: the address was not reused)\n");
    }
    for (int i = 1; i < N; i += 2)
        release(i);
    return check_summary("test_heap_hooks");
}
