/* own_heap.c: the profiler's own heap, apart from the host's allocator.
 *
 * While a thread reads debug information (pp_own_heap_enter/leave around
 * a symbolizer session), its allocations come from here, not from the
 * next allocator: libdw does not check every allocation (a NULL from
 * malloc can crash it), the host's allocator may fail or count what it
 * gives, and the symbolizer's tables are the profiler's, not the
 * program's. One region of address space is reserved at the first use
 * (1 GiB of PROT_NONE, less under a virtual-memory limit; committed a
 * megabyte at a time); blocks come in size classes
 * a quarter of a power of two apart, each with a 16-byte header, and go
 * back to their class's free list (large ones give their pages back).
 * free, realloc and the size queries know a block of the region by its
 * address, whichever thread calls them.
 *
 * When the region cannot be reserved or committed, or while a fork holds
 * the lock, allocations fall back to the next allocator (whose free then
 * takes them as any other). Every function here is malloc-safe.
 */
#define _GNU_SOURCE
#include "heap.h"
#include "base/base.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define RESERVE (1ull << 30) /* what the program's virtual size grows by; halved down to 64 MiB when refused */
#define COMMIT_STEP (1ull << 20)
#define NCLASSES 160
#define MAGIC 0x6f776e68u /* "ownh" */
#define GIVE_BACK (256u << 10) /* blocks this big give their pages back when freed */

typedef struct header {
    uint32_t magic, cls;
    uint64_t off; /* from the block's start to the payload */
} header;

uintptr_t pp_own_base;
size_t pp_own_size;                      /* 0 until the region is reserved */
__thread int pp_own_depth;
static pp_mutex lock = PP_MUTEX_INIT;
static _Atomic int reserve_failed;
static size_t committed, used;           /* under the lock */
static void *free_list[NCLASSES];
static _Atomic uint64_t in_use, fallbacks;

/* The payload size of class c. malloc-safe */
static size_t class_size(unsigned c)
{
    if (c < 4)
        return 16 * (c + 1);
    size_t p = (size_t)64 << ((c - 4) / 4);
    return p + ((c - 4) % 4 + 1) * (p / 4);
}

/* The smallest class holding n bytes. malloc-safe */
static unsigned class_of(size_t n)
{
    if (n <= 64)
        return n ? (unsigned)((n - 1) / 16) : 0;
    unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1)); /* p = 2^lg < n */
    size_t p = (size_t)1 << lg, q = p / 4;
    return 4 + (lg - 6) * 4 + (unsigned)((n - p + q - 1) / q) - 1;
}

/* A block of class c from the free list or fresh from the region; NULL
 * when the region cannot serve. Under the lock. malloc-safe */
static void *take_locked(unsigned c)
{
    void *b = free_list[c];
    if (b) {
        free_list[c] = *(void **)b;
        return b;
    }
    size_t need = sizeof(header) + class_size(c);
    if (used + need > committed) {
        size_t grow = (used + need - committed + COMMIT_STEP - 1) & ~(COMMIT_STEP - 1);
        if (committed + grow > pp_own_size ||
            mprotect((void *)(pp_own_base + committed), grow, PROT_READ | PROT_WRITE) != 0)
            return NULL;
        pp_heap_map_own(pp_own_base + committed, grow); /* free's fast path must not take its blocks */
        committed += grow;
    }
    b = (void *)(pp_own_base + used);
    used += need;
    return b;
}

/* Reserves the region once. malloc-safe */
static int reserved(void)
{
    if (pp_own_size)
        return 1;
    if (atomic_load(&reserve_failed))
        return 0;
    size_t size = RESERVE;
    void *r;
    while (!(r = pp_map(size, PROT_NONE, MAP_NORESERVE, "its own heap: symbolizer, server, profiles")) &&
           size > (64u << 20)) /* under a ulimit -v, say */
        size /= 2;
    if (!r) {
        atomic_store(&reserve_failed, 1);
        return 0;
    }
    pp_own_base = (uintptr_t)r;
    __atomic_store_n(&pp_own_size, size, __ATOMIC_RELEASE);
    return 1;
}

/* n bytes aligned to align (a power of two of at least 16) from the
 * region, or NULL when it cannot serve. malloc-safe */
static void *own_alloc(size_t align, size_t n)
{
    size_t extra = align > 16 ? align : 0;
    if (n > (1ull << 40) || !pp_mutex_lock_hook(&lock))
        return NULL;
    void *b = NULL;
    unsigned c = class_of(n + extra);
    if (reserved() && c < NCLASSES)
        b = take_locked(c);
    pp_mutex_unlock(&lock);
    if (!b)
        return NULL;
    uintptr_t p = ((uintptr_t)b + sizeof(header) + align - 1) & ~(uintptr_t)(align - 1);
    header *h = (header *)p - 1;
    h->magic = MAGIC;
    h->cls = c;
    h->off = p - (uintptr_t)b;
    atomic_fetch_add_explicit(&in_use, sizeof(header) + class_size(c), memory_order_relaxed);
    return (void *)p;
}

/* malloc-safe */
void *pp_own_malloc(size_t align, size_t n)
{
    void *p = own_alloc(align < 16 ? 16 : align, n);
    if (p)
        return p;
    atomic_fetch_add_explicit(&fallbacks, 1, memory_order_relaxed);
    return align <= 16 ? pp_next.malloc(n) : pp_next.memalign(align, n);
}

/* malloc-safe */
size_t pp_own_usable(const void *p)
{
    const header *h = (const header *)p - 1;
    return class_size(h->cls) - (size_t)(h->off - sizeof(header));
}

/* malloc-safe */
void pp_own_free(void *p)
{
    header *h = (header *)p - 1;
    if (h->magic != MAGIC || h->cls >= NCLASSES)
        return; /* not a block's start: leave it alone rather than corrupt a list */
    unsigned c = h->cls;
    void *b = (char *)p - h->off;
    size_t size = sizeof(header) + class_size(c);
    h->magic = 0;
    if (size >= GIVE_BACK) { /* its pages back, but the first (the list's link) */
        uintptr_t from = ((uintptr_t)b + 4096 + 4095) & ~(uintptr_t)4095, to = ((uintptr_t)b + size) & ~(uintptr_t)4095;
        int e = errno; /* free keeps errno */
        if (to > from)
            madvise((void *)from, to - from, MADV_DONTNEED);
        errno = e;
    }
    atomic_fetch_sub_explicit(&in_use, size, memory_order_relaxed);
    if (!pp_mutex_lock_hook(&lock))
        return; /* a fork holds the list: the block is lost, not reused */
    *(void **)b = free_list[c];
    free_list[c] = b;
    pp_mutex_unlock(&lock);
}

/* malloc-safe */
void *pp_own_realloc(void *p, size_t n)
{
    size_t have = pp_own_usable(p);
    if (n <= have && n >= have / 2)
        return p;
    void *q = pp_own_malloc(16, n);
    if (!q)
        return NULL;
    memcpy(q, p, n < have ? n : have);
    pp_own_free(p);
    return q;
}

static __thread int64_t saved_left; /* the sampling countdown, put back on leaving */

/* malloc-safe */
static void enter(void)
{
    if (pp_own_depth++ == 0) {
        saved_left = pp_heap_left;
        pp_heap_left = PP_OWN_LEFT;
    }
}

/* malloc-safe */
static void leave(void)
{
    if (pp_own_depth > 0 && --pp_own_depth == 0)
        pp_heap_left = saved_left;
}

/* malloc-safe */
static int active(void)
{
    return pp_own_depth > 0;
}

/* Registered with base/ by the constructor (lifecycle.c). */
void pp_own_heap_init(void)
{
    static const pp_own_heap_ops ops = {enter, leave, active};
    pp_own_heap_register(&ops);
}

void pp_own_heap_stats(uint64_t *bytes_in_use, uint64_t *bytes_mapped, uint64_t *fell_back)
{
    *bytes_in_use = atomic_load(&in_use);
    *bytes_mapped = __atomic_load_n(&committed, __ATOMIC_RELAXED);
    *fell_back = atomic_load(&fallbacks);
}

/* Fork: the lists are consistent in the child (taken by the prepare
 * handler, released by both sides). */
void pp_own_heap_fork_prepare(void)
{
    pp_mutex_lock(&lock);
}

void pp_own_heap_fork_parent(void)
{
    pp_mutex_unlock(&lock);
}

void pp_own_heap_fork_child(void)
{
    pp_mutex_unlock(&lock);
}
