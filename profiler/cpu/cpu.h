/* cpu.h: the interface of cpu/, the CPU sampler shared by all CPU
 * recorders.
 *
 * Per-thread CPU-clock timers (timers.c) deliver the profiling signal,
 * whose dispatcher (signals/) hands their ticks to samples.c: a sample is
 * captured in the handler (bounded stack, the thread's label set) and
 * written to a lock-free ring (ring.h) that the collector (recorder/)
 * drains.
 *
 * Invariants: the handler never allocates, takes no lock and saves errno;
 * timers are armed per thread and deleted before a thread's state is
 * freed; the profiling signal is blocked around fork.
 */
#ifndef PP_CPU_H
#define PP_CPU_H
#include "ring.h"

#include <signal.h>

/* Records from the profiling signal handler; drained by the collector. */
extern pp_ring pp_cpu_ring;

/* Arms a timer on every thread at `hz`. Returns 0 or a PPROF_E* code. */
int pp_cpu_enable(int hz, int max_frames);
/* Deletes every timer. */
void pp_cpu_disable(void);
/* Arms threads that have no timer and drops timers of threads that exited
 * (the collector calls it every 250 ms; it lists the threads only when
 * their number changed, or at every 16th call), and counts the time of
 * threads that block the signal. */
void pp_cpu_rescan(void);
/* Sets the rate of the running sampler (a no-op when it is idle): every
 * timer is set again at the new period. Each sample says the rate it was
 * taken at (pp_record.hz), and a thread's CPU time is weighed across the
 * change without a gap. 0 or PPROF_ESYS. */
int pp_cpu_set_rate(int hz);
/* The rate in force (0 when idle) and the stack depth in force. */
int pp_cpu_hz(void);
int pp_cpu_max_frames(void);
/* Threads with a live timer. */
int pp_cpu_threads(void);

/* The CPU time of samples lost to a full ring so far, in ns. */
uint64_t pp_cpu_lost_ns(void);
/* The CPU time not sampled so far because threads blocked the profiling
 * signal (counted at each rescan, pp_cpu_rescan), in ns. */
uint64_t pp_cpu_blocked_ns(void);

/* Lists live threads' ids into tids (at most max); returns the count. */
typedef int (*pp_thread_lister)(int *tids, int max);
/* Registers the lister used when /proc/self/task cannot be read (no file
 * descriptor left): threads/ gives the threads it knows. Thread-safe. */
void pp_cpu_set_thread_lister(pp_thread_lister fn);
/* Rescans so far that could not read /proc/self/task. */
uint64_t pp_cpu_unlisted(void);

/* Thread hooks (threads.c): a thread starting (`fn`: the function it
 * runs) or exiting. */
void pp_cpu_thread_start(const void *fn);
void pp_cpu_thread_exit(void);
/* Gives the calling thread its sampling state (pp_thread_state in cpu_internal.h: its
 * last sample's stack, where its accounting starts, its CPU time when last
 * counted), on the registry's list; idempotent. The main thread calls it
 * at start-up; pp_cpu_thread_start calls it for threads started through
 * the hook. */
void pp_cpu_track_thread(void);
/* A window ends: counts each thread's CPU time since its last signal now
 * (waits up to 100 ms for the threads that run). Thread-safe; not in a
 * signal handler. */
void pp_cpu_flush(void);
/* Samples each thread that has run long without a timer signal where it
 * runs now (the collector, at each wake). Thread-safe; not in a signal
 * handler. */
void pp_cpu_catch_up(void);
/* fork hooks (lifecycle.c) */
void pp_cpu_fork_prepare(void);
void pp_cpu_fork_parent(void);
void pp_cpu_fork_child(void);

/* The sampler's counters; pprof_cpu_stats_get (collector.c) adds the
 * collector's CPU time. */
void pp_cpu_stats_fill(pprof_cpu_stats *out);
#endif
