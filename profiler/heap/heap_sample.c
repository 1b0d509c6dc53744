/* heap_sample.c: which allocations are sampled, and what a sample records.
 *
 * Sampling is a Poisson process over allocated bytes, as in Go: each thread
 * counts down the bytes until its next sample (pp_heap_left, initial-exec
 * TLS), drawn from an exponential distribution with the configured mean;
 * the allocation that crosses zero is sampled with probability
 * 1 - e^(-size/rate), which is what the profiles' unsampling assumes. A
 * fixed countdown would not do: a periodic pattern of sizes would make it
 * sample the same call site every time.
 *
 * The rate is fixed once chosen: LIBPPROF_HEAP_RATE at start-up, or a call
 * to pprof_heap_set_rate before the first sample (samples taken at
 * different rates cannot be unsampled together). Allocations made before
 * the constructor runs are not sampled.
 *
 * A sampled allocation marks its granule in pp_heap_map (heap_guard.c), so
 * a free looks in the live table only for pointers there. The sample
 * records the caller's stack (every frame a call site) and the thread's
 * label set as the cumulative table keeps it. None of this calls malloc.
 */
#define _GNU_SOURCE
#include "heap.h"
#include "base/base.h"
#include "labels/labels.h"
#include "model/model.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>
#include <unistd.h>

#define RECHECK (1 << 20)            /* countdown while off: look for a new rate */

static __thread uint64_t rng;      /* 0 until the thread's first slow path */

static _Atomic int64_t rate;       /* 0: not started or off */
static _Atomic int64_t epoch = 1;  /* bumped when the rate changes */
static __thread int64_t seen_epoch;
static _Atomic int sampled_once;   /* a sample was taken: the rate is final */
static _Atomic uint64_t n_sampled, n_unrecorded;

/* xorshift64*; malloc-safe */
static uint64_t next_random(void)
{
    if (!rng) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rng = ((uint64_t)syscall(SYS_gettid) << 32) ^ (uint64_t)ts.tv_nsec ^ 0x9e3779b97f4a7c15ull;
    }
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

/* Bytes until the next sample: exponential with mean r. malloc-safe */
static int64_t draw(int64_t r)
{
    if (r <= 1)
        return 0;
    double u = ((next_random() >> 11) + 1) * (1.0 / 9007199254740993.0); /* (0, 1] */
    double d = -log(u) * (double)r;
    return d >= (double)PP_HEAP_NOT_STARTED ? PP_HEAP_NOT_STARTED : (int64_t)d + 1;
}

int pp_heap_should_sample(size_t size)
{
    if (pp_heap_guarded)
        return 0;
    if (pp_heap_is_unpaired()) {
        pp_heap_left = RECHECK; /* back to the fast path */
        return 0;
    }
    int64_t r = atomic_load_explicit(&rate, memory_order_relaxed);
    int64_t e = atomic_load_explicit(&epoch, memory_order_relaxed);
    if (seen_epoch != e) { /* a new thread, or a new rate */
        seen_epoch = e;
        pp_heap_left = r ? draw(r) - (int64_t)size : RECHECK;
        if (r != 1 && pp_heap_left > 0)
            return 0;
    }
    if (!r) {
        pp_heap_left = RECHECK;
        return 0;
    }
    pp_heap_left = draw(r);
    return 1;
}

/* In a forked child, the thread that forked gets a new seed (its new tid)
 * and a new countdown: a parent's children do not sample the same
 * allocations of theirs. async-signal-safe (a fork child handler) */
void pp_heap_sample_fork_child(void)
{
    rng = 0;
    int64_t r = atomic_load_explicit(&rate, memory_order_relaxed);
    if (!pp_heap_guarded && r && seen_epoch == atomic_load_explicit(&epoch, memory_order_relaxed))
        pp_heap_left = draw(r);
}

/* malloc-safe */
int pp_heap_sampled(void *p, size_t size, uint64_t caller)
{
    int64_t saved[2];
    pp_heap_guard_enter(saved);
    atomic_store_explicit(&sampled_once, 1, memory_order_relaxed);
    uint64_t pcs[PPROF_DEFAULT_MAX_FRAMES + 1];
    int end;
    int n = pp_unwind_here(caller, pcs, PPROF_DEFAULT_MAX_FRAMES, &end);
    if (end)
        pcs[n++] = pp_pc_stack_end(end);
    const pprof_labels *labels = pp_labels_cumulative(pp_labels_current_peek());
    int rc = pp_heap_table_alloc(p, size, pcs, (size_t)n, labels);
    if (rc == 0)
        atomic_fetch_add_explicit(&n_sampled, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&n_unrecorded, 1, memory_order_relaxed);
    pp_heap_guard_leave(saved);
    return rc;
}

/* malloc-safe */
int pp_heap_freed(void *p)
{
    if (!pp_heap_table_maybe_live(p))
        return 0;
    int e = errno;
    int sampled = pp_heap_table_free(p);
    errno = e;
    return sampled;
}

/* Other threads see a new rate at their next slow path; the calling
 * thread at its next allocation. */
static void set_rate(int64_t r)
{
    atomic_store(&rate, r);
    if (r > 0)
        pp_heap_peak_set_rate(r); /* a stop keeps the rate the live objects were sampled at */
    atomic_fetch_add(&epoch, 1);
    if (!pp_heap_guarded)
        pp_heap_left = 0;
}

void pp_heap_stop_sampling(void)
{
    set_rate(0);
}

int pp_heap_bytes_requested;

void pp_heap_init(void)
{
    static const char *const units[] = {"allocated", "requested", NULL};
    pp_heap_bytes_requested = pp_env_word("LIBPPROF_HEAP_BYTES", units, 0, "allocated") == 1;
    int r = pp_env_int("LIBPPROF_HEAP_RATE", PPROF_HEAP_DEFAULT_RATE, 0, INT_MAX);
    if (!atomic_load(&rate) && !pp_heap_is_unpaired())
        set_rate(r);
}

int pprof_heap_set_rate(int64_t r)
{
    if (pp_heap_is_unpaired() && r != PPROF_HEAP_OFF)
        return pp_error_detail(PPROF_ENOTSUP, "heap profiling is off: the allocator after libpprof defines malloc "
                                              "without its own free or memalign");
    if (r == 0)
        r = PPROF_HEAP_DEFAULT_RATE;
    if (r < 0 && r != PPROF_HEAP_OFF)
        return pp_error_detail(PPROF_EINVAL, "the heap rate must be positive, 0 (the default) or PPROF_HEAP_OFF, not %lld",
                               (long long)r);
    int64_t want = r == PPROF_HEAP_OFF ? 0 : r, cur = atomic_load(&rate);
    if (want == cur)
        return 0;
    if (atomic_load(&sampled_once)) {
        if (cur)
            return pp_error_detail(PPROF_ERATE, "heap samples were already taken at a rate of %lld bytes", (long long)cur);
        return pp_error_detail(PPROF_ERATE, "heap samples were already taken; sampling is now off");
    }
    set_rate(want);
    return 0;
}

int64_t pprof_heap_rate(void)
{
    return pp_heap_is_unpaired() ? 0 : atomic_load(&rate);
}

void pp_heap_sample_counts(uint64_t *sampled, uint64_t *unrecorded)
{
    *sampled = atomic_load(&n_sampled);
    *unrecorded = atomic_load(&n_unrecorded);
}
