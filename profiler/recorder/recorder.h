/* recorder.h: the interface of recorder/, recorders and the collector.
 *
 * A recorder (recorder.c) is configured once, then started, snapshotted,
 * stopped or written; several of one kind share one sampler and its rate.
 * CPU samples reach recorders through the collector thread (collector.c),
 * which drains the signal handler's ring into every running CPU window.
 * Heap, contention and count kinds (recorder_heap.c,
 * recorder_contention.c, recorder_stack_counts.c) diff snapshots of their tables
 * at the window's ends, on raw records, before anything is serialized.
 * Finished profiles are symbolized (model/).
 *
 * Invariants: windows of one recorder never overlap and leave no gap; the
 * collector lock is never taken in a signal handler or a malloc hook.
 */
#ifndef PP_RECORDER_H
#define PP_RECORDER_H
#include "pprof.h"
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* What a kind does, filled in by its own file (recorder.c: CPU,
 * recorder_heap.c, recorder_contention.c, recorder_stack_counts.c). The public
 * calls check the arguments and state, then dispatch here. */
typedef struct pp_recorder_ops {
    /* Opens a window (running is 0); NULL: the kind is instant only. */
    int (*start)(pprof_recorder *r);
    /* Opens a window while the process exits, which samples nothing (its
     * timers are gone) and holds only what is added to it; NULL: refused. */
    int (*start_exiting)(pprof_recorder *r);
    /* Closes the window into *out (out may be NULL: discard) and, with
     * reopen, opens the next at the same instant (running is 1). */
    int (*end)(pprof_recorder *r, int reopen, pprof_profile **out);
    /* The state now; NULL: the kind is windowed only. */
    int (*write_to)(pprof_recorder *r, pprof_profile **out);
    /* The rate in force for this recorder; NULL: 0. */
    int64_t (*rate)(const pprof_recorder *r);
    /* Frees what the kind keeps (the recorder is stopped); may be NULL. */
    void (*release)(pprof_recorder *r);
    /* The open window from its start to now into *raw, unsymbolized (its
     * builder open), leaving the window open; NULL: the kind cannot. */
    int (*peek)(pprof_recorder *r, pprof_profile **raw);
} pp_recorder_ops;

/* What every recorder has; each kind's own struct begins with it. */
struct pprof_recorder {
    const pp_recorder_ops *ops;
    int running;
    int64_t window_mono_ns; /* the open window's start */
    int64_t window_real_ns;
    pprof_symbolize symbolize; /* how its profiles are symbolized */
    int raw;                   /* its profiles are given unsymbolized, their builders open (the history's) */
    char *leave_maps;          /* its profiles leave the files these maps name unnamed (NULL: none) */
    pprof_profile *snap;       /* kinds whose window is the change between two states (memory, thread and
                                  custom counts): the state at the open window's start, unfinished */
    int units;                 /* CPU and wall: the samples taken in a unit of work (a pprof_do call)
                                  carry its ID as the PP_UNIT_KEY label, for min_span (the history's) */
};

/* A zeroed recorder of `size` bytes (the kind's struct) with its ops, or
 * NULL (PPROF_ENOMEM recorded). */
pprof_recorder *pp_recorder_new(size_t size, const pp_recorder_ops *ops);
/* The checks a sampling kind's constructor begins with: out is not NULL
 * (*out is cleared) and hz is from 0 (the rate in force) to max. Returns
 * 0 or PPROF_EINVAL (recorded). Thread-safe. */
int pp_recorder_check_new(pprof_recorder **out, int64_t hz, int max);
/* Marks the window's start, now, and the recorder running. */
void pp_recorder_window_begin(pprof_recorder *r);
/* As pp_recorder_window_begin, for a window that holds everything since
 * the profiler started: it begins then. */
void pp_recorder_window_begin_at_start(pprof_recorder *r);
/* Ends the window: p (when not NULL) gets its start and duration; with
 * reopen the next window begins now, else the recorder stops running. */
void pp_recorder_window_end(pprof_recorder *r, pprof_profile *p, int reopen);
/* Symbolizes p as r says into *out (or frees it when out is NULL); gives
 * it as it is when r->raw. */
int pp_recorder_finish(const pprof_recorder *r, pprof_profile *p, pprof_profile **out);


/* Closes a running CPU recorder's window and opens the next at the same
 * instant, as a snapshot does, giving the closed one unsymbolized (its
 * builder open: time_nanos and duration_nanos set) for the history
 * (history.c). 0, PPROF_ESTATE or PPROF_ENOMEM. */
int pp_cpu_recorder_cut(pprof_recorder *r, pprof_profile **raw);
/* Calls fn with a running CPU recorder's open window (unsymbolized, its
 * time_nanos its start; dur_ns: from then to now) under the collector
 * lock, after a drain: the collector waits meanwhile. fn's result. */
int pp_cpu_recorder_peek(pprof_recorder *r, int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg), void *arg);
/* The same for a running wall recorder (its window is the wall sampler's,
 * read under the sampler's lock). */
int pp_wall_recorder_cut(pprof_recorder *r, pprof_profile **raw);
int pp_wall_recorder_peek(pprof_recorder *r, int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg), void *arg);
/* The same for a kind whose windows are differences of its tables
 * (allocations, mutex, block: ops->peek). One thread at a time per
 * recorder. */
int pp_recorder_cut(pprof_recorder *r, pprof_profile **raw);
/* An allocation recorder for the history (recorder_heap.c): its first
 * window begins at the process's start, and its windows' in-use values
 * are the live heap's change over them, so that a window holds only the
 * records that changed. 0 or a PPROF_E* code. */
int pp_alloc_recorder_new_deltas(pprof_recorder **out);
int pp_recorder_peek(pprof_recorder *r, int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg), void *arg);
/* history.c: starts the history when LIBPPROF_HISTORY asks (the
 * constructor); in a forked child, starts the child's own. */
void pp_history_init(void);
void pp_history_fork_child(void);

/* The collector's fork handlers (lifecycle.c): its lock is held across
 * fork; the child, which has no collector thread, starts with no running
 * recorder. */
/* Starts the collector thread now and keeps it, waiting while no CPU
 * recorder runs, for a process about to forbid new threads
 * (interpose/limit_hooks.c: RLIMIT_NPROC 0). Thread-safe. */
void pp_collector_keep(void);
/* Ends what pp_collector_keep kept: a waiting collector thread ends (the
 * process enters a sandbox, where no thread of libpprof's may stay
 * behind). Thread-safe. */
void pp_collector_release(void);
void pp_collector_fork_prepare(void);
void pp_collector_fork_parent(void);
void pp_collector_fork_child(void);
#endif
