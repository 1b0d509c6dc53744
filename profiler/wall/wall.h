/* wall.h: the interface of wall/, the wall-clock sampler shared by all
 * wall recorders.
 *
 * One sampler thread wakes `hz` times a second (once in each period, at a
 * random point of it; a late wake counts the periods it missed, half on
 * each thread's state at the wake before, half on its state now; the
 * thread asks the scheduler for a short slice, so that it preempts a busy
 * CPU's thread when it wakes) and counts one sample per period for
 * every live thread of the threads registry (threads/), whatever it does,
 * with its stack, its labels and span, and the label thread_state:
 * "running", "runnable" (ready to run, waiting for a CPU: it answered the
 * signal late, or not in time), or the system call it waits in
 * (threads/syscalls.c). How each thread
 * is looked at (sampler.c):
 *   - a thread that used no CPU since it was last looked at is where it
 *     was: its last record is counted again, with no system call of its
 *     own (a thread that ran within the last 100 ms: if /proc shows it in
 *     the same call at the same place, one read); that no thread outside
 *     the set that ran did run is told by the process's CPU clock against
 *     the sum of that set's clocks, and when it cannot be told, every
 *     thread's clock is read (a full scan);
 *   - a thread that ran and now waits in the kernel is walked from the pc
 *     and stack pointer /proc shows (threads/'s pp_thread_walk_waiting),
 *     with no signal, so its wait is neither broken nor lengthened;
 *   - a thread that runs is sent the profiling signal (signals/, a user
 *     with its own value); its handler walks its own stack into a request
 *     slot (answers.c).
 * Counts are kept per thread until its record changes or a window ends
 * (records.c), so a thread that sits still costs no profile work at all.
 *
 * Invariants: the handler side never allocates and takes no lock; the
 * sampler lock (wall_lock) is never taken in a handler; windows receive
 * exactly the periods ticked while they were attached (a swap flushes every
 * pending count first): snapshots are gapless.
 */
#ifndef PP_WALL_H
#define PP_WALL_H
#include "pprof.h"
#include "labels/labels.h"
#include <stdint.h>
#include <time.h>

#define PP_WALL_DEFAULT_HZ 99
#define PP_WALL_MAX_HZ 1000
#define PP_WALL_FRAMES 64

/* Which samples a window keeps. */
enum { PP_WALL_ALL = 0, PP_WALL_OFF_CPU = 1, PP_WALL_ON_CPU = 2 };

/* A running wall recorder's window as the sampler fills it: each sample
 * adds (periods, periods x period_ns), in periods of the sampler's rate. */
typedef struct pp_wall_window {
    int64_t period_ns;      /* the sampler's period now (the sampler's lock) */
    int hz;                 /* the rate the window asked for (pp_wall_attach) */
    int hz_min, hz_max;     /* the sampler's rates since its profile was set */
    int state;              /* PP_WALL_* */
    int units;              /* samples in a unit of work keep PP_UNIT_KEY (the history's) */
    pprof_profile *profile; /* unfinished; replaced by pp_wall_swap */
} pp_wall_window;

/* Attaches w (its profile set) to the sampler, asking for `hz` (0: the
 * rate in force, else PP_WALL_DEFAULT_HZ), starting the sampler thread
 * if none runs. The sampler runs at the highest rate its windows ask
 * for, so a window may get more samples than it asked for (each with
 * its exact share of wall time; pp_wall_swap's profile says so), never
 * fewer. Returns 0 or a PPROF_E* code. Thread-safe. */
int pp_wall_attach(pp_wall_window *w, int hz);
/* Counts every pending sample into the attached windows, then makes
 * `next` w's profile and returns the one it replaces, with a comment
 * when its samples were taken at rates other than w's; with next NULL,
 * w is detached (the sampler slows to the highest rate still asked for,
 * and stops with its last window). Thread-safe. */
pprof_profile *pp_wall_swap(pp_wall_window *w, pprof_profile *next);
/* Counts every pending sample into the attached windows and calls fn
 * with w's profile under the sampler's lock (the sampler waits
 * meanwhile); fn's result. Thread-safe. */
int pp_wall_peek(pp_wall_window *w, int (*fn)(const pprof_profile *p, void *arg), void *arg);
/* The sampler's rate, 0 when no window is attached. Thread-safe. */
int pp_wall_hz(void);
/* The sampler's counters. Thread-safe. */
void pp_wall_stats_fill(pprof_wall_stats *out);

/* pace.c: a uniform draw in [0, 1) from *x (xorshift64*); the short
 * scheduler slice the calling thread asks for (ignored where the kernel
 * has none); a process CPU-time timer that never fires, its signal aimed at
 * thread `tid` (which blocks it), so that reading the process's clock does
 * not add up every thread's time (1 when armed; timer_delete it after).
 * Not for signal handlers. */
double pp_wall_uniform(uint64_t *x);
void pp_wall_short_slice(void);
int pp_wall_process_timer(timer_t *t, int tid);

/* answers.c: stacks of running threads, taken in their profiling-signal
 * handler. */
typedef struct pp_wall_answer {
    int tid;
    int ok;                 /* 1: the thread answered */
    int npcs;               /* the stack, leaf first (a cut one ends in PP_PC_TRUNCATED or PP_PC_STOP_*) */
    uint64_t pcs[PP_WALL_FRAMES + 1];
    const void *labels;     /* a reference to its label set (drop with pp_labels_unref), or NULL */
    pp_trace_snap trace;    /* its span */
    int64_t delay_ns;       /* from the request to the handler's start */
    int in_kernel;          /* it was in a system call as the signal came (its pc follows the call) */
} pp_wall_answer;
/* At most this many threads are asked at once. */
#define PP_WALL_MAX_ASK 64
/* Sends the profiling signal to thread a->tid as request i of a batch
 * (i < PP_WALL_MAX_ASK, from 0 up: 0 starts a batch); right after the
 * thread was looked at, so that little happens between the look and the
 * signal. pp_wall_ask_wait then waits until each of the batch's n threads
 * answered or `timeout_ns` passed, and fills the rest of each a[i]. A
 * thread that answers later is ignored. One caller at a time (the
 * sampler). Thread-safe; not for signal handlers. */
void pp_wall_ask_one(pp_wall_answer *a, int i);
void pp_wall_ask_wait(pp_wall_answer *a, int n, int64_t timeout_ns);
#endif
