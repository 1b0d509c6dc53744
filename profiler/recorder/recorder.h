/* recorder.h: the interface of recorder/, recorders and the collector.
 *
 * A recorder (recorder.c) is configured once, then started, snapshotted,
 * stopped or written; several of one kind share one sampler and its rate.
 * CPU samples reach recorders through the collector thread (collector.c),
 * which drains the signal handler's ring into every running CPU window.
 * Heap, contention and count kinds (recorder_heap.c,
 * recorder_contention.c, recorder_counts.c) diff snapshots of their tables
 * at the window's ends, on raw records, before anything is serialized.
 * Finished profiles are symbolized (model/).
 *
 * Invariants: windows of one recorder never overlap and leave no gap; the
 * collector lock is never taken in a signal handler or a malloc hook.
 */
#ifndef PP_RECORDER_H
#define PP_RECORDER_H
#include "pprof.h"
#include <stdint.h>

typedef enum pp_kind {
    PP_KIND_CPU = 1,
    PP_KIND_ALLOC,  /* windowed heap: allocations over a window, live heap at its end */
    PP_KIND_HEAP,   /* instant heap: write_to */
    PP_KIND_THREADS,      /* live threads' stacks: write_to, or a window of differences */
    PP_KIND_THREADCREATE, /* the stacks that created live threads: likewise */
    PP_KIND_CUSTOM,       /* a custom profile's entries: likewise */
    PP_KIND_MUTEX,        /* contended locks: windows or totals */
    PP_KIND_BLOCK,        /* waits: windows or totals */
} pp_kind;

struct pp_ccount;

struct pp_heap_snap;

struct pprof_recorder {
    pp_kind kind;
    int cfg_hz, cfg_frames;     /* as configured (0: join / default) */
    int hz;                     /* in effect while running */
    int64_t period_ns;
    int running;
    pprof_profile *window;      /* the open window (collector lock) */
    int64_t window_mono_ns;
    int64_t window_real_ns;
    /* heap kinds */
    int heap_flags;
    int from_start;
    struct pp_heap_snap *base;  /* counts at the window's start */
    /* count kinds (threads, threadcreate) */
    int per_thread;
    pprof_custom *custom;
    pprof_profile *count_base;  /* unfinished: the counts at the window's start */
    /* contention kinds (mutex, block) */
    long cfg_rate;
    int turned_on;
    struct pp_ccount *cbase;
    size_t ncbase;
};

/* Heap kinds (recorder_heap.c), dispatched to from recorder.c. */
int pp_heap_recorder_start(pprof_recorder *r);
int pp_heap_recorder_end(pprof_recorder *r, int reopen, pprof_profile **out);
void pp_heap_recorder_release(pprof_recorder *r);
/* Count kinds (recorder_counts.c). */
int pp_counts_write_to(pprof_recorder *r, pprof_profile **out);
int pp_counts_start(pprof_recorder *r);
int pp_counts_end(pprof_recorder *r, int reopen, pprof_profile **out);
/* Contention kinds (recorder_contention.c). */
int pp_contention_start(pprof_recorder *r);
int pp_contention_end(pprof_recorder *r, int reopen, pprof_profile **out);
int pp_contention_write_to(pprof_recorder *r, pprof_profile **out);
/* Symbolizes p into *out (or frees it when out is NULL). */
int pp_recorder_finish(pprof_profile *p, pprof_profile **out);

/* The collector's fork handlers (lifecycle.c): its lock is held across
 * fork; the child, which has no collector thread, starts with no running
 * recorder. */
void pp_collector_fork_prepare(void);
void pp_collector_fork_parent(void);
void pp_collector_fork_child(void);
#endif
