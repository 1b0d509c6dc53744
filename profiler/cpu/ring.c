/* ring.c: bounded lock-free MPSC queue (see ring.h).
 *
 * Each cell carries a sequence number: a cell at position pos is free for
 * a producer when seq == pos, and holds a published record for the
 * consumer when seq == pos + 1. After consuming, the consumer sets
 * seq = pos + ncells, handing the cell to the producer of the next lap.
 * A cell keeps its sequence number less its own index, so zeroed cells
 * are free for the first lap: a ring is set up without writing them.
 *
 * Fork: the cells are mapped MADV_WIPEONFORK, so fork neither copies the
 * 2 MiB nor write-protects them in the parent (where every sample would
 * then fault); a child finds them zero, ready, and touches the pages of
 * the cells its samples use only (each of a service's forked processes
 * used to populate the 2 MiB when it began to profile: 512 page faults).
 */
#define _GNU_SOURCE
#include "ring.h"
#include "base/base.h"

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

/* The sequence number of the cell at position pos. async-signal-safe */
static size_t seq_of(const pp_ring *r, size_t pos, memory_order mo)
{
    return atomic_load_explicit(&r->cells[pos & r->mask].seq, mo) + (pos & r->mask);
}

/* Sets it. async-signal-safe */
static void set_seq(pp_ring *r, size_t pos, size_t seq, memory_order mo)
{
    atomic_store_explicit(&r->cells[pos & r->mask].seq, seq - (pos & r->mask), mo);
}

/* A ring of zeroed cells from position 0. */
static void set_up(pp_ring *r)
{
    atomic_store(&r->head, 0);
    r->tail = 0;
    atomic_store(&r->drained, 0);
}

int pp_ring_init(pp_ring *r, size_t ncells)
{
    void *m = pp_map(ncells * sizeof(pp_ring_cell), PROT_READ | PROT_WRITE, MAP_POPULATE, "CPU samples' ring");
    if (!m)
        return pp_fail(PPROF_ENOMEM);
    r->cells = m;
    r->mask = ncells - 1;
    r->wiped_on_fork = madvise(m, ncells * sizeof(pp_ring_cell), MADV_WIPEONFORK) == 0;
    sem_init(&r->wake, 0, 0);
    set_up(r);
    return 0;
}

/* Only the cells between the consumer and the producers are written (the
 * records in them are dropped): in a forked child every page written is
 * copied, and the ring is 2 MiB. */
void pp_ring_reset(pp_ring *r)
{
    if (!r->cells)
        return;
    sem_init(&r->wake, 0, 0); /* the parent's consumer may have been waiting on it */
    if (r->wiped_on_fork) { /* all zero here: ready from position 0 */
        /* Unless fork did not wipe them (qemu's user mode accepts
         * MADV_WIPEONFORK and does nothing): cell 0, used once the head
         * passed 0, is never zero again. Then every cell is cleared. */
        if (atomic_load_explicit(&r->cells[0].seq, memory_order_relaxed) != 0) {
            r->wiped_on_fork = 0;
            for (size_t i = 0; i <= r->mask; i++)
                atomic_store_explicit(&r->cells[i].seq, 0, memory_order_relaxed);
        }
        set_up(r);
        return;
    }
    size_t head = atomic_load(&r->head);
    for (size_t pos = r->tail; pos != head; pos++)
        set_seq(r, pos, pos + r->mask + 1, memory_order_relaxed);
    r->tail = head;
    atomic_store(&r->drained, head);
}

/* async-signal-safe */
pp_record *pp_ring_reserve(pp_ring *r, size_t *ticket)
{
    size_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
    for (;;) {
        pp_ring_cell *c = &r->cells[pos & r->mask];
        size_t seq = seq_of(r, pos, memory_order_acquire);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                *ticket = pos;
                if (pos + 1 - atomic_load_explicit(&r->drained, memory_order_relaxed) == (r->mask + 1) / 4)
                    sem_post(&r->wake); /* async-signal-safe (POSIX) */
                return &c->rec;
            }
        } else if (dif < 0) {
            return NULL; /* full */
        } else {
            pos = atomic_load_explicit(&r->head, memory_order_relaxed);
        }
    }
}

/* async-signal-safe */
void pp_ring_publish(pp_ring *r, size_t ticket)
{
    set_seq(r, ticket, ticket + 1, memory_order_release);
}

pp_record *pp_ring_peek(pp_ring *r)
{
    return seq_of(r, r->tail, memory_order_acquire) == r->tail + 1 ? &r->cells[r->tail & r->mask].rec : NULL;
}

void pp_ring_pop(pp_ring *r)
{
    set_seq(r, r->tail, r->tail + r->mask + 1, memory_order_release);
    r->tail++;
    atomic_store_explicit(&r->drained, r->tail, memory_order_relaxed);
}

void pp_ring_wait(pp_ring *r, int64_t ms)
{
    int64_t until = pp_now_ns(CLOCK_MONOTONIC) + ms * 1000000;
    struct timespec end = {until / 1000000000, until % 1000000000};
    while (sem_clockwait(&r->wake, CLOCK_MONOTONIC, &end) && errno == EINTR)
        ;
    while (sem_trywait(&r->wake) == 0) /* posts that came while the consumer was awake */
        ;
}
