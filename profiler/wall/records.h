/* records.h: the wall sampler's per-thread records (records.c), shared
 * by sampler.c and records.c; private to wall/. Everything here is used
 * under sampler.c's lock (wall_lock), never in a signal handler.
 */
#ifndef PP_WALL_RECORDS_H
#define PP_WALL_RECORDS_H
#include "wall.h"
#include "labels/labels.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PP_WALL_MAX_WINDOWS 64
#define RUNNING (-1)         /* a record's state: running */
#define RUNNABLE (-2)        /* ready to run, waiting for a CPU */
#define ON_CPU(nr) ((nr) == RUNNING || (nr) == RUNNABLE)

/* What a thread is counted on. */
typedef struct wrec {
    int nr;               /* RUNNING, RUNNABLE, or the system call it waits in */
    int npcs;
    uint64_t pcs[PP_WALL_FRAMES + 1];
    pprof_label *labels;  /* owned copies, sorted by key, without thread_state */
    size_t nlabels;
} wrec;

typedef struct wthread {
    int tid;
    uint32_t seen;        /* the tick that last listed it */
    void *const *slot;    /* its label slot */
    void *const *tslot;   /* its trace-context slot */
    int have_cpu, active, valid;
    int still_ticks;      /* consecutive ticks it did not run */
    uint64_t sp, pc;      /* where /proc showed it waiting at its last walk */
    uint64_t cpu_ns;      /* its CPU clock at its last look */
    uint64_t cpu_now;     /* read this tick */
    wrec rec;             /* valid: what it is counted on */
    uint64_t pending;     /* periods counted on rec, not yet in the windows */
    uint64_t held;        /* periods of a tick whose answer is still to come (sampler.c's
                             take_later); 0 when none is */
} wthread;

/* sampler.c's attached windows. */
extern pp_wall_window *pp_wall_wins[PP_WALL_MAX_WINDOWS];
extern int pp_wall_nwins;

/* The counters of pprof_wall_stats (sampler.c's stats_field gives where
 * each goes). */
enum { ST_TICKS, ST_SAMPLES, ST_STILL, ST_LOOKS, ST_WALKS, ST_SIGNALS, ST_NO_ANSWER, ST_FULL_SCANS, ST_LATE, ST_N };
extern _Atomic uint64_t pp_wall_stats[ST_N];
#define COUNT(which, n) atomic_fetch_add_explicit(&pp_wall_stats[which], (n), memory_order_relaxed)

/* Adds t's pending periods to every window that keeps its state. */
void pp_wall_flush_thread(wthread *t);
/* Makes r (taken over) t's record, flushing the old one if it differs. */
void pp_wall_set_rec(wthread *t, wrec *r);
/* Owned, sorted copies of n pairs (NULL, 0 when out of memory). */
pprof_label *pp_wall_copy_pairs(const pprof_label *p, size_t n, size_t *out_n);
/* Owned copies of n pairs sorted by key with span t's merged in, and
 * what `what` asks for (as pp_trace_pairs merges them; NULL, 0 when out
 * of memory). */
pprof_label *pp_wall_span_pairs(const pprof_label *p, size_t n, const pp_trace_snap *t, int what, size_t *out_n);
/* Frees n owned pairs (a record's labels). */
void pp_wall_free_labels(pprof_label *l, size_t n);
#endif
