/* ring.h: the lock-free queue from signal handlers to the collector.
 *
 * A bounded multi-producer, single-consumer queue of fixed-size records
 * (sequence numbers per cell). Producers (signal handlers on any thread)
 * reserve a cell, fill it in place and publish it; a full ring fails the
 * reservation and the caller counts a lost sample. No locks, no allocation
 * after pp_ring_init, which mmaps the cells once. The producer that fills
 * the ring to a quarter wakes the consumer (pp_ring_wait), so the consumer
 * can sleep long while samples are few and still never let it fill.
 */
#ifndef PP_RING_H
#define PP_RING_H

#include <semaphore.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.h"
#include "labels/labels.h"

/* One sample as the handler captured it. pcs[] are final location
 * addresses (leaf PC, then call sites), possibly ending in a pseudo-PC. */
typedef struct pp_record {
    uint32_t npcs;
    int32_t tid;
    uint64_t weight;        /* periods of CPU time at `hz` */
    int32_t hz;             /* the rate the weight was taken at (the sampler's rate can change) */
    const void *labels;     /* a referenced label set, or NULL */
    const void *release;    /* a reference the consumer drops (the thread's previous last sample's set) */
    pp_trace_snap trace;    /* the thread's span */
    uint64_t pcs[PPROF_MAX_FRAMES + 1];
} pp_record;

typedef struct pp_ring_cell {
    _Atomic size_t seq;
    pp_record rec;
} pp_ring_cell;

typedef struct pp_ring {
    pp_ring_cell *cells;
    size_t mask;
    _Atomic size_t head;    /* next cell to reserve */
    size_t tail;            /* next cell to consume (consumer only) */
    _Atomic size_t drained; /* tail, for producers to see how full the ring is */
    sem_t wake;             /* posted when the ring fills to a quarter */
    int wiped_on_fork;      /* the cells read as zeros in a forked child */
} pp_ring;

/* Maps `ncells` (a power of two) cells. Returns 0 or PPROF_ENOMEM. */
int pp_ring_init(pp_ring *r, size_t ncells);

/* Reserves a cell to fill; NULL when full. Async-signal-safe. */
pp_record *pp_ring_reserve(pp_ring *r, size_t *ticket);
/* Publishes the cell reserved with `ticket`. Async-signal-safe. */
void pp_ring_publish(pp_ring *r, size_t ticket);

/* Empties the ring in a forked child (cells other threads had reserved
 * would never be published), touching as little of it as it can. */
void pp_ring_reset(pp_ring *r);

/* The next published record, or NULL. Consumer only. */
pp_record *pp_ring_peek(pp_ring *r);
/* Releases the record returned by pp_ring_peek. Consumer only. */
void pp_ring_pop(pp_ring *r);
/* Sleeps `ms` milliseconds, or less if the ring fills to a quarter
 * meanwhile. Consumer only. */
void pp_ring_wait(pp_ring *r, int64_t ms);

#endif
