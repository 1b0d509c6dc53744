/* heap_hooks.c: the malloc family, interposed.
 *
 * Every function forwards to the next allocator (heap_next.c). The fast
 * path of an allocation is one thread-local countdown (heap_sample.c);
 * when it runs out, the slow path decides whether to sample, and a sampled
 * object is allocated as any other and recorded. A free looks in the live
 * table only when the pointer's granule holds a sampled object (one read
 * of pp_heap_map, which also marks the bootstrap buffer and the own heap),
 * and takes the object out of it before releasing it, so an address reused
 * at once by another thread is never confused with it.
 * Pointers from the bootstrap buffer are never released. A thread that
 * allocates from the profiler's own heap (own_heap.c) takes the slow path
 * every time; its blocks are known by their address wherever they go.
 *
 * A sampled object is the block the program would have had, so the size
 * queries need no translation.
 *
 * Each hook passes its own return address down, so the recorded stack
 * starts at the call to malloc in the program and the profiler's frames
 * are not in it. Every function here is malloc-safe by construction.
 */
#ifndef PPROF_NO_HOOKS /* sanitizer builds: their runtime owns malloc */
#define _GNU_SOURCE
#include "heap/heap.h"

#include <errno.h>
#include <malloc.h> /* the prototypes of what is defined here */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))
#define PAGE 4096 /* valloc's and pvalloc's alignment */

/* A sampled object: the block malloc (`align` 0; calloc's when `zero`) or
 * memalign would give, recorded. malloc-safe */
__attribute__((noinline)) static void *sampled_alloc(size_t align, size_t n, int zero, uint64_t caller)
{
    void *p = align ? pp_next.memalign(align, n) : zero ? pp_next.calloc(1, n) : pp_next.malloc(n);
    if (p)
        pp_heap_sampled(p, n, caller);
    return p;
}

/* malloc-safe */
static inline int ready(void)
{
    return LIKELY(pp_next_ready()) || pp_next_resolve();
}

/* malloc-safe */
__attribute__((noinline)) static void *malloc_slow(size_t n, uint64_t caller)
{
    if (!ready())
        return pp_boot_alloc(n, 16);
    if (UNLIKELY(pp_own_depth)) {
        pp_heap_left = PP_OWN_LEFT;
        return pp_own_malloc(16, n);
    }
    if (pp_heap_should_sample(n))
        return sampled_alloc(0, n, 0, caller);
    return pp_next.malloc(n);
}

/* malloc-safe */
API void *malloc(size_t n)
{
    void *(*f)(size_t) = pp_next.malloc;
    if (LIKELY(f != NULL) && LIKELY((pp_heap_left -= (int64_t)n) > 0))
        return f(n);
    return malloc_slow(n, CALLER);
}

/* malloc-safe */
__attribute__((noinline)) static void free_slow(void *p)
{
    if (pp_boot_owns(p))
        return;
    if (pp_own_owns(p)) {
        pp_own_free(p);
        return;
    }
    if (pp_heap_maybe_sampled(p) && pp_heap_freed(p) < 0)
        return; /* the table releases it once a fork lets go (heap_table.c) */
    if (ready())
        pp_next.free(p);
}

/* One look at the map (pp_heap_map): a pointer whose granule holds no
 * sampled object and none of the profiler's own goes straight to the next
 * allocator. malloc-safe */
API void free(void *p)
{
    void (*f)(void *) = __atomic_load_n(&pp_next.free, __ATOMIC_ACQUIRE);
    if (LIKELY(f != NULL) && LIKELY(!pp_heap_map_bits(p))) {
        f(p);
        return;
    }
    if (p)
        free_slow(p);
}

/* The countdown ran out (the own heap's keeps it so), the next allocator
 * is not known yet, or n x size overflows. malloc-safe */
__attribute__((noinline)) static void *calloc_slow(size_t n, size_t size, uint64_t caller)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!ready())
        return pp_boot_alloc(total, 16); /* the buffer is zero and never reused */
    if (UNLIKELY(pp_own_depth)) {
        pp_heap_left = PP_OWN_LEFT;
        void *p = pp_own_malloc(16, total);
        if (p)
            memset(p, 0, total);
        return p;
    }
    if (pp_heap_should_sample(total))
        return sampled_alloc(0, total, 1, caller);
    return pp_next.calloc(n, size);
}

/* As malloc: one countdown on the fast path. malloc-safe */
API void *calloc(size_t n, size_t size)
{
    size_t total;
    void *(*f)(size_t, size_t) = pp_next.calloc;
    if (LIKELY(!__builtin_mul_overflow(n, size, &total)) && LIKELY(f != NULL) &&
        LIKELY((pp_heap_left -= (int64_t)total) > 0))
        return f(n, size);
    return calloc_slow(n, size, CALLER);
}

/* malloc-safe */
static void *realloc_impl(void *p, size_t n, uint64_t caller)
{
    if (pp_own_owns(p)) {
        if (n)
            return pp_own_realloc(p, n);
        pp_own_free(p);
        return NULL;
    }
    int own = pp_own_depth; /* no sampling: the countdown is the own heap's */
    if (!p) {
        if (!ready())
            return pp_boot_alloc(n, 16);
        if (UNLIKELY(own))
            return pp_own_malloc(16, n);
        return pp_heap_take_sample(n) ? sampled_alloc(0, n, 0, caller) : pp_next.malloc(n);
    }
    if (!ready() || pp_boot_owns(p)) {
        size_t old = pp_boot_owns(p) ? pp_boot_size(p) : 0;
        void *q = ready() ? malloc_slow(n, caller) : pp_boot_alloc(n, 16);
        if (q && p)
            memcpy(q, p, old < n ? old : n);
        return q;
    }
    uint32_t rec = 0;
    if (pp_heap_maybe_sampled(p) && pp_heap_table_maybe_live(p))
        rec = pp_heap_table_take(p);
    /* A fork holds the table and p may be sampled: the table must release
     * it once its free is counted, so it moves instead of resizing in place
     * (realloc would release it). */
    int held = rec == PP_HEAP_HELD;
    /* The allocator's usable size, not the record's: an entry can be stale
     * (its free was not seen) and the address reused by a bigger block. */
    size_t old;
    if (n && (held || (!own && pp_heap_take_sample(n))) &&
        ((old = pp_next.usable_size(p)) || (rec && !held && (old = (size_t)pp_heap_rec_get(rec)->key)))) {
        void *q = held ? pp_next.malloc(n) : sampled_alloc(0, n, 0, caller);
        if (!q) {
            if (rec && !held)
                pp_heap_table_put_back(p, rec);
            return NULL;
        }
        memcpy(q, p, old < n ? old : n);
        if (rec)
            pp_heap_table_release(p, rec);
        else
            pp_next.free(p);
        return q;
    }
    if (held && !n) { /* realloc(p, 0) frees p and returns NULL */
        pp_heap_table_release(p, rec);
        return NULL;
    }
    if (held) /* the allocator does not know p's size: leave the table alone */
        rec = 0;
    void *q = pp_next.realloc(p, n);
    if (!q && n) {
        if (rec)
            pp_heap_table_put_back(p, rec);
        return NULL;
    }
    if (rec) /* already out of the live table: the address may be reused by now */
        pp_heap_table_count_free(rec);
    return q;
}

/* The common case inline: a block of the next allocator that is not
 * sampled (its granule's bits are clear: pp_heap_map), resized to a size
 * that leaves the countdown above zero, on a thread outside the own heap
 * (whose countdown is below zero). Everything else, the
 * countdown untouched, goes to realloc_impl. malloc-safe */
API void *realloc(void *p, size_t n)
{
    void *(*f)(void *, size_t) = __atomic_load_n(&pp_next.realloc, __ATOMIC_ACQUIRE);
    int64_t left = pp_heap_left - (int64_t)n;
    if (LIKELY(f != NULL) && LIKELY(left > 0) && LIKELY(!pp_heap_map_bits(p)) && LIKELY(p != NULL) &&
        LIKELY(n != 0)) {
        pp_heap_left = left;
        return f(p, n);
    }
    return realloc_impl(p, n, CALLER);
}

/* malloc-safe */
API void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_impl(p, total, CALLER);
}

/* malloc-safe */
static int pow2(size_t a)
{
    return a && !(a & (a - 1));
}

/* memalign and aligned_alloc: the next allocator's (`aligned`: its
 * aligned_alloc, read once it is resolved) unless sampled. malloc-safe */
static inline __attribute__((always_inline)) void *aligned_entry(size_t align, size_t n, int aligned,
                                                                 uint64_t caller)
{
    if (!ready())
        return pp_boot_alloc(n, align);
    if (UNLIKELY(pp_own_depth) && pow2(align))
        return pp_own_malloc(align, n);
    if (pow2(align) && pp_heap_take_sample(n))
        return sampled_alloc(align, n, 0, caller);
    return aligned ? pp_next.aligned_alloc(align, n) : pp_next.memalign(align, n);
}

/* malloc-safe */
API void *memalign(size_t align, size_t n)
{
    return aligned_entry(align, n, 0, CALLER);
}

/* malloc-safe */
API void *aligned_alloc(size_t align, size_t n)
{
    return aligned_entry(align, n, 1, CALLER);
}

/* malloc-safe */
API int posix_memalign(void **out, size_t align, size_t n)
{
    if (align % sizeof(void *) || !pow2(align))
        return EINVAL;
    if (!ready()) {
        void *p = pp_boot_alloc(n, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    if (UNLIKELY(pp_own_depth) || pp_heap_take_sample(n)) {
        void *p = pp_own_depth ? pp_own_malloc(align, n) : sampled_alloc(align, n, 0, CALLER);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    return pp_next.posix_memalign(out, align, n);
}

/* malloc-safe */
API void *valloc(size_t n)
{
    if (!ready())
        return pp_boot_alloc(n, PAGE);
    if (UNLIKELY(pp_own_depth))
        return pp_own_malloc(PAGE, n);
    if (pp_heap_take_sample(n))
        return sampled_alloc(PAGE, n, 0, CALLER);
    return pp_next.valloc(n);
}

/* malloc-safe */
API void *pvalloc(size_t n)
{
    size_t r = (n + PAGE - 1) & ~(size_t)(PAGE - 1);
    if (r < n) {
        errno = ENOMEM;
        return NULL;
    }
    if (!ready())
        return pp_boot_alloc(r ? r : PAGE, PAGE);
    if (UNLIKELY(pp_own_depth))
        return pp_own_malloc(PAGE, r ? r : PAGE);
    if (pp_heap_take_sample(r))
        return sampled_alloc(PAGE, r ? r : PAGE, 0, CALLER);
    return pp_next.pvalloc(n);
}

/* malloc-safe */
API size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (pp_boot_owns(p))
        return pp_boot_size(p);
    if (pp_own_owns(p))
        return pp_own_usable(p);
    return ready() ? pp_next.usable_size(p) : 0;
}
#endif
