/* test_heap.c: heap sampling estimates what was allocated and what is live.
 * test-labels: plain-only slow
 *
 * Distinct functions allocate known amounts in blocks of 1 KiB, 64 KiB and
 * 24 bytes; the profiles' unsampled values must be within the bounds below
 * of the truth, in the allocator's bytes (each block counts what
 * malloc_usable_size says an unsampled block of its size holds). The parent re-runs this program twice with a fixed rate:
 *   4 KiB rate: each function 64 MiB, all live -> alloc and in-use +-5%;
 *     half freed -> in-use +-5% of what is left; a window in which one
 *     function allocates 32 MiB more shows only that as alloc_space while
 *     in-use still shows the whole live heap; labels ride on samples; a
 *     periodic pattern of sizes (3968 + 128 bytes, one rate per cycle:
 *     a fixed countdown would sample the same site every time) is not
 *     biased (+-5% each).
 *   default rate (512 KiB): each function 2 GiB, all live -> alloc and
 *     in-use +-10%; half freed -> in-use +-10% of what is left.
 *   forked (64 KiB): children forked from one thread sample independently
 *     (forked() below).
 * Bounds are at least 3.9 standard deviations of the estimate (the
 * expected sample counts are printed), so chance fails the whole test far
 * less than once in a thousand runs. Plain build only: it needs the hooks.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"

#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1024ll * 1024)

typedef struct node { struct node *next; char pad[16]; } node; /* 24 bytes */

static void *blocks_1k[2 * 1024 * 1024];
static void *blocks_64k[32 * 1024];
static node *list24;

__attribute__((noinline)) static void alloc_1k(long bytes, long *n)
{
    for (long i = 0; i < bytes / 1024; i++) {
        blocks_1k[*n] = malloc(1024);
        memset(blocks_1k[*n], 1, 8);
        (*n)++;
    }
}

__attribute__((noinline)) static void alloc_64k(long bytes, long *n)
{
    for (long i = 0; i < bytes / 65536; i++) {
        blocks_64k[*n] = malloc(65536);
        memset(blocks_64k[*n], 1, 8);
        (*n)++;
    }
}

__attribute__((noinline)) static void alloc_24(long bytes)
{
    for (long i = 0; i < bytes / 24; i++) {
        node *x = malloc(sizeof *x);
        x->next = list24;
        list24 = x;
    }
}

/* Frees every other object of each function. */
static void free_half(long n1k, long n64k)
{
    for (long i = 0; i < n1k; i += 2)
        free(blocks_1k[i]), blocks_1k[i] = NULL;
    for (long i = 0; i < n64k; i += 2)
        free(blocks_64k[i]), blocks_64k[i] = NULL;
    for (node *x = list24; x && x->next; x = x->next) {
        node *dead = x->next;
        x->next = dead->next;
        free(dead);
    }
}

static void free_all(long n1k, long n64k)
{
    for (long i = 0; i < n1k; i++)
        free(blocks_1k[i]);
    for (long i = 0; i < n64k; i++)
        free(blocks_64k[i]);
    while (list24) {
        node *x = list24;
        list24 = x->next;
        free(x);
    }
}

/* The value of type `index` summed over samples whose leaf function is fn. */
static int64_t sum_fn(const pprof_profile *p, const char *fn, int index)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    int64_t t = 0;
    for (size_t i = 0; i < n; i++) {
        const pprof_location *leaf = s[i].nlocations ? s[i].locations[0] : NULL;
        if (leaf && leaf->nlines && !strcmp(leaf->lines[0].function, fn))
            t += s[i].values[index];
    }
    return t;
}

enum { ALLOC_SPACE = 1, INUSE_SPACE = 3 };

/* The bytes `requested` bytes in blocks of n take, as the allocator counts
 * them: its usable size for a block of n, the least of 8 blocks (one block
 * can be a bigger free chunk that glibc did not split). */
static int64_t in_blocks(int64_t requested, size_t n)
{
    void *b[8];
    int64_t u = INT64_MAX;
    for (int i = 0; i < 8; i++) {
        b[i] = malloc(n);
        int64_t k = (int64_t)malloc_usable_size(b[i]);
        u = k < u ? k : u;
    }
    for (int i = 0; i < 8; i++)
        free(b[i]);
    return requested / (int64_t)n * u;
}

static void near(const pprof_profile *p, const char *fn, int index, int64_t truth, double tol, const char *what)
{
    int64_t got = sum_fn(p, fn, index);
    double err = truth ? (double)(got - truth) / (double)truth : (double)got;
    printf("  %-12s %-10s %-12s truth %11lld  estimate %11lld  error %+.2f%%\n", what, fn,
           index == ALLOC_SPACE ? "alloc_space" : "inuse_space", (long long)truth, (long long)got, 100 * err);
    CHECKF(fabs(err) <= tol, "%s: %s %s off by %.2f%% (bound %.0f%%)", what, fn,
           index == ALLOC_SPACE ? "alloc_space" : "inuse_space", 100 * err, 100 * tol);
}

static pprof_profile *heap_now(void)
{
    pprof_recorder *h;
    pprof_profile *p = NULL;
    CHECK(pprof_heap_recorder_new(NULL, &h) == 0);
    CHECK(pprof_recorder_write_to(h, &p) == 0);
    pprof_recorder_free(h);
    return p;
}

static void check_three(const pprof_profile *p, int index, int64_t each, double tol, const char *what)
{
    near(p, "alloc_1k", index, in_blocks(each, 1024), tol, what);
    near(p, "alloc_64k", index, in_blocks(each, 65536), tol, what);
    near(p, "alloc_24", index, in_blocks(each, 24), tol, what);
}

/* One rate's run: allocate `each` bytes per function, check, free half,
 * check. Returns the window recorder still running. */
static pprof_recorder *run_three(long each, double tol, long *n1k, long *n64k)
{
    pprof_recorder *w;
    CHECK(pprof_alloc_recorder_new(NULL, &w) == 0);
    CHECK(pprof_recorder_start(w) == 0);
    alloc_1k(each, n1k);
    alloc_64k(each, n64k);
    alloc_24(each);
    pprof_profile *p = NULL;
    CHECK(pprof_recorder_snapshot(w, &p) == 0);
    check_three(p, ALLOC_SPACE, each, tol, "window");
    check_three(p, INUSE_SPACE, each, tol, "window");
    pprof_profile_free(p);
    free_half(*n1k, *n64k);
    p = heap_now();
    check_three(p, INUSE_SPACE, each / 2, tol, "half freed");
    pprof_profile_free(p);
    return w;
}

static void *volatile keep; /* the compiler may not drop malloc+free */
__attribute__((noinline)) static void periodic_big(void) { keep = malloc(3968); free(keep); }
__attribute__((noinline)) static void periodic_small(void) { keep = malloc(128); free(keep); }

static void labeled(void *arg)
{
    long n = 0;
    (void)arg;
    alloc_64k(64 * 65536, &n); /* every 64 KiB block is sampled at this rate */
    for (long i = 0; i < n; i++)
        free(blocks_64k[i]);
}

static int rate_4k(void)
{
    CHECK(pprof_heap_rate() == 4096);
    printf("4 KiB rate: about %lld samples per function and pass\n", 64 * MiB / 4096);
    long n1k = 0, n64k = 0;
    pprof_recorder *w = run_three(64 * MiB, 0.05, &n1k, &n64k);
    /* a window: 32 MiB more of 1 KiB blocks; the rest is only live */
    alloc_1k(32 * MiB, &n1k);
    pprof_profile *p = NULL;
    CHECK(pprof_recorder_stop(w, &p) == 0);
    near(p, "alloc_1k", ALLOC_SPACE, in_blocks(32 * MiB, 1024), 0.05, "next window");
    near(p, "alloc_1k", INUSE_SPACE, in_blocks(64 * MiB, 1024), 0.05, "next window");
    CHECK(sum_fn(p, "alloc_64k", ALLOC_SPACE) == 0 && sum_fn(p, "alloc_24", ALLOC_SPACE) == 0);
    near(p, "alloc_64k", INUSE_SPACE, in_blocks(32 * MiB, 65536), 0.05, "next window");
    near(p, "alloc_24", INUSE_SPACE, in_blocks(32 * MiB, 24), 0.05, "next window");
    pprof_profile_free(p);
    pprof_recorder_free(w);
    free_all(n1k, n64k);

    /* a periodic pattern of sizes, one rate per cycle */
    CHECK(pprof_alloc_recorder_new(NULL, &w) == 0);
    CHECK(pprof_recorder_start(w) == 0);
    long cycles = 200000;
    for (long i = 0; i < cycles; i++) {
        periodic_big();
        periodic_small();
    }
    CHECK(pprof_recorder_stop(w, &p) == 0);
    printf("periodic: about %.0f samples of the small size\n", cycles * (1 - exp(-128.0 / 4096)));
    near(p, "periodic_big", ALLOC_SPACE, in_blocks(cycles * 3968, 3968), 0.05, "periodic");
    near(p, "periodic_small", ALLOC_SPACE, in_blocks(cycles * 128, 128), 0.05, "periodic");
    pprof_profile_free(p);
    pprof_recorder_free(w);

    /* labels ride on heap samples */
    pprof_labels *l;
    pprof_label pair = {"job", "import"};
    CHECK(pprof_labels_new(&pair, 1, &l) == 0);
    CHECK(pprof_alloc_recorder_new(NULL, &w) == 0);
    CHECK(pprof_recorder_start(w) == 0);
    pprof_do(l, labeled, NULL);
    CHECK(pprof_recorder_stop(w, &p) == 0);
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    int64_t labeled_bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].nlabels == 1 && !strcmp(s[i].labels[0].value, "import") && s[i].nnum_labels == 1 &&
            s[i].num_labels[0].value == 65536)
            labeled_bytes += s[i].values[ALLOC_SPACE];
    CHECKF(llabs(labeled_bytes - in_blocks(64 * 65536, 65536)) <= 65536, "labeled 64 KiB blocks: %lld bytes", (long long)labeled_bytes);
    pprof_profile_free(p);
    pprof_recorder_free(w);
    pprof_labels_unref(l);

    /* the rate is fixed now */
    CHECK(pprof_heap_set_rate(8192) == PPROF_ERATE);
    CHECK(strstr(pprof_last_error(), "4096") != NULL);
    pprof_heap_config bad = {.rate = 8192};
    CHECK(pprof_alloc_recorder_new(&bad, &w) == PPROF_ERATE);
    CHECK(pprof_heap_set_rate(4096) == 0);
    CHECK(pprof_heap_set_rate(-5) == PPROF_EINVAL);
    return check_summary("test_heap (4 KiB rate)");
}

static int rate_default(void)
{
    CHECK(pprof_heap_rate() == PPROF_HEAP_DEFAULT_RATE);
    printf("default rate: about %lld samples per function, %lld after freeing half\n",
           2048 * MiB / PPROF_HEAP_DEFAULT_RATE, 1024 * MiB / PPROF_HEAP_DEFAULT_RATE);
    long n1k = 0, n64k = 0;
    pprof_recorder *w = run_three(2048 * MiB, 0.10, &n1k, &n64k);
    pprof_recorder_free(w);
    free_all(n1k, n64k);
    return check_summary("test_heap (default rate)");
}

/* Four children forked from one thread make the same allocations (10 MiB
 * in 1 KiB blocks at a 64 KiB rate: about 160 samples each): their sample
 * counts are not all equal, as they were when each child went on with its
 * parent's random state (chance alone makes four independent counts equal
 * about once in 10^5 runs). */
static int forked(void)
{
    enum { KIDS = 4, BLOCKS = 10240 };
    static void *warm[2048]; /* the parent samples first: its random state is set */
    for (int i = 0; i < 2048; i++)
        warm[i] = malloc(1024);
    for (int i = 0; i < 2048; i++)
        free(warm[i]);
    int fds[2];
    CHECK(pipe(fds) == 0);
    for (int k = 0; k < KIDS; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            pprof_heap_stats a, b;
            pprof_heap_stats_get(&a);
            static void *keep[BLOCKS];
            for (int i = 0; i < BLOCKS; i++)
                keep[i] = malloc(1024);
            pprof_heap_stats_get(&b);
            uint64_t n = b.sampled - a.sampled;
            _exit(write(fds[1], &n, sizeof n) == sizeof n && keep[BLOCKS - 1] ? 0 : 1);
        }
        CHECK(pid > 0);
    }
    uint64_t n[KIDS];
    int differ = 0;
    for (int k = 0; k < KIDS; k++) {
        CHECK(read(fds[0], &n[k], sizeof n[k]) == sizeof n[k]);
        differ |= n[k] != n[0];
        int st;
        CHECK(wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    printf("forked children's samples: %llu %llu %llu %llu\n", (unsigned long long)n[0], (unsigned long long)n[1],
           (unsigned long long)n[2], (unsigned long long)n[3]);
    CHECK(differ);
    CHECK(n[0] > 60 && n[0] < 300);
    return check_summary("test_heap (forked children)");
}

static int run_child(const char *mode, const char *rate)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (rate)
            setenv("LIBPPROF_HEAP_RATE", rate, 1);
        else
            unsetenv("LIBPPROF_HEAP_RATE");
        execl("/proc/self/exe", "test_heap", mode, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "4k"))
        return rate_4k();
    if (argc > 1 && !strcmp(argv[1], "default"))
        return rate_default();
    if (argc > 1 && !strcmp(argv[1], "forked"))
        return forked();
    int a = run_child("4k", "4096");
    int b = run_child("default", NULL);
    int c = run_child("forked", "65536");
    CHECK(a == 0);
    CHECK(b == 0);
    CHECK(c == 0);
    return check_summary("test_heap");
}
