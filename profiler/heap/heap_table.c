/* heap_table.c: the raw heap records and the table of live sampled objects.
 *
 * Records live in a record store (store/) keyed by (stack, labels, size),
 * so an object's size is exact and the profiles' `bytes` label needs no
 * averaging; their counters are sampled allocations (c[0]) and frees
 * (c[1]). The store's lock also guards the live table.
 *
 * The live table maps each sampled object's address to its record: chained
 * buckets of nodes taken from a second reservation with a free list, and
 * marks the granules where they start (pp_heap_map, heap.h). Only frees in
 * a marked granule look here, and a lock-free look at the bucket head
 * settles most of them without the lock. An address entered twice (its
 * first free went to the allocator directly, as in a library opened with
 * RTLD_DEEPBIND) counts the old entry as freed.
 *
 * Everything here is called from inside malloc: no malloc, one futex lock
 * (never held while calling out), memory from mmap only.
 *
 * While a fork holds the lock, hooks do not wait for it (lock.h): a sample
 * goes unrecorded, and the free of an object that may be sampled is
 * deferred. The object itself becomes a node of a lock-free list (its
 * first word links the next, its second may hold a record id), and it goes
 * back to the allocator only after the next holder of the lock has taken
 * it out of the live table and counted its free: its address cannot be
 * reused before its entry is gone, and the list needs no memory of its
 * own, so no number of frees during a fork is too many. A forked child
 * keeps the list (the objects are still allocated there) and its next
 * holder releases them.
 */
#define _GNU_SOURCE
#include "heap.h"
#include "base/base.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LIVE_MAX (1u << 24)         /* live sampled objects */
#define LIVE_BUCKETS (1u << PP_LIVE_BUCKET_BITS)

typedef struct live_node {
    uintptr_t ptr;
    uint32_t rec;
    uint32_t next;   /* node index + 1 */
    int64_t born_ns; /* CLOCK_MONOTONIC when it was sampled */
} live_node;

static pp_store recs = PP_STORE_INIT(1ull << 30, 1u << 17);

static live_node *nodes;           /* reserved LIVE_MAX */
static uint32_t nodes_used, free_nodes;
_Atomic uint32_t pp_live_buckets[LIVE_BUCKETS];
static _Atomic uint64_t nlive;

/* Deferred frees: the objects, linked through their first
 * word; its bit 0 marks a node whose second word is the record id of an
 * object already taken out of the live table. */
static _Atomic uintptr_t deferred;
static uintptr_t to_release;           /* taken off the list, lock held */
/* Counted frees of objects already out of the live table and released (a
 * realloc that a fork started under), each slot filled and emptied with
 * one atomic step. */
#define REC_SLOTS 64
static _Atomic uint32_t deferred_recs[REC_SLOTS];
static _Atomic uint64_t recs_pushed; /* counted after the slot is filled */
static uint64_t recs_seen;           /* lock held */
static _Atomic uint64_t deferred_lost; /* could not be deferred: the entry stays stale */

/* malloc-safe */
static void *reserve(size_t bytes)
{
    return pp_map(bytes, PROT_READ | PROT_WRITE, MAP_NORESERVE, "heap samples' tables");
}

/* malloc-safe */
static pp_rec *rec_at(uint32_t id)
{
    return pp_store_rec(&recs, id);
}

/* malloc-safe */
const pp_rec *pp_heap_rec_get(uint32_t id)
{
    return id ? rec_at(id) : NULL;
}

/* Counts a sampled allocation (freed 0) or free of record id, keeping
 * the peak's books (heap_peak.c). Lock held. malloc-safe */
static void count(uint32_t id, int freed)
{
    pp_rec *r = rec_at(id);
    pp_heap_peak_change(r, freed ? -1 : 1);
    r->c[freed]++;
}

/* Clears p's granule's PP_MAP_SAMPLED unless another live object starts
 * in it (they share p's bucket; p's node is unlinked). Lock held.
 * malloc-safe */
static void unmark(const void *p)
{
    uint32_t g = pp_granule(p);
    for (uint32_t i = atomic_load_explicit(&pp_live_buckets[pp_live_bucket(p)], memory_order_relaxed); i;
         i = nodes[i - 1].next)
        if (pp_granule((const void *)nodes[i - 1].ptr) == g)
            return;
    pp_heap_map_set(g, PP_MAP_SAMPLED, 0);
}

/* Unlinks p's node (lock held); returns its record or 0. malloc-safe */
static uint32_t unlink_live(const void *p)
{
    _Atomic uint32_t *link = &pp_live_buckets[pp_live_bucket(p)];
    for (uint32_t i = atomic_load_explicit(link, memory_order_relaxed); i; i = nodes[i - 1].next) {
        live_node *nd = &nodes[i - 1];
        if (nd->ptr == (uintptr_t)p) {
            atomic_store_explicit(link, nd->next, memory_order_relaxed);
            unmark(p);
            uint32_t rec = nd->rec;
            nd->next = free_nodes;
            free_nodes = i;
            atomic_fetch_sub(&nlive, 1);
            return rec;
        }
        link = (_Atomic uint32_t *)&nd->next;
    }
    return 0;
}

/* Links p to rec (lock held); 0 or -1 when full. malloc-safe */
static int link_live(void *p, uint32_t rec)
{
    if (!nodes && !(nodes = reserve((size_t)LIVE_MAX * sizeof *nodes)))
        return -1;
    uint32_t i = free_nodes;
    if (i) {
        free_nodes = nodes[i - 1].next;
    } else {
        if (nodes_used == LIVE_MAX)
            return -1;
        i = ++nodes_used;
    }
    _Atomic uint32_t *b = &pp_live_buckets[pp_live_bucket(p)];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO's: no system call */
    nodes[i - 1] = (live_node){(uintptr_t)p, rec, atomic_load_explicit(b, memory_order_relaxed),
                               ts.tv_sec * 1000000000ll + ts.tv_nsec};
    atomic_store_explicit(b, i, memory_order_release);
    pp_heap_map_set(pp_granule(p), PP_MAP_SAMPLED, 1);
    atomic_fetch_add(&nlive, 1);
    return 0;
}

/* Links p (with rec: already taken out, counted when applied) into the
 * deferred list. malloc-safe */
static void defer(void *p, uint32_t rec)
{
    if (pp_next.usable_size(p) < 2 * sizeof(uintptr_t)) {
        atomic_fetch_add(&deferred_lost, 1);
        pp_next.free(p);
        return;
    }
    uintptr_t *node = p;
    node[1] = rec;
    uintptr_t head = atomic_load(&deferred);
    do
        node[0] = head | (rec != 0);
    while (!atomic_compare_exchange_weak(&deferred, &head, (uintptr_t)p));
}

/* Applies the deferred frees (lock held); their objects wait in to_release
 * until the lock is let go. malloc-safe */
static void apply_deferred(void)
{
    if (atomic_load_explicit(&recs_pushed, memory_order_relaxed) != recs_seen) {
        recs_seen = atomic_load(&recs_pushed);
        for (int i = 0; i < REC_SLOTS; i++) {
            uint32_t rec = atomic_exchange(&deferred_recs[i], 0);
            if (rec)
                count(rec, 1);
        }
    }
    if (!atomic_load_explicit(&deferred, memory_order_relaxed))
        return;
    uintptr_t n = atomic_exchange(&deferred, 0);
    while (n) {
        uintptr_t *node = (uintptr_t *)n;
        uintptr_t next = node[0] & ~(uintptr_t)1;
        uint32_t rec = node[0] & 1 ? (uint32_t)node[1] : unlink_live(node);
        if (rec)
            count(rec, 1);
        node[0] = to_release;
        to_release = (uintptr_t)node;
        n = next;
    }
}

/* Takes the lock and applies deferred frees, or returns 0 when a fork
 * holds it. malloc-safe */
static int lock_table(void)
{
    if (!pp_mutex_lock_hook(&recs.lock))
        return 0;
    apply_deferred();
    return 1;
}

/* Lets the lock go, then gives the applied deferred objects back.
 * malloc-safe */
static void unlock_table(void)
{
    uintptr_t n = to_release;
    to_release = 0;
    pp_mutex_unlock(&recs.lock);
    while (n) {
        uintptr_t *node = (uintptr_t *)n;
        n = node[0];
        pp_next.free(node);
    }
}

/* malloc-safe */
int pp_heap_table_alloc(void *p, size_t size, const uint64_t *pcs, size_t npcs, const pprof_labels *labels)
{
    if (!lock_table())
        return -1;
    int rc = -1;
    uint32_t old = unlink_live(p);
    if (old)
        count(old, 1);
    uint32_t id = pp_store_find_locked(&recs, pcs, npcs, labels, size);
    if (id && link_live(p, id) == 0) {
        count(id, 0);
        rc = 0;
    }
    unlock_table();
    return rc;
}

/* malloc-safe */
uint32_t pp_heap_table_take(void *p)
{
    if (!lock_table())
        return PP_HEAP_HELD;
    uint32_t rec = unlink_live(p);
    unlock_table();
    return rec;
}

/* malloc-safe */
size_t pp_heap_table_size(const void *p)
{
    if (!lock_table())
        return 0;
    size_t n = 0;
    for (uint32_t i = atomic_load_explicit(&pp_live_buckets[pp_live_bucket(p)], memory_order_relaxed); i;
         i = nodes[i - 1].next)
        if (nodes[i - 1].ptr == (uintptr_t)p) {
            n = (size_t)rec_at(nodes[i - 1].rec)->key;
            break;
        }
    unlock_table();
    return n;
}

/* malloc-safe */
int pp_heap_table_free(void *p)
{
    if (!lock_table()) {
        defer(p, 0);
        return -1;
    }
    uint32_t rec = unlink_live(p);
    if (rec)
        count(rec, 1);
    unlock_table();
    return rec != 0;
}

/* malloc-safe */
void pp_heap_table_release(void *p, uint32_t rec)
{
    if (rec == PP_HEAP_HELD) {
        defer(p, 0);
    } else if (!lock_table()) {
        defer(p, rec);
    } else {
        count(rec, 1);
        unlock_table();
        pp_next.free(p);
    }
}

/* malloc-safe */
void pp_heap_table_count_free(uint32_t rec)
{
    if (lock_table()) {
        count(rec, 1);
        unlock_table();
        return;
    }
    for (int i = 0; i < REC_SLOTS; i++) {
        uint32_t empty = 0;
        if (atomic_compare_exchange_strong(&deferred_recs[i], &empty, rec)) {
            atomic_fetch_add(&recs_pushed, 1);
            return;
        }
    }
    atomic_fetch_add(&deferred_lost, 1);
}

/* malloc-safe */
void pp_heap_table_put_back(void *p, uint32_t rec)
{
    if (!lock_table()) { /* a fork holds the table: p stays in use in the profile, untracked */
        atomic_fetch_add(&deferred_lost, 1);
        return;
    }
    if (link_live(p, rec) != 0)
        count(rec, 1); /* cannot track it any more: count it gone */
    unlock_table();
}

int pp_heap_snap_take(pp_heap_snap *s)
{
    if (lock_table()) /* deferred frees first */
        unlock_table();
    return pp_store_snap_take(&recs, s);
}

void pp_heap_snap_free(pp_heap_snap *s)
{
    pp_store_snap_free(s);
}

uint64_t pp_heap_live_count(void)
{
    return atomic_load(&nlive);
}

size_t pp_heap_live_copy(pp_heap_live *out, size_t max)
{
    size_t n = 0;
    pp_mutex_lock(&recs.lock);
    apply_deferred();
    for (uint32_t b = 0; b < LIVE_BUCKETS; b++)
        for (uint32_t i = atomic_load_explicit(&pp_live_buckets[b], memory_order_relaxed); i; i = nodes[i - 1].next) {
            if (n < max)
                out[n] = (pp_heap_live){nodes[i - 1].ptr, nodes[i - 1].rec, nodes[i - 1].born_ns};
            n++;
        }
    unlock_table();
    return n;
}

int pp_heap_peak_begin(void)
{
    pp_mutex_lock(&recs.lock);
    apply_deferred();
    int s = pp_heap_peak_begin_locked();
    unlock_table();
    return s;
}

int pp_heap_peak_restart(int slot)
{
    pp_mutex_lock(&recs.lock);
    apply_deferred();
    int rc = pp_heap_peak_restart_locked(slot);
    unlock_table();
    return rc;
}

void pp_heap_peak_end(int slot)
{
    pp_mutex_lock(&recs.lock);
    pp_heap_peak_end_locked(slot);
    unlock_table();
}

int pp_heap_peak_snap(int slot, pp_heap_snap *s, int64_t *when_ns, double *peak)
{
    if (slot < 0 || slot >= PP_HEAP_PEAK_SLOTS)
        return PPROF_EINVAL;
    if (pp_heap_snap_take(s) != 0)
        return PPROF_ENOMEM;
    pp_mutex_lock(&recs.lock);
    apply_deferred();
    *when_ns = 0;
    *peak = 0;
    for (size_t i = 0; i < s->n; i++) {
        s->c[i].c[0] = pp_heap_peak_value_locked(slot, rec_at(s->c[i].rec), when_ns, peak);
        s->c[i].c[1] = 0;
    }
    unlock_table();
    return 0;
}

static int by_rec(const void *a, const void *b)
{
    uint32_t x = ((const pp_heap_live *)a)->rec, y = ((const pp_heap_live *)b)->rec;
    return x < y ? -1 : x > y;
}

int pp_heap_age_snap(int64_t born_from, int64_t born_until, pp_heap_snap *s)
{
    s->c = NULL;
    s->n = 0;
    size_t cap = pp_heap_live_count() + 256, n;
    pp_heap_live *l = malloc(cap * sizeof *l);
    if (!l)
        return PPROF_ENOMEM;
    n = pp_heap_live_copy(l, cap);
    n = n < cap ? n : cap;
    qsort(l, n, sizeof *l, by_rec);
    s->c = malloc((n ? n : 1) * sizeof *s->c);
    if (!s->c) {
        free(l);
        return PPROF_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (l[i].born_ns < born_from || l[i].born_ns >= born_until)
            continue;
        if (!s->n || s->c[s->n - 1].rec != l[i].rec)
            s->c[s->n++] = (pp_store_count){l[i].rec, {0, 0}};
        s->c[s->n - 1].c[0]++;
    }
    free(l);
    return 0;
}

void pp_heap_table_stats_get(pp_heap_table_stats *s)
{
    pp_mutex_lock(&recs.lock);
    apply_deferred();
    s->records = atomic_load(&recs.nrecords);
    s->live = atomic_load(&nlive);
    s->table_bytes = recs.used + (size_t)recs.nbuckets * sizeof(uint32_t);
    s->live_bytes = (uint64_t)nodes_used * sizeof(live_node) + sizeof pp_live_buckets;
    s->deferred_lost = atomic_load(&deferred_lost);
    unlock_table();
}

/* While this thread forks it holds the lock: its allocations are not
 * sampled, and its frees (atfork handlers may free) are deferred like any
 * other thread's. Deferred objects are not released in the fork handlers
 * (another allocator's own fork handlers may still hold its locks): the
 * next holder of the lock does it, in the parent and in the child. */
static __thread int64_t fork_guard[2];

void pp_heap_fork_prepare(void)
{
    pp_heap_guard_enter(fork_guard);
    pp_mutex_lock(&recs.lock);
}

void pp_heap_fork_parent(void)
{
    pp_mutex_unlock(&recs.lock);
    pp_heap_guard_leave(fork_guard);
}

void pp_heap_fork_child(void)
{
    pp_store_fork_child(&recs);
    pp_heap_guard_leave(fork_guard);
}
