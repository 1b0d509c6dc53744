/* heap_table.c: the raw heap records and the table of live sampled objects.
 *
 * Records are keyed by (stack, labels, size), so an object's size is exact
 * and the profiles' `bytes` label needs no averaging. They are appended to
 * one mmap'd reservation and never move or go away, so a record's stack,
 * labels and size can be read without the lock once it is published; only
 * its two counters (sampled allocations and frees) change, under the lock.
 * Record ids are offsets into the store in 16-byte units (0 is none).
 *
 * The live table maps each sampled object's address to its record: chained
 * buckets of nodes taken from a second reservation with a free list. Only
 * page-aligned frees look here, and a lock-free look at the bucket head
 * settles most of them without the lock. An address entered twice (its
 * first free went to the allocator directly, as in a library opened with
 * RTLD_DEEPBIND) counts the old entry as freed.
 *
 * Everything here is called from inside malloc: no malloc, one futex lock
 * (never held while calling out), memory from mmap only.
 */
#define _GNU_SOURCE
#include "heap.h"
#include "lock.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STORE_MAX (1ull << 30)     /* records: address space reserved */
#define REC_BUCKETS (1u << 17)
#define LIVE_MAX (1u << 24)         /* live sampled objects */
#define LIVE_BUCKETS (1u << PP_LIVE_BUCKET_BITS)

typedef struct live_node {
    uintptr_t ptr;
    uint32_t rec;
    uint32_t next; /* node index + 1 */
} live_node;

static pp_mutex lock = PP_MUTEX_INIT;
static char *store;                /* reserved STORE_MAX, committed as used */
static size_t store_used = 16;     /* id 0 is none */
static uint32_t rec_buckets[REC_BUCKETS];
static _Atomic uint64_t nrecords;
static size_t last_rec;            /* the newest record's id */

static live_node *nodes;           /* reserved LIVE_MAX */
static uint32_t nodes_used, free_nodes;
_Atomic uint32_t pp_live_buckets[LIVE_BUCKETS];
static _Atomic uint64_t nlive;

/* malloc-safe */
static void *reserve(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* malloc-safe */
static uint64_t stack_hash(const uint64_t *pcs, size_t n, const void *labels, size_t size)
{
    uint64_t h = 0x84222325cbf29ce4ull ^ n ^ ((uint64_t)size << 17) ^ (uint64_t)(uintptr_t)labels;
    for (size_t i = 0; i < n; i++)
        h = (h ^ pcs[i]) * 0x100000001b3ull, h ^= h >> 29;
    return h;
}

/* malloc-safe */
static pp_heap_rec *rec_at(uint32_t id)
{
    return (pp_heap_rec *)(store + (size_t)id * 16);
}

/* malloc-safe */
const pp_heap_rec *pp_heap_rec_get(uint32_t id)
{
    return id ? rec_at(id) : NULL;
}

/* The record for the key, made if new (lock held). 0 when full. malloc-safe */
static uint32_t find_or_add(const uint64_t *pcs, size_t n, const pprof_labels *labels, size_t size)
{
    if (!store && !(store = reserve(STORE_MAX)))
        return 0;
    uint64_t h = stack_hash(pcs, n, labels, size);
    uint32_t *b = &rec_buckets[h & (REC_BUCKETS - 1)];
    for (uint32_t id = *b; id; id = rec_at(id)->next) {
        pp_heap_rec *r = rec_at(id);
        if (r->hash == h && r->size == size && r->labels == labels && r->nframes == n &&
            memcmp(r->pcs, pcs, n * sizeof *pcs) == 0)
            return id;
    }
    size_t bytes = (sizeof(pp_heap_rec) + n * sizeof *pcs + 15) & ~(size_t)15;
    if (store_used + bytes > STORE_MAX || (store_used + bytes) / 16 > UINT32_MAX)
        return 0;
    uint32_t id = (uint32_t)(store_used / 16);
    pp_heap_rec *r = rec_at(id);
    r->nframes = (uint32_t)n;
    r->hash = h;
    r->size = size;
    r->labels = labels;
    r->allocs = r->frees = 0;
    memcpy(r->pcs, pcs, n * sizeof *pcs);
    r->next = *b;
    *b = id;
    store_used += bytes;
    last_rec = id;
    atomic_store(&nrecords, atomic_load(&nrecords) + 1);
    return id;
}

/* Unlinks p's node (lock held); returns its record or 0. malloc-safe */
static uint32_t unlink_live(const void *p)
{
    _Atomic uint32_t *link = &pp_live_buckets[pp_live_bucket(p)];
    for (uint32_t i = atomic_load_explicit(link, memory_order_relaxed); i; i = nodes[i - 1].next) {
        live_node *nd = &nodes[i - 1];
        if (nd->ptr == (uintptr_t)p) {
            atomic_store_explicit(link, nd->next, memory_order_relaxed);
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
    nodes[i - 1] = (live_node){(uintptr_t)p, rec, atomic_load_explicit(b, memory_order_relaxed)};
    atomic_store_explicit(b, i, memory_order_release);
    atomic_fetch_add(&nlive, 1);
    return 0;
}

/* malloc-safe */
int pp_heap_table_alloc(void *p, size_t size, const uint64_t *pcs, size_t npcs, const pprof_labels *labels)
{
    pp_mutex_lock(&lock);
    int rc = -1;
    uint32_t old = unlink_live(p);
    if (old)
        rec_at(old)->frees++;
    uint32_t id = find_or_add(pcs, npcs, labels, size);
    if (id && link_live(p, id) == 0) {
        rec_at(id)->allocs++;
        rc = 0;
    }
    pp_mutex_unlock(&lock);
    return rc;
}

/* malloc-safe */
uint32_t pp_heap_table_take(void *p)
{
    pp_mutex_lock(&lock);
    uint32_t rec = unlink_live(p);
    pp_mutex_unlock(&lock);
    return rec;
}

/* malloc-safe */
void pp_heap_table_count_free(uint32_t rec)
{
    pp_mutex_lock(&lock);
    rec_at(rec)->frees++;
    pp_mutex_unlock(&lock);
}

/* malloc-safe */
void pp_heap_table_put_back(void *p, uint32_t rec)
{
    pp_mutex_lock(&lock);
    if (link_live(p, rec) != 0)
        rec_at(rec)->frees++; /* cannot track it any more: count it gone */
    pp_mutex_unlock(&lock);
}

/* Records in id order: each one's size follows from its frame count. */
static uint32_t next_rec(uint32_t id)
{
    const pp_heap_rec *r = rec_at(id);
    return id + (uint32_t)(((sizeof(pp_heap_rec) + r->nframes * sizeof(uint64_t) + 15) & ~(size_t)15) / 16);
}

int pp_heap_snap_take(pp_heap_snap *s)
{
    s->c = NULL;
    s->n = 0;
    for (;;) {
        size_t cap = (size_t)atomic_load(&nrecords) + 64;
        pp_heap_count *c = malloc(cap * sizeof *c);
        if (!c)
            return PPROF_ENOMEM;
        pp_mutex_lock(&lock);
        size_t n = (size_t)atomic_load(&nrecords);
        if (n > cap) {
            pp_mutex_unlock(&lock);
            free(c);
            continue;
        }
        size_t k = 0;
        if (n)
            for (uint32_t id = 1;; id = next_rec(id)) {
                const pp_heap_rec *r = rec_at(id);
                c[k++] = (pp_heap_count){id, r->allocs, r->frees};
                if (id == last_rec)
                    break;
            }
        pp_mutex_unlock(&lock);
        s->c = c;
        s->n = k;
        return 0;
    }
}

void pp_heap_snap_free(pp_heap_snap *s)
{
    free(s->c);
    s->c = NULL;
    s->n = 0;
}

/* Writes the live buckets once, at start-up: frees read them, and a first
 * write after a read of a zero page costs a fault and a TLB flush on every
 * CPU the process runs on, which frees would otherwise pay a page at a
 * time. (Record buckets are only touched when sampling.) */
void pp_heap_table_init(void)
{
    memset((void *)pp_live_buckets, 0, sizeof pp_live_buckets);
}

void pp_heap_table_stats_get(pp_heap_table_stats *s)
{
    pp_mutex_lock(&lock);
    s->records = atomic_load(&nrecords);
    s->live = atomic_load(&nlive);
    s->table_bytes = store_used + sizeof rec_buckets;
    s->live_bytes = (uint64_t)nodes_used * sizeof(live_node) + sizeof pp_live_buckets;
    pp_mutex_unlock(&lock);
}

/* While this thread forks it holds the lock: its frees (atfork handlers
 * may free) leave the table alone, its allocations are not sampled. */
static __thread int forking;
static __thread int64_t fork_guard[2];

/* malloc-safe */
int pp_heap_table_busy(void)
{
    return forking;
}

void pp_heap_fork_prepare(void)
{
    pp_heap_guard_enter(fork_guard);
    forking = 1;
    pp_mutex_lock(&lock);
}

void pp_heap_fork_parent(void)
{
    pp_mutex_unlock(&lock);
    forking = 0;
    pp_heap_guard_leave(fork_guard);
}

void pp_heap_fork_child(void)
{
    lock = (pp_mutex)PP_MUTEX_INIT;
    forking = 0;
    pp_heap_guard_leave(fork_guard);
}
