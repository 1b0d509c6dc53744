/* heap.h: the interface of heap/, heap and allocation sampling.
 *
 * The allocation hooks (interpose/heap_hooks*.c) forward to the next
 * allocator (heap_next.c) and sample a Poisson process with a thread-local
 * countdown (heap_sample.c); a sampled object is an ordinary block of the
 * next allocator, recorded by (stack, labels, size) with its address in a
 * live table (heap_table.c) that a free looks in only when a map of
 * granules says it may be there; profiles unsample the raw counts as Go
 * does (heap_profile.c). Windows are differences of record snapshots, with
 * in-use values always absolute.
 *
 * Invariants: everything the hooks reach is malloc-safe (no malloc, mmap'd
 * memory, one futex lock never held while calling out and never waited
 * for during a fork); the fast path of an allocation is one countdown.
 */
#ifndef PP_HEAP_H
#define PP_HEAP_H
#include "pprof.h"
#include "store/store.h"
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The hooks' globals are the library's own: declared hidden, the hooks
 * reach them directly rather than through the GOT (an instruction and a
 * load fewer per malloc and free). */
#define PP_HEAP_HIDDEN __attribute__((visibility("hidden")))

/* --- the next allocator in the chain (heap_next.c) --- */
typedef struct pp_next_alloc {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable_size)(void *);
} pp_next_alloc;

/* Filled by pp_next_resolve; all non-NULL afterwards. */
extern PP_HEAP_HIDDEN pp_next_alloc pp_next;
/* The next allocator's own entry points that programs call directly
 * (jemalloc's *allocx, tcmalloc's tc_*), NULL where it has none; filled by
 * pp_next_resolve. */
typedef struct pp_next_ext {
    size_t (*sallocx)(const void *, int);
    void (*sdallocx)(void *, size_t, int);
    void (*dallocx)(void *, int);
    void *(*mallocx)(size_t, int);
    void *(*rallocx)(void *, size_t, int);
    size_t (*xallocx)(void *, size_t, size_t, int);
    size_t (*malloc_size)(void *);
    size_t (*tc_malloc_size)(void *);
    void (*tc_free)(void *);
    void (*tc_free_sized)(void *, size_t);
} pp_next_ext;
extern PP_HEAP_HIDDEN pp_next_ext pp_next_x;
/* The bytes a block of n bytes holds, as the allocator counts it (computed
 * for glibc, else asked by allocating and freeing one, once per size and
 * thread). Needs pp_next_ready(). Not malloc-safe. */
size_t pp_next_block_size(size_t n);
/* The address range of the object that defines the next malloc (0, 0
 * before pp_next_resolve), and whether it is glibc's. malloc-safe */
void pp_next_object(uintptr_t *lo, uintptr_t *hi, int *glibc);
/* 1 once pp_next is usable. malloc-safe */
extern PP_HEAP_HIDDEN _Atomic int pp_next_state;
static inline int pp_next_ready(void)
{
    return atomic_load_explicit(&pp_next_state, memory_order_acquire) == 2;
}
/* Finds the next allocator (once; other threads meanwhile get 0 and use the
 * bootstrap buffer). Returns pp_next_ready(). malloc-safe */
int pp_next_resolve(void);
/* The bootstrap buffer for allocations made while the next allocator is
 * being looked up. malloc-safe */
void *pp_boot_alloc(size_t size, size_t align);
#define PP_BOOT_SIZE (512 * 1024)
extern PP_HEAP_HIDDEN char pp_boot[PP_BOOT_SIZE];
/* malloc-safe */
static inline int pp_boot_owns(const void *p)
{
    return (uintptr_t)p - (uintptr_t)pp_boot < PP_BOOT_SIZE;
}
size_t pp_boot_size(const void *p);

/* --- the profiler's own heap (own_heap.c) --- */
extern PP_HEAP_HIDDEN uintptr_t pp_own_base;
extern PP_HEAP_HIDDEN size_t pp_own_size;  /* 0 until its region is reserved */
extern PP_HEAP_HIDDEN __thread int pp_own_depth; /* >0: this thread's allocations go to the own heap */
/* Whether p is a block of the own heap. malloc-safe */
static inline int pp_own_owns(const void *p)
{
    return (uintptr_t)p - pp_own_base < pp_own_size;
}
/* n bytes aligned to align (a power of two), from the own heap, else from
 * the next allocator. malloc-safe */
void *pp_own_malloc(size_t align, size_t n);
/* For blocks of the own heap only. malloc-safe */
void pp_own_free(void *p);
void *pp_own_realloc(void *p, size_t n);
size_t pp_own_usable(const void *p);
/* pp_own_heap_enter/leave (base.h): meanwhile the thread's countdown is
 * PP_OWN_LEFT, so every malloc takes the slow path. */
#define PP_OWN_LEFT (INT64_MIN / 4)
void pp_own_heap_stats(uint64_t *bytes_in_use, uint64_t *bytes_mapped, uint64_t *fell_back);
/* Registers the own heap with base/ (pp_own_heap_enter/leave). */
void pp_own_heap_init(void);
void pp_own_heap_fork_prepare(void);
void pp_own_heap_fork_parent(void);
void pp_own_heap_fork_child(void);

/* Stops heap sampling for good (a sandboxed process): objects sampled
 * before are still told apart when freed. Thread-safe. */
void pp_heap_stop_sampling(void);

/* The next allocator's free or memalign is not its malloc's object's
 * (found by pp_next_resolve): sampling stays off for good
 * (pprof_heap_rate says 0), said once on stderr. malloc-safe */
void pp_heap_unpaired(const char *object);
/* Whether that happened. malloc-safe */
int pp_heap_is_unpaired(void);

/* --- sampling (heap_sample.c) --- */
/* Bytes until the calling thread's next sample; the hooks' fast path is
 * `if ((pp_heap_left -= size) > 0)`. Initial-exec TLS. */
extern PP_HEAP_HIDDEN __thread int64_t pp_heap_left; /* heap_guard.c */
/* Slow path: called when pp_heap_left went to 0 or below. Returns 1 when
 * this allocation of `size` bytes is to be sampled. malloc-safe */
int pp_heap_should_sample(size_t size);
/* Counts `n` down; 1 if the allocation is to be sampled (the hooks'
 * countdown, fast path inline). malloc-safe */
static inline int pp_heap_take_sample(size_t n)
{
    if (__builtin_expect((pp_heap_left -= (int64_t)n) > 0, 1))
        return 0;
    return pp_heap_should_sample(n);
}
/* Records a sampled object (stack of the hooked function's caller, whose
 * return address is `caller`). Returns 0, or -1 when the tables are full
 * (the object is then not tracked). malloc-safe */
int pp_heap_sampled(void *p, size_t size, uint64_t caller);
/* Called for every pointer about to be released whose granule may hold a
 * sampled object (pp_heap_maybe_sampled): removes it from the live table
 * if it was sampled, counting the free. Returns 1 if it
 * was sampled, 0 if not, -1 if a fork held the table: p may have been
 * sampled, and the table releases it with the next allocator's free once
 * its free is counted (the caller must not). Preserves errno. malloc-safe */
int pp_heap_freed(void *p);
/* Re-entry guard (heap_guard.c): allocations made while it is raised are
 * never sampled (a forwarded operator new calling malloc, the profiler's
 * own work); pp_heap_left stays at PP_HEAP_NOT_STARTED meanwhile.
 * malloc-safe */
#define PP_HEAP_NOT_STARTED (INT64_MAX / 2)
extern PP_HEAP_HIDDEN __thread int pp_heap_guarded; /* raised */
void pp_heap_guard_enter(int64_t *saved);
void pp_heap_guard_leave(const int64_t *saved);

/* --- the tables (heap_table.c) --- */
/* The raw records are the store's (store/): one per (stack, labels, size),
 * key = the object size, c[0] = sampled allocations, c[1] = sampled frees;
 * a snapshot is the store's. */
typedef pp_store_snap pp_heap_snap;

/* Counts one sampled allocation of `size` at (pcs, labels) and enters p in
 * the live table; an entry already there for p (freed where the hooks could
 * not see it) is counted as freed first. Returns 0, or -1 when the tables
 * are full. malloc-safe */
int pp_heap_table_alloc(void *p, size_t size, const uint64_t *pcs, size_t npcs, const pprof_labels *labels);
/* Takes p out of the live table without counting a free; returns its
 * record id, 0 when p is not there, or PP_HEAP_HELD when a fork holds the
 * table and nothing was looked at: p may be sampled, so it must go through
 * pp_heap_table_release. malloc-safe */
#define PP_HEAP_HELD UINT32_MAX
uint32_t pp_heap_table_take(void *p);
/* Counts the free of p if it is sampled, taking it out of the live table,
 * before p is released: 1 if it was sampled, 0 if not, -1 if a fork holds
 * the table: p may be sampled, and the table now owns it and gives it to
 * the next allocator's free once its free is counted (the caller must not
 * release it). malloc-safe */
int pp_heap_table_free(void *p);
/* Counts the free of an object taken with pp_heap_table_take (rec is its
 * record id or PP_HEAP_HELD) and gives p to the next allocator's free, at
 * once or, while a fork holds the table, once its free is counted.
 * malloc-safe */
void pp_heap_table_release(void *p, uint32_t rec);
/* Counts the free of an object taken with pp_heap_table_take (a record id)
 * and already released. malloc-safe */
void pp_heap_table_count_free(uint32_t rec);
/* The size a sampled object p was allocated with, 0 when p is not in the
 * live table (or a fork holds it). malloc-safe */
size_t pp_heap_table_size(const void *p);
/* Puts an object taken with pp_heap_table_take back (the release failed).
 * malloc-safe */
void pp_heap_table_put_back(void *p, uint32_t rec);
/* What a free must look at: two bits per 256-byte granule of the address
 * modulo 4 GiB (granules that far apart share them; 4 MiB of address
 * space, touched only where the heap is). PP_MAP_SAMPLED is set while an
 * object in the live table starts in the granule (changed with the table's
 * lock held, read without it); PP_MAP_OWN marks the bootstrap buffer's and
 * the own heap's granules (set before their blocks are handed out, never
 * cleared). A free whose bits are clear goes straight to the next
 * allocator. Neighbouring granules share a cache line (64 KiB of heap per
 * line), so a program's frees read a few lines of it, as they read their
 * own heap. */
#define PP_GRANULE_SHIFT 8
#define PP_MAP_SAMPLED 1u
#define PP_MAP_OWN 2u
extern PP_HEAP_HIDDEN _Atomic uint8_t pp_heap_map[1u << (32 - PP_GRANULE_SHIFT - 2)];
static inline uint32_t pp_granule(const void *p) /* malloc-safe */
{
    return (uint32_t)(uintptr_t)p >> PP_GRANULE_SHIFT;
}
/* p's bits. malloc-safe */
static inline unsigned pp_heap_map_bits(const void *p)
{
    uint32_t g = pp_granule(p);
    return (unsigned)(atomic_load_explicit(&pp_heap_map[g >> 2], memory_order_relaxed) >> ((g & 3) * 2)) & 3u;
}
/* 0 when p is certainly not a sampled object. malloc-safe */
static inline int pp_heap_maybe_sampled(const void *p)
{
    return pp_heap_map_bits(p) & PP_MAP_SAMPLED;
}
/* Sets `bit` for granule g; clears it when `set` is 0. malloc-safe */
static inline void pp_heap_map_set(uint32_t g, unsigned bit, int set)
{
    uint8_t m = (uint8_t)(bit << ((g & 3) * 2));
    if (set)
        atomic_fetch_or_explicit(&pp_heap_map[g >> 2], m, memory_order_release);
    else
        atomic_fetch_and_explicit(&pp_heap_map[g >> 2], (uint8_t)~m, memory_order_relaxed);
}
/* Marks [from, from + len) PP_MAP_OWN (heap_guard.c, which holds the
 * map). malloc-safe */
void pp_heap_map_own(uintptr_t from, size_t len);
/* 1 if p may be in the live table (a lock-free look at its bucket; the
 * objects of one granule share a bucket). malloc-safe */
#define PP_LIVE_BUCKET_BITS 16
extern PP_HEAP_HIDDEN _Atomic uint32_t pp_live_buckets[1u << PP_LIVE_BUCKET_BITS];
static inline uint32_t pp_live_bucket(const void *p) /* malloc-safe */
{
    return (uint32_t)(((uint64_t)pp_granule(p) * 0x9e3779b97f4a7c15ull) >> (64 - PP_LIVE_BUCKET_BITS));
}
static inline int pp_heap_table_maybe_live(const void *p) /* malloc-safe */
{
    return atomic_load_explicit(&pp_live_buckets[pp_live_bucket(p)], memory_order_relaxed) != 0;
}

/* Copies every record's counts, in record order, after applying deferred
 * frees (allocates outside the table lock). Returns 0 or PPROF_ENOMEM. */
int pp_heap_snap_take(pp_heap_snap *s);
void pp_heap_snap_free(pp_heap_snap *s);
/* The record with id `rec` (immutable fields only outside the lock). */
const pp_rec *pp_heap_rec_get(uint32_t rec);

/* A live sampled object: its address, record and when it was sampled
 * (CLOCK_MONOTONIC, ns). */
typedef struct pp_heap_live {
    uintptr_t ptr;
    uint32_t rec;
    int64_t born_ns;
} pp_heap_live;
/* Copies at most max live sampled objects into out; returns how many there
 * are (more than max: out holds the first max). Holds the table's lock
 * for a walk of it: not for hooks. */
size_t pp_heap_live_copy(pp_heap_live *out, size_t max);
/* The number of live sampled objects now. malloc-safe */
uint64_t pp_heap_live_count(void);

/* The live objects sampled in [born_from, born_until) (CLOCK_MONOTONIC
 * ns) as a snapshot: c[0] their
 * number per record, c[1] 0. 0 or PPROF_ENOMEM. */
int pp_heap_age_snap(int64_t born_from, int64_t born_until, pp_heap_snap *s);

/* --- the peak of the live heap (heap_peak.c) --- */
/* Slot 0 follows the live heap from start-up; windows take the others. */
#define PP_HEAP_PEAK_SLOTS 4
/* The table's part, each with its lock held, malloc-safe: a record about
 * to count one more allocation (delta 1) or free (-1); a window's slot
 * (-1 when none is free) and its end; a record's live objects at the
 * slot's peak, with the peak's estimate and time (CLOCK_REALTIME ns). */
void pp_heap_peak_change(const pp_rec *r, int delta);
/* The sampling rate the estimate unsamples at (heap_sample.c sets it when
 * a rate is chosen; a stop keeps it). malloc-safe */
void pp_heap_peak_set_rate(int64_t r);
int pp_heap_peak_begin_locked(void);
int pp_heap_peak_restart_locked(int slot); /* begins a window's slot again: 0, or -1 when it is not one */
void pp_heap_peak_end_locked(int slot);
int64_t pp_heap_peak_value_locked(int slot, const pp_rec *r, int64_t *when_ns, double *peak);
/* The same, taking the lock (heap_table.c): a window's slot, or -1 when
 * every one is taken; its release; the live heap at the slot's peak as a
 * snapshot (c[0] live objects per record, c[1] 0) with the peak's
 * estimated bytes and time. 0 or PPROF_ENOMEM. */
int pp_heap_peak_begin(void);
int pp_heap_peak_restart(int slot); /* the next window keeps the slot: 0, or -1 */
void pp_heap_peak_end(int slot);
int pp_heap_peak_snap(int slot, pp_heap_snap *s, int64_t *when_ns, double *peak);

/* The profiler's own live heap: the in-use estimate of the records that
 * carry its label (base/names.h), at `rate`. Takes a snapshot. */
int64_t pp_heap_own_inuse(int64_t rate);

typedef struct pp_heap_table_stats {
    uint64_t records, live, table_bytes, live_bytes;
    uint64_t deferred_lost; /* objects whose free can no longer be seen (during a fork) */
} pp_heap_table_stats;
void pp_heap_table_stats_get(pp_heap_table_stats *s);

/* fork handlers (lifecycle.c) */
void pp_heap_fork_prepare(void);
void pp_heap_fork_parent(void);
void pp_heap_fork_child(void);
/* heap_sample.c's part of it, after pp_heap_fork_child: a new seed and
 * countdown. async-signal-safe */
void pp_heap_sample_fork_child(void);
/* The sampler's counts of samples recorded and of those the tables had
 * no room for (pprof_heap_stats_get, in heap_profile.c). */
void pp_heap_sample_counts(uint64_t *sampled, uint64_t *unrecorded);

/* --- profiles (heap_profile.c) --- */
#define PP_HEAP_RAW 1          /* values not unsampled (debug=1) */
#define PP_HEAP_INUSE_CHANGE 2 /* add the live-heap change over the window */
#define PP_HEAP_ALLOCS 4       /* default sample type alloc_space */
#define PP_HEAP_INUSE_ONLY 8   /* only inuse_objects and inuse_space (peak, ages) */
#define PP_HEAP_INUSE_DELTA 16 /* in-use values are the change over the window (the history's slices) */
/* The profile of the window from `base` (NULL: process start) to `now`:
 * alloc values are now - base, in-use values are now's. `rate` is the
 * sampling rate the records were taken at. */
pprof_profile *pp_heap_build(const pp_heap_snap *base, const pp_heap_snap *now, int64_t rate, int flags);

/* The live heap of each snapshot (c[0] live objects per record, c[1] 0)
 * as inuse_objects and inuse_space, each sample with the label key =
 * values[i] of its snapshot. NULL when out of memory. */
pprof_profile *pp_heap_build_labelled(const pp_heap_snap *const *snaps, const char *key, const char *const *values,
                                      size_t n, int64_t rate);
/* Calls each(pcs, npcs, labels, bytes, arg) for every record of `now` with
 * live objects (the profiler's own left out): its in-use bytes, unsampled
 * at `rate` as pp_heap_build does. Returns the sum of the bytes. */
typedef void (*pp_heap_inuse_fn)(const uint64_t *pcs, size_t npcs, const pprof_labels *labels, int64_t bytes,
                                 void *arg);
int64_t pp_heap_inuse_each(const pp_heap_snap *now, int64_t rate, pp_heap_inuse_fn each, void *arg);

/* --- start-up (heap_sample.c) --- */
/* Reads LIBPPROF_HEAP_RATE and LIBPPROF_HEAP_BYTES and starts sampling. */
void pp_heap_init(void);
/* LIBPPROF_HEAP_BYTES=requested: profiles count requested bytes, not the
 * allocator's blocks (set at start-up; tests may set it before building a
 * profile). */
extern int pp_heap_bytes_requested;
#endif
