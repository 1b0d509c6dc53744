/* cpu_internal.h: what the CPU sampler's two halves share: the timer
 * registry (timers.c) and the samples its signals take (samples.c).
 *
 * The registry, under pp_cpu_reg_lock, maps tid -> timer and lists the
 * threads' sampling states; the handler side never takes the lock and
 * reads only atomics, its own thread's state and the resets ring.
 */
#ifndef PP_CPU_INTERNAL_H
#define PP_CPU_INTERNAL_H
#include "cpu.h"
#include "base/base.h"
#include "labels/labels.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PP_TIMER_VALUE 0x70707266   /* sigev_value of our timers */
#define PP_FLUSH_VALUE 0x70706673   /* a window end's queued signal (pp_cpu_flush) */
#define PP_CATCHUP_VALUE 0x70706375 /* a catch-up's queued signal (pp_cpu_catch_up) */

/* A thread's sampling state that other threads read: the stack of its
 * last sample, kept for the CPU time after it (count_tail), where its
 * accounting starts in a profile, and its CPU time when last counted
 * (pp_cpu_catch_up). Threads started through pthread_create and the main
 * thread have one, from the profiler's own heap, on the registry's list. */
#define PP_TAIL_FRAMES 64
typedef struct pp_thread_state {
    struct pp_thread_state *next; /* the list (reg_lock) */
    int tid;
    uint32_t gen;       /* pp_cpu_gen when the stack was taken */
    uint32_t n;
    uint64_t root;      /* the function the thread was started with, or 0 */
    const void *labels; /* a reference to its label set, or NULL */
    pp_trace_snap trace;
    /* Set when its timer is armed (reg_lock), read by its handler: its
     * CPU clock then, and the carry that gives its first signal the
     * weight of one period (start_gen last, 0 while they change). */
    _Atomic uint32_t start_gen;
    _Atomic uint64_t start_ns, start_carry;
    _Atomic uint64_t counted_ns; /* its CPU clock when its time was last counted */
    uint64_t pcs[PP_TAIL_FRAMES];
} pp_thread_state;

extern pp_mutex pp_cpu_reg_lock;
extern __thread pp_thread_state *pp_cpu_my_state;
extern __thread int pp_cpu_my_tid;
extern _Atomic int pp_cpu_rate;           /* rate in force, 0 idle */
extern _Atomic uint32_t pp_cpu_gen;       /* bumped when a profile starts: every thread starts afresh */
extern _Atomic int pp_cpu_frames;         /* stack depth in force */
extern int pp_cpu_fallback;               /* setitimer mode */
extern _Atomic uint64_t pp_cpu_st_blocked, pp_cpu_st_lost;       /* in periods of the rate then */
extern _Atomic uint64_t pp_cpu_st_blocked_ns, pp_cpu_st_lost_ns; /* the same in CPU time */

/* Threads whose timer was set again because they block the signal (their
 * time was counted as not sampled; count_blocked_locked in timers.c): a
 * ring of (sequence, tid) written under the registry lock, read by the
 * handler when the sequence moved since the thread last looked. */
#define PP_RESETS 64
extern _Atomic uint32_t pp_cpu_reset_seq;
extern struct pp_cpu_reset {
    _Atomic uint32_t seq;
    _Atomic int tid;
} pp_cpu_resets[PP_RESETS];

/* The calling thread's id. async-signal-safe */
static inline int pp_cpu_tid(void)
{
    if (!pp_cpu_my_tid)
        pp_cpu_my_tid = (int)syscall(SYS_gettid);
    return pp_cpu_my_tid;
}

/* async-signal-safe */
static inline int64_t pp_cpu_period_ns(int hz)
{
    return 1000000000ll / hz;
}

/* samples.c: registers the signal's users (timer ticks, window ends,
 * catch-ups, the setitimer fallback) and sets up the ring; 0 or a
 * PPROF_E* code. Registry lock held. */
int pp_cpu_samples_init(void);
/* samples.c: the calling thread's CPU time since its last sample as one
 * more sample on that sample's stack (see count_tail there); the
 * profiling signal is blocked; `exiting`: the thread ends (else a window
 * does). */
void pp_cpu_count_tail(int was_blocked, int exiting);
/* samples.c: a thread starts (earlier resets were of other threads). */
void pp_cpu_samples_thread_start(void);
/* samples.c: window-end signals handled so far. */
uint32_t pp_cpu_flush_acks(void);
#endif
