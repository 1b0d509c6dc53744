/* samples.c: the CPU samples the profiling signal takes (the handler
 * side of the CPU sampler; the timers are timers.c's).
 *
 * Four users of the signal dispatcher (signals/): a timer's tick, the
 * setitimer fallback's tick, a window end's queued signal and a
 * catch-up's. Each captures the stack into a ring cell (no locks, no
 * allocation) with the thread's label set and span, and a weight.
 *
 * The weight of a timer's signal is the thread's own CPU time since its
 * previous one, in periods (the remainder carried to the next), and a
 * thread's first since its timer was armed weighs the time since then
 * (the arming leaves the thread's CPU clock in its state; a thread without
 * one weighs 1 + si_overrun). The kernel's overrun count loses expirations
 * on a loaded machine (a thread burning 4 s of CPU at 100 Hz under a load
 * of 14 on 2 cores: 304 of 400), and the thread's CPU clock does not:
 * reading it is one system call per signal. A window end's and a
 * catch-up's signal weigh the time since the thread's last signal. An
 * exiting thread adds its time since its last signal as one more sample on
 * that signal's stack (pp_cpu_count_tail). Accounting starts afresh when a
 * profile starts, and for one thread when its timer is set again because
 * it blocks the signal (the resets ring), so time already counted as not
 * sampled is never counted twice.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"
#include "signals/signals.h"
#include "model/model.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <string.h>

#define RING_CELLS 1024 /* 2 MiB, mapped and populated once, when profiling first starts */

/* A thread's CPU time at its last sample (signal handler only). */
typedef struct cpu_acct {
    uint32_t gen, reset_seen;
    uint64_t last_ns;
    int64_t carry; /* CPU time not yet weighed; below 0 after a window end rounded up */
} cpu_acct;
static __thread cpu_acct my_acct;

static _Atomic uint64_t st_catch_ups, st_signals, st_samples, st_truncated, st_handler_ns;
static _Atomic uint64_t st_hist[PPROF_CPU_HIST_BUCKETS];
static _Atomic uint32_t flush_acks; /* window-end signals handled */
static int ring_ready;              /* registry lock */

pp_ring pp_cpu_ring;

/* async-signal-safe */
static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether this thread's timer was set again since it last looked (or
 * too many were to tell). async-signal-safe */
static bool was_reset(int tid)
{
    uint32_t now = atomic_load_explicit(&pp_cpu_reset_seq, memory_order_acquire);
    uint32_t seen = my_acct.reset_seen;
    if (now == seen)
        return false;
    my_acct.reset_seen = now;
    if (now - seen > PP_RESETS)
        return true;
    for (uint32_t q = seen + 1; q != now + 1; q++) {
        uint32_t i = q % PP_RESETS;
        if (atomic_load_explicit(&pp_cpu_resets[i].seq, memory_order_acquire) == q &&
            atomic_load_explicit(&pp_cpu_resets[i].tid, memory_order_relaxed) == tid)
            return true;
    }
    return false;
}

/* A starting thread: earlier resets were of other threads. */
void pp_cpu_samples_thread_start(void)
{
    my_acct.reset_seen = atomic_load(&pp_cpu_reset_seq);
}

/* Where the thread's accounting in profile `gen` starts, as its timer's
 * arming left it in its state: 1 and *ns, *carry, or 0 when it did not.
 * async-signal-safe */
static int start_of(uint32_t gen, uint64_t *ns, uint64_t *carry)
{
    pp_thread_state *st = pp_cpu_my_state;
    /* Sequentially consistent: the arming zeroes start_gen before it
     * rewrites the values, so if start_gen reads `gen` both times, the
     * values read between are that arming's. */
    if (!st || atomic_load(&st->start_gen) != gen)
        return 0;
    *ns = atomic_load(&st->start_ns);
    *carry = atomic_load(&st->start_carry);
    return atomic_load(&st->start_gen) == gen;
}

/* What a sample's weight is for: a timer's tick, a window end or a
 * catch-up (the thread goes on), or the thread's exit. */
enum { WEIGH_TICK, WEIGH_FLUSH, WEIGH_EXIT };

/* The weight of one timer signal (see the top of the file), or of a
 * window end's, catch-up's or exit's (`flush`: the thread's CPU time
 * since its last signal, or since its timer was armed; si is not read and
 * may be NULL). async-signal-safe */
static uint64_t sample_weight(const siginfo_t *si, int hz, int flush)
{
    uint64_t kernel = flush ? 0 : 1 + (uint64_t)(si->si_code == SI_TIMER && si->si_overrun > 0 ? si->si_overrun : 0);
    struct timespec ts;
    if ((!flush && si->si_code != SI_TIMER) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
        return kernel;
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint32_t gen = atomic_load_explicit(&pp_cpu_gen, memory_order_relaxed);
    if (pp_cpu_my_state)
        atomic_store_explicit(&pp_cpu_my_state->counted_ns, now, memory_order_relaxed);
    if (was_reset(pp_cpu_tid())) { /* that time was counted as not sampled */
        my_acct = (cpu_acct){gen, my_acct.reset_seen, now, 0};
        return kernel;
    }
    if (my_acct.gen != gen || now < my_acct.last_ns) {
        uint64_t start, carry;
        if (!start_of(gen, &start, &carry) || now < start) {
            my_acct = (cpu_acct){gen, my_acct.reset_seen, now, 0};
            return kernel;
        }
        my_acct = (cpu_acct){gen, my_acct.reset_seen, start, (int64_t)carry};
    }
    /* A window end weighs the thread's time to the nearest period, not
     * down: a process that ends with its window (a tree's member exiting)
     * left half a period per thread unweighed on average. The difference
     * is carried to the next window, so a gapless series stays exact. A
     * thread's exit weighs it down: its accounting began a random part of
     * a period early (the carry its arming left), so whole periods down
     * are its time on average, where the nearest would add half a period
     * to every thread (a thread per request of 0.3 ms would count 0.8 at
     * 1000 Hz, 5.3 ms at 100). */
    int64_t period = pp_cpu_period_ns(hz);
    int64_t elapsed = (int64_t)(now - my_acct.last_ns) + my_acct.carry;
    my_acct.last_ns = now;
    int64_t w = elapsed <= 0 ? 0 : flush == WEIGH_FLUSH ? (elapsed + period / 2) / period : elapsed / period;
    my_acct.carry = elapsed - w * period;
    return (uint64_t)w;
}

/* Copies the record's stack, labels and span to the thread's state
 * (a deeper stack ends in the truncation frame). The reference to the
 * set it replaces goes with the record, for the collector to drop: the
 * handler never frees. async-signal-safe */
static void keep_last(pp_record *r)
{
    pp_thread_state *l = pp_cpu_my_state;
    if (!l)
        return;
    uint32_t k = r->npcs <= PP_TAIL_FRAMES ? r->npcs : PP_TAIL_FRAMES;
    for (uint32_t i = 0; i < k; i++)
        l->pcs[i] = r->pcs[i];
    if (r->npcs > PP_TAIL_FRAMES)
        l->pcs[PP_TAIL_FRAMES - 1] = PP_PC_TRUNCATED;
    l->n = k;
    l->gen = my_acct.gen;
    r->release = l->labels;
    l->labels = pp_labels_current_ref();
    l->trace = r->trace;
}

/* async-signal-safe */
static void take_sample(siginfo_t *si, void *uc, int flush)
{
    /* A timer's last signal can arrive after profiling stopped: it belongs
     * to no window (and the next one must not get it). */
    int hz = atomic_load_explicit(&pp_cpu_rate, memory_order_relaxed);
    if (!hz)
        return;
    uint64_t t0 = mono_ns();
    uint64_t weight = sample_weight(si, hz, flush);
    atomic_fetch_add_explicit(&st_signals, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st_samples, weight, memory_order_relaxed);
    if (weight == 0) /* less than a period of CPU since the last one */
        return;
    size_t ticket;
    pp_record *r = pp_ring_reserve(&pp_cpu_ring, &ticket);
    if (!r) {
        atomic_fetch_add_explicit(&pp_cpu_st_lost, weight, memory_order_relaxed);
        atomic_fetch_add_explicit(&pp_cpu_st_lost_ns, weight * (uint64_t)pp_cpu_period_ns(hz), memory_order_relaxed);
    } else {
        int end;
        int n = pp_unwind_signal(uc, r->pcs, atomic_load_explicit(&pp_cpu_frames, memory_order_relaxed), &end);
        if (end) /* deeper than max_frames, or cut where the walk stopped */
            r->pcs[n++] = pp_pc_stack_end(end);
        if (end == PP_UNWIND_TRUNCATED)
            atomic_fetch_add_explicit(&st_truncated, 1, memory_order_relaxed);
        r->npcs = (uint32_t)n;
        r->weight = weight;
        r->hz = hz;
        r->tid = pp_cpu_tid();
        r->labels = pp_labels_current_ref();
        pp_trace_capture(&r->trace);
        r->release = NULL;
        keep_last(r);
        pp_ring_publish(&pp_cpu_ring, ticket);
    }
    uint64_t dt = mono_ns() - t0;
    atomic_fetch_add_explicit(&st_handler_ns, dt, memory_order_relaxed);
    uint64_t bucket = dt / 100 < PPROF_CPU_HIST_BUCKETS ? dt / 100 : PPROF_CPU_HIST_BUCKETS - 1;
    atomic_fetch_add_explicit(&st_hist[bucket], 1, memory_order_relaxed);
}

/* A timer's tick. async-signal-safe */
static int on_tick(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    take_sample(si, uc, WEIGH_TICK);
    return 1;
}

/* The setitimer fallback's tick (SIGPROF from the kernel): ours only in
 * that mode. async-signal-safe */
static int on_kernel_tick(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    if (!pp_cpu_fallback)
        return 0;
    take_sample(si, uc, WEIGH_TICK);
    return 1;
}

/* A window end's signal (pp_cpu_flush). async-signal-safe */
static int on_flush(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    take_sample(si, uc, WEIGH_FLUSH);
    atomic_fetch_add_explicit(&flush_acks, 1, memory_order_release);
    return 1;
}

/* A catch-up's signal (pp_cpu_catch_up). async-signal-safe */
static int on_catch_up(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    take_sample(si, uc, WEIGH_FLUSH);
    atomic_fetch_add_explicit(&st_catch_ups, 1, memory_order_relaxed);
    return 1;
}

int pp_cpu_samples_init(void)
{
    if (!ring_ready) {
        if (pp_ring_init(&pp_cpu_ring, RING_CELLS))
            return pp_fail(PPROF_ENOMEM);
        if (pp_signal_register(PP_SIG_TIMER, PP_TIMER_VALUE, on_tick) ||
            pp_signal_register(PP_SIG_KERNEL, 0, on_kernel_tick) ||
            pp_signal_register(PP_SIG_QUEUED, PP_FLUSH_VALUE, on_flush) ||
            pp_signal_register(PP_SIG_QUEUED, PP_CATCHUP_VALUE, on_catch_up))
            return pp_fail(PPROF_ELIMIT);
        ring_ready = 1;
    }
    return pp_signal_install();
}

uint32_t pp_cpu_flush_acks(void)
{
    return atomic_load_explicit(&flush_acks, memory_order_acquire);
}

/* An exiting thread's CPU time since its last signal, in whole periods,
 * as one more sample on that signal's stack, labels and span; a thread
 * that had no signal in this profile (it started during it: its time
 * counts from its start) has it on the function it was started with, with
 * its labels and span now. The timer would never tell it: on a loaded
 * machine the kernel checks CPU timers only at the scheduler ticks that
 * find the thread running, so signals can be hundreds of milliseconds of
 * CPU apart. A thread that blocked the signal itself (`was_blocked`) has
 * that time counted as not sampled instead. Also the thread that ends a
 * window (pp_cpu_flush; not `exiting`). The profiling signal is blocked. */
void pp_cpu_count_tail(int was_blocked, int exiting)
{
    pp_thread_state *l = pp_cpu_my_state;
    int hz = atomic_load(&pp_cpu_rate);
    if (!l || !hz)
        return;
    int have = l->n && l->gen == atomic_load(&pp_cpu_gen);
    if (!have && !l->root)
        return;
    uint64_t weight = sample_weight(NULL, hz, exiting ? WEIGH_EXIT : WEIGH_FLUSH);
    if (weight == 0)
        return;
    uint64_t ns = weight * (uint64_t)pp_cpu_period_ns(hz);
    if (was_blocked) {
        atomic_fetch_add(&pp_cpu_st_blocked, weight);
        atomic_fetch_add(&pp_cpu_st_blocked_ns, ns);
        return;
    }
    atomic_fetch_add(&st_samples, weight);
    size_t ticket;
    pp_record *r = pp_ring_reserve(&pp_cpu_ring, &ticket);
    if (!r) {
        atomic_fetch_add(&pp_cpu_st_lost, weight);
        atomic_fetch_add(&pp_cpu_st_lost_ns, ns);
        return;
    }
    if (have) {
        memcpy(r->pcs, l->pcs, l->n * sizeof *l->pcs);
        r->npcs = l->n;
        r->labels = pprof_labels_ref((pprof_labels *)l->labels); /* l holds one: it is alive */
        r->trace = l->trace;
    } else { /* no stack of its own: its start function, under a root that says so */
        r->pcs[0] = l->root;
        r->pcs[1] = PP_PC_AT_EXIT;
        r->npcs = 2;
        r->labels = pp_labels_current_ref();
        pp_trace_capture(&r->trace);
    }
    r->weight = weight;
    r->hz = hz;
    r->tid = pp_cpu_tid();
    r->release = NULL;
    pp_ring_publish(&pp_cpu_ring, ticket);
}

uint64_t pp_cpu_lost_ns(void)
{
    return atomic_load(&pp_cpu_st_lost_ns);
}

void pp_cpu_stats_fill(pprof_cpu_stats *out)
{
    memset(out, 0, sizeof *out);
    out->signals = atomic_load(&st_signals);
    out->samples = atomic_load(&st_samples);
    out->lost = atomic_load(&pp_cpu_st_lost);
    out->truncated = atomic_load(&st_truncated);
    out->handler_ns = atomic_load(&st_handler_ns);
    out->threads_timed = pp_cpu_threads();
    out->hz = atomic_load(&pp_cpu_rate);
    out->handler_reclaimed = pp_signal_reclaimed();
    out->blocked = atomic_load(&pp_cpu_st_blocked);
    out->catch_ups = atomic_load(&st_catch_ups);
    for (int i = 0; i < PPROF_CPU_HIST_BUCKETS; i++)
        out->handler_hist[i] = atomic_load(&st_hist[i]);
}
