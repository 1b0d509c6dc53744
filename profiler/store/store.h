/* store.h: the interface of store/, the malloc-safe record store.
 *
 * The cumulative profiles (heap and allocations, mutex, block) keep one
 * record per (stack, labels, key) with two counters: the heap's key is the
 * object size and its counters sampled allocations and frees; contention
 * has no key and counts events and delay. Records are appended to one
 * mmap'd reservation and never move or go away, so a record's stack,
 * labels and key can be read without the lock once it is published; only
 * its counters change, under the lock. Record ids are offsets into the
 * reservation in 16-byte units (0 is none). A window of a cumulative
 * profile is the difference of two snapshots of the counters, taken at
 * its ends on the raw records (pp_store_base joins them).
 *
 * Invariants: adding is malloc-safe (mmap only, one futex lock held for a
 * lookup and never while calling out); hooks take the lock with
 * pp_mutex_lock_hook, so they never wait for a fork; snapshots allocate
 * and are for recorders only.
 */
#ifndef PP_STORE_H
#define PP_STORE_H
#include "base/base.h"
#include "pprof.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pp_rec {
    uint32_t next;              /* bucket chain, a record id; 0 ends */
    uint32_t nframes;
    uint32_t seq;               /* its creation order, 0..: kinds' side tables index by it */
    uint32_t spare;
    uint64_t hash;
    uint64_t key;               /* the kind's own part of the key (heap: the object size) */
    const pprof_labels *labels; /* a kept set (pp_labels_cumulative) or NULL */
    int64_t c[2];               /* the counters, under the lock */
    uint64_t pcs[];
} pp_rec;

typedef struct pp_store {
    pp_mutex lock;
    size_t max;             /* bytes to reserve for records */
    uint32_t nbuckets;      /* a power of two */
    char *mem;              /* reserved on first use */
    size_t used;
    uint32_t last;          /* the newest record's id */
    _Atomic uint64_t nrecords;
    uint32_t *buckets;      /* mapped on first use */
    _Atomic uint64_t lost;  /* additions given up: the store was full or held by a fork */
} pp_store;

#define PP_STORE_INIT(max_bytes, buckets) {PP_MUTEX_INIT, (max_bytes), (buckets), NULL, 16, 0, 0, NULL, 0}

/* The record of (pcs, labels, key), made with zero counters if new; 0
 * when the store is full (lock held). malloc-safe */
uint32_t pp_store_find_locked(pp_store *s, const uint64_t *pcs, size_t n, const pprof_labels *labels,
                              uint64_t key);
/* Adds c0 and c1 to the record of (pcs, labels, key), taking the lock as
 * a hook does; counts the addition in `lost` when it cannot. malloc-safe */
void pp_store_add(pp_store *s, const uint64_t *pcs, size_t n, const pprof_labels *labels, uint64_t key,
                  int64_t c0, int64_t c1);
/* The record with id `id`: its stack, labels and key may be read without
 * the lock, its counters only under it. malloc-safe */
pp_rec *pp_store_rec(const pp_store *s, uint32_t id);

/* A copy of every record's counters, in record order. */
typedef struct pp_store_count {
    uint32_t rec;
    int64_t c[2];
} pp_store_count;
typedef struct pp_store_snap {
    pp_store_count *c;
    size_t n;
} pp_store_snap;
/* Takes a snapshot (allocates outside the lock). 0 or PPROF_ENOMEM. */
int pp_store_snap_take(pp_store *s, pp_store_snap *out);
void pp_store_snap_free(pp_store_snap *snap);
/* The window helper: walking a later snapshot in record order, the entry
 * of record `rec` in `base` (NULL when the record is newer than base, or
 * base is NULL); *cursor starts at 0 and moves with the walk. */
const pp_store_count *pp_store_base(const pp_store_snap *base, size_t *cursor, uint32_t rec);

/* fork handlers: the lock is held across fork and reset in the child. */
void pp_store_fork_prepare(pp_store *s);
void pp_store_fork_parent(pp_store *s);
void pp_store_fork_child(pp_store *s);
#endif
