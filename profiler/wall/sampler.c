/* sampler.c: the wall-clock sampler thread (see wall.h for the design).
 *
 * Per live registered thread it keeps the record the thread is counted on
 * (thread_state, stack, labels with its span's) and the periods counted on
 * it that no window has received yet (records.c); a record goes to the
 * windows when it changes, when the thread exits and when a window is
 * swapped or attached, so each window gets exactly the periods ticked
 * while it was attached.
 *
 * Each tick (one per period, at a random point of it: see sampler_main):
 *   1. the registry's list (threads/): new threads are added, gone ones
 *      flushed and dropped;
 *   2. which threads ran since their last look: the active threads (those
 *      that ran within KEEP_ACTIVE_NS) have their CPU clocks read; the
 *      process's CPU clock, less their use and the sampler's own, says
 *      whether any other thread ran. That rest accumulates (a tick's
 *      reading skew is given back at the next), and past SCAN_SLACK_NS, or
 *      when threads came or went, every thread's clock is read;
 *   3. a thread that did not run is counted on its record as it is (an
 *      active one only if /proc still shows it in the same call at the
 *      same place: one woken and waiting for a CPU is running); one that
 *      ran is looked at: walked from /proc when it waits (no signal),
 *      asked with the profiling signal when it runs (answers.c);
 *   4. every thread's pending count grows by the periods the tick covers.
 * The biases these rules removed, measured: docs/wall.md, "Accuracy".
 * All under wall_lock, which pp_wall_swap takes too. Lock order: wall_lock,
 * then the threads registry's lock.
 */
#define _GNU_SOURCE
#include "records.h"
#include "base/base.h"
#include "model/model.h"
#include "threads/threads.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SCAN_SLACK_NS 4000 /* unexplained CPU time (beyond the reading skew) that makes a tick read every
                             thread's clock: less than a wake-up and a system call */
#define KEEP_ACTIVE_NS 100000000ll /* a thread that ran is followed by its own clock this long */
/* Running or runnable, for a thread that /proc shows in state R (both):
 *   - its CPU clock moves between two reads: on a CPU, running;
 *   - it does not, and the thread is queued on the sampler's own CPU: the
 *     sampler displaced it as it woke, so it ran at the tick, unless its
 *     answer comes from inside a system call (then it was woken from a
 *     wait and queued there: runnable);
 *   - queued on another CPU: runnable;
 *   - whatever the above, an answer later than RUNNABLE_DELAY_NS waited
 *     for a CPU (a running thread answers within tens of microseconds).
 * Each thread is signalled right after it was looked at, not with the
 * tick's other threads: one that was seen running and entered a wait
 * before the signal came is counted running with the wait's stack, so
 * the time between the look and the signal must stay short.
 * Measured against /proc/<tid>/schedstat: docs/wall.md, "Accuracy". */
#define RUNNABLE_DELAY_NS 1000000
enum { QUEUED = 0, ON_A_CPU = 1, DISPLACED = 2 };

static pp_mutex wall_lock = PP_MUTEX_INIT;
pp_wall_window *pp_wall_wins[PP_WALL_MAX_WINDOWS];
int pp_wall_nwins;
static int rate;          /* in force while windows are attached */
static int running;       /* the sampler thread exists */
static int self_tid;
static int span_what;      /* pp_trace_pairs' what: the unit always (records.c drops it for windows without units) */
static uint64_t sampler_ns_done;

static wthread **th;      /* the known threads */
static size_t nth, capth;
static int *tids_buf;
static void *const **slots_buf;
static void *const **tslots_buf;
static int bufcap;
static uint32_t tick_no;
static uint64_t proc_prev, self_prev;
static int64_t unexplained_acc, skew_prev, skew_reset;
static int have_prev;

/* Where each counter goes in pprof_wall_stats. */
static const size_t stats_field[ST_N] = {
    offsetof(pprof_wall_stats, ticks),     offsetof(pprof_wall_stats, samples),   offsetof(pprof_wall_stats, still),
    offsetof(pprof_wall_stats, looks),     offsetof(pprof_wall_stats, walks),     offsetof(pprof_wall_stats, signals),
    offsetof(pprof_wall_stats, no_answer), offsetof(pprof_wall_stats, full_scans), offsetof(pprof_wall_stats, late)};
_Atomic uint64_t pp_wall_stats[ST_N];

static uint64_t clock_ns(clockid_t c, int *ok)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0) {
        *ok = 0;
        return 0;
    }
    *ok = 1;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void flush_all(void)
{
    for (size_t i = 0; i < nth; i++)
        pp_wall_flush_thread(th[i]);
}

static wthread *find(int tid)
{
    for (size_t i = 0; i < nth; i++) /* most ticks find it where it was: see list_threads */
        if (th[i]->tid == tid)
            return th[i];
    return NULL;
}

static void drop_all(void)
{
    for (size_t i = 0; i < nth; i++) {
        if (th[i]->valid)
            pp_wall_free_labels(th[i]->rec.labels, th[i]->rec.nlabels);
        free(th[i]);
    }
    free(th);
    th = NULL;
    nth = capth = 0;
    have_prev = 0;
}

/* Step 1: the registry's threads, in its order; returns 1 if any came or
 * went. */
static int list_threads(uint32_t stamp)
{
    int n;
    for (;;) {
        n = pp_threads_list(tids_buf, slots_buf, tslots_buf, bufcap);
        if (n < bufcap)
            break;
        int cap = bufcap ? 2 * bufcap : 256;
        int *t = realloc(tids_buf, (size_t)cap * sizeof *t);
        if (t)
            tids_buf = t;
        void *const **s = realloc(slots_buf, (size_t)cap * sizeof *s);
        if (s)
            slots_buf = s;
        void *const **ts = realloc(tslots_buf, (size_t)cap * sizeof *ts);
        if (ts)
            tslots_buf = ts;
        if (!t || !s || !ts)
            break;
        bufcap = cap;
    }
    int changed = 0;
    size_t pos = 0; /* the registry's order is stable: look where the last tick left off first */
    for (int i = 0; i < n; i++) {
        if (tids_buf[i] == self_tid)
            continue;
        wthread *t = NULL;
        if (pos < nth && th[pos]->tid == tids_buf[i])
            t = th[pos];
        else if (!(t = find(tids_buf[i]))) {
            if (nth == capth) {
                size_t cap = capth ? 2 * capth : 256;
                wthread **b = realloc(th, cap * sizeof *b);
                if (!b)
                    continue;
                th = b;
                capth = cap;
            }
            if (!(t = calloc(1, sizeof *t)))
                continue;
            t->tid = tids_buf[i];
            t->active = 1;
            th[nth++] = t;
            changed = 1;
        }
        t->seen = stamp;
        t->slot = slots_buf[i];
        t->tslot = tslots_buf[i];
        pos++;
    }
    size_t k = 0;
    for (size_t i = 0; i < nth; i++) {
        if (th[i]->seen == stamp) {
            th[k++] = th[i];
            continue;
        }
        pp_wall_flush_thread(th[i]); /* gone: its periods so far */
        if (th[i]->valid)
            pp_wall_free_labels(th[i]->rec.labels, th[i]->rec.nlabels);
        free(th[i]);
        changed = 1;
    }
    nth = k;
    return changed;
}

/* Step 2: reads the clocks that must be read, into cpu_now. The process's
 * clock is read before and after the active threads' (P1, P2), and P2 is
 * the one used: the kernel adds a running thread's CPU time to the
 * process's clock only at its scheduler tick, or when one of the thread's
 * clocks is read, so P2 includes every active thread's time up to its
 * read. An active thread that runs on between its read and P2 adds up to
 * P2 - P1 that its read does not, and the tick before left the same kind
 * of error the other way, so the rest is the CPU of threads not followed
 * within D = the two ticks' P2 - P1. It accumulates (the skews cancel
 * from tick to tick, but for the one at the last full scan) until it
 * exceeds SCAN_SLACK_NS + those skews: then some thread outside the set
 * ran, and every thread's clock is read. A thread outside the set that
 * runs on without stopping shows in the process's clock at the next
 * scheduler tick, so it is seen a few milliseconds late at most. */
static void read_clocks(int changed)
{
    int ok;
    uint64_t p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID, &ok);
    int64_t explained = 0;
    for (size_t i = 0; i < nth; i++) {
        wthread *t = th[i];
        t->cpu_now = t->cpu_ns;
        if (!t->active)
            continue;
        uint64_t c = clock_ns(pp_thread_cpu_clock(t->tid), &ok);
        if (!ok)
            continue;
        if (t->have_cpu)
            explained += (int64_t)(c - t->cpu_ns);
        t->cpu_now = c;
    }
    /* After the threads' clocks (see above). */
    uint64_t proc = clock_ns(CLOCK_PROCESS_CPUTIME_ID, &ok);
    uint64_t self = clock_ns(CLOCK_THREAD_CPUTIME_ID, &ok);
    int64_t skew = (int64_t)(proc - p1);
    if (have_prev)
        unexplained_acc += (int64_t)(proc - proc_prev) - explained - (int64_t)(self - self_prev);
    proc_prev = proc;
    self_prev = self;
    int64_t slack = SCAN_SLACK_NS + skew + skew_prev + skew_reset;
    if (unexplained_acc < -(skew + skew_prev)) /* reading skew, not time: bank none of it */
        unexplained_acc = -(skew + skew_prev);
    skew_prev = skew;
    if (!changed && have_prev && unexplained_acc <= slack)
        return;
    have_prev = 1;
    unexplained_acc = 0;
    COUNT(ST_FULL_SCANS, 1);
    for (size_t i = 0; i < nth; i++) {
        wthread *t = th[i];
        if (t->active)
            continue;
        uint64_t c = clock_ns(pp_thread_cpu_clock(t->tid), &ok);
        if (ok)
            t->cpu_now = c;
    }
    /* The scan's reads are the baseline of the next tick's difference. */
    proc_prev = clock_ns(CLOCK_PROCESS_CPUTIME_ID, &ok);
    self_prev = clock_ns(CLOCK_THREAD_CPUTIME_ID, &ok);
    skew_reset = (int64_t)(proc_prev - proc);
}

/* A waiting thread's record from /proc; 0 if it runs. */
static int look_waiting(wthread *t)
{
    pp_thread_stack st;
    memset(&st, 0, sizeof st);
    int rc = pp_thread_walk_waiting(t->tid, &st, t->slot, t->tslot);
    if (!rc)
        return 0;
    COUNT(ST_WALKS, 1);
    t->sp = st.sp;
    t->pc = st.pc;
    wrec r = {.nr = st.syscall, .npcs = st.npcs};
    if (r.npcs > PP_WALL_FRAMES + 1)
        r.npcs = PP_WALL_FRAMES + 1;
    memcpy(r.pcs, st.pcs, (size_t)r.npcs * sizeof *r.pcs);
    if (rc == 2 && t->valid) /* it left the call as its labels were read: it waited there at the tick, with the
                                labels and span it had at its last look (its own are safe to read only while it
                                waits) */
        r.labels = pp_wall_copy_pairs(t->rec.labels, t->rec.nlabels, &r.nlabels);
    else
        r.labels = pp_wall_span_pairs(st.labels, st.nlabels, &st.trace, span_what, &r.nlabels);
    pp_thread_stack_free_labels(&st);
    pp_wall_set_rec(t, &r);
    return 1;
}

/* t is ready to run and waits for a CPU under its record's labels, and its
 * record's stack when `keep_stack` (else under PP_PC_NO_ANSWER); with no
 * record, under PP_PC_NO_ANSWER alone. */
static void runnable(wthread *t, int keep_stack)
{
    wrec r = {.nr = RUNNABLE, .npcs = 1, .pcs = {PP_PC_NO_ANSWER}};
    if (t->valid && keep_stack) {
        r.npcs = t->rec.npcs;
        memcpy(r.pcs, t->rec.pcs, (size_t)r.npcs * sizeof *r.pcs);
    }
    if (t->valid)
        r.labels = pp_wall_copy_pairs(t->rec.labels, t->rec.nlabels, &r.nlabels);
    pp_wall_set_rec(t, &r);
}

/* t waits for a CPU where it last ran (its last stack and labels), or,
 * with no record of running, under PP_PC_NO_ANSWER. */
static void runnable_where_it_ran(wthread *t)
{
    runnable(t, t->valid && ON_CPU(t->rec.nr));
}

/* The answers of running threads: their records (on_cpu[i]: QUEUED,
 * ON_A_CPU or DISPLACED as thread i was asked). */
static void take_answers(wthread **who, pp_wall_answer *a, int n, const char *on_cpu)
{
    for (int i = 0; i < n; i++) {
        wthread *t = who[i];
        COUNT(ST_SIGNALS, 1);
        if (!a[i].ok) { /* still waiting for a CPU */
            COUNT(ST_NO_ANSWER, 1);
            runnable_where_it_ran(t);
            continue;
        }
        int nr = RUNNING;
        if (on_cpu[i] == QUEUED || (on_cpu[i] == DISPLACED && a[i].in_kernel) || a[i].delay_ns > RUNNABLE_DELAY_NS)
            nr = RUNNABLE;
        wrec r = {.nr = nr, .npcs = a[i].npcs};
        memcpy(r.pcs, a[i].pcs, (size_t)r.npcs * sizeof *r.pcs);
        const pprof_label *pairs = NULL;
        size_t np = a[i].labels ? pp_labels_pairs(a[i].labels, &pairs) : 0;
        r.labels = pp_wall_span_pairs(pairs, np, &a[i].trace, span_what, &r.nlabels);
        if (a[i].labels)
            pp_labels_unref(a[i].labels);
        pp_wall_set_rec(t, &r);
    }
}

/* The last batch of a tick's requests is not waited for: the sampler goes
 * back to sleep and takes the answers at its next tick, or when a window
 * is attached or swapped (take_later). Waiting for them kept it from
 * its next tick: a thread it displaced from its own CPU answers only
 * once the sampler sleeps, and the sampler, woken by the answer after a
 * few microseconds asleep, had run ahead of that thread's share of the
 * CPU and waited for it until the thread next blocked or the scheduler's
 * tick (up to 4 ms at HZ=250): half of those wake-ups waited more than
 * 0.3 ms (`perf sched timehist`, prog_wall_linked at 400 Hz, 315 of 613
 * in 4 s, 512 ms in all). Its next tick then looked when that thread
 * blocked: a thread cycling through computing and poll() showed 1 to 2
 * points of its computing as poll (docs/wall.md). The periods of a tick
 * still to be answered wait in each thread's `held`, counted on the
 * record the answer gives. */
static pp_wall_answer ask[PP_WALL_MAX_ASK];
static wthread *who[PP_WALL_MAX_ASK];
static char on_cpu[PP_WALL_MAX_ASK];
static int nlater;
static int64_t later_end; /* when the batch's answers are given up on */

/* Under wall_lock, before the threads' list or the windows change. */
static void take_later(void)
{
    if (!nlater)
        return;
    int64_t left = later_end - pp_now_ns(CLOCK_MONOTONIC);
    pp_wall_ask_wait(ask, nlater, left > 0 ? left : 0);
    take_answers(who, ask, nlater, on_cpu);
    for (int i = 0; i < nlater; i++) {
        who[i]->pending += who[i]->held;
        who[i]->held = 0;
    }
    nlater = 0;
}

static void tick(uint64_t periods, int64_t period_ns)
{
    take_later();
    uint32_t stamp = ++tick_no;
    int changed = list_threads(stamp);
    /* A late tick: the periods it missed are counted half on what each
     * thread was at the last tick, half on what it is now. Lateness comes
     * with busy CPUs, when threads are more often running than on time:
     * counting them all on the state now would favour running. */
    uint64_t before = (periods - 1) / 2;
    for (size_t i = 0; before && i < nth; i++)
        if (th[i]->valid)
            th[i]->pending += before;
    read_clocks(changed);
    int my_cpu = sched_getcpu();
    int nask = 0;
    /* A thread ready to run may wait for a CPU before it answers; the tick
     * does not wait for it longer than a fifth of a period (at least 1 ms):
     * its state is what /proc said, its stack its last running one. */
    int64_t timeout = period_ns / 5 < 1000000 ? 1000000 : period_ns / 5;
    int keep = (int)(KEEP_ACTIVE_NS / period_ns) + 1;
    for (size_t i = 0; i < nth; i++) {
        wthread *t = th[i];
        int moved = !t->have_cpu || t->cpu_now != t->cpu_ns, ran = moved;
        t->cpu_ns = t->cpu_now;
        t->have_cpu |= t->cpu_now != 0;
        int nr;
        uint64_t sp, pc;
        if (t->valid && !moved && t->active && !ON_CPU(t->rec.nr)) {
            /* Followed closely, and no CPU since: where it waited, unless
             * woken and waiting for a CPU (then it is looked at). */
            moved = !pp_thread_syscall(t->tid, &nr, &sp, &pc) || nr != t->rec.nr || sp != t->sp || pc != t->pc;
        } else if (t->valid && !moved && t->active && t->rec.nr == RUNNING) {
            /* It ran, then used no CPU for a period: it waits now (looked
             * at), or is ready to run and waits for a CPU where it ran. */
            moved = pp_thread_syscall(t->tid, &nr, &sp, &pc);
            if (!moved)
                runnable_where_it_ran(t);
        }
        if (t->valid && !moved) { /* where it was: no look */
            t->active = ++t->still_ticks < keep;
            COUNT(ST_STILL, 1);
            continue;
        }
        int first = !t->valid;
        t->active = 1;
        t->still_ticks = 0;
        COUNT(ST_LOOKS, 1);
        if (look_waiting(t)) {
            if (first) { /* not known to have run: followed by the process's clock, as if still */
                t->active = 0;
                t->still_ticks = keep;
            }
            continue;
        }
        /* State R: where it is (see RUNNABLE_DELAY_NS). */
        uint64_t c;
        on_cpu[nask] = pp_thread_off_cpu(t->tid, &c) ? QUEUED : ON_A_CPU;
        if (on_cpu[nask] == QUEUED && !ran && c == t->cpu_ns && t->valid && !ON_CPU(t->rec.nr)) {
            /* Seen waiting, no CPU since, ready to run: woken from that
             * wait, waiting for a CPU to return from the call. Counted on
             * the wait's stack and labels, and not signalled: a signal
             * after the call's time ran out makes poll fail with EINTR
             * (it checks for signals before its timeout), which the
             * dispatcher must then undo (signals/restart.c). */
            runnable(t, 1);
            continue;
        }
        if (on_cpu[nask] == QUEUED && pp_thread_cpu(t->tid) == my_cpu)
            on_cpu[nask] = DISPLACED;
        ask[nask].tid = t->tid;
        pp_wall_ask_one(&ask[nask], nask); /* now: its state is the one just read */
        who[nask++] = t;
        if (nask == PP_WALL_MAX_ASK) {
            pp_wall_ask_wait(ask, nask, timeout);
            take_answers(who, ask, nask, on_cpu);
            nask = 0;
        }
    }
    for (int i = 0; i < nask; i++)
        who[i]->held = periods - before; /* at least 1 */
    nlater = nask;
    later_end = pp_now_ns(CLOCK_MONOTONIC) + timeout;
    for (size_t i = 0; i < nth; i++)
        if (th[i]->valid && !th[i]->held)
            th[i]->pending += periods - before;
    COUNT(ST_TICKS, 1);
    COUNT(ST_LATE, periods - 1);
}

/* Ticks are stratified: period k of the rate is [t0 + kP, t0 + (k+1)P) and
 * its tick falls at a uniformly drawn point of it, so a thread whose work
 * keeps step with the rate is not always seen in the same phase, and each
 * period is still counted exactly once. A tick that wakes in a later
 * period counts the periods since the last tick's (every thread at its
 * state now). */
/* The periods (see sampler_main): period k is [slot_t0 + k slot_ns,
 * slot_t0 + (k + 1) slot_ns); slot_k is the last one counted. Under
 * wall_lock. */
static int64_t slot_t0, slot_k, slot_ns;

/* Counts the periods that ended since the last one counted, on each
 * thread's record as it is (the last tick's), so that a window swapped or
 * attached while the sampler is late gets every period of its time (the
 * sampler's next tick counts from the next one on). Under wall_lock. */
static void catch_up(int64_t now)
{
    if (!running || !slot_ns || slot_ns != 1000000000ll / rate)
        return;
    int64_t done = (now - slot_t0) / slot_ns - 1; /* the last period that ended */
    if (done <= slot_k)
        return;
    for (size_t i = 0; i < nth; i++)
        if (th[i]->valid)
            th[i]->pending += (uint64_t)(done - slot_k);
    COUNT(ST_LATE, (uint64_t)(done - slot_k));
    slot_k = done;
}

static void *sampler_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-wall");
    pprof_labels_unref(pp_own_begin()); /* the profiler's own work */
    pp_wall_short_slice();
    timer_t sum_timer;
    int have_timer = pp_wall_process_timer(&sum_timer, (int)syscall(SYS_gettid));
    pp_mutex_lock(&wall_lock);
    self_tid = (int)syscall(SYS_gettid);
    slot_t0 = pp_now_ns(CLOCK_MONOTONIC);
    slot_k = -1;
    slot_ns = 1000000000ll / rate;
    uint64_t seed = ((uint64_t)slot_t0 ^ (uint64_t)self_tid << 32) | 1;
    int64_t next = slot_t0 + (int64_t)(pp_wall_uniform(&seed) * (double)slot_ns);
    pp_mutex_unlock(&wall_lock);
    for (;;) {
        struct timespec ts = {next / 1000000000, next % 1000000000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        pp_mutex_lock(&wall_lock);
        take_later();
        if (pp_wall_nwins == 0) {
            /* The threads' records stay (their windows took every count):
             * the next window's first tick reads every thread's clock and
             * looks again only at those that ran meanwhile, not at all. */
            for (size_t i = 0; i < nth; i++)
                th[i]->active = 0;
            have_prev = 0;
            int ok;
            sampler_ns_done += clock_ns(CLOCK_THREAD_CPUTIME_ID, &ok);
            running = 0;
            pp_mutex_unlock(&wall_lock);
            if (have_timer)
                timer_delete(sum_timer);
            return NULL;
        }
        int64_t period = 1000000000ll / rate, now = pp_now_ns(CLOCK_MONOTONIC);
        if (period != slot_ns) { /* a new rate (windows detached and attached meanwhile): new periods */
            slot_t0 = now;
            slot_k = -1;
            slot_ns = period;
        }
        int64_t j = (now - slot_t0) / period; /* the period it woke in */
        if (j <= slot_k)
            j = slot_k + 1;
        uint64_t periods = (uint64_t)(j - slot_k);
        slot_k = j;
        tick(periods, period);
        next = slot_t0 + (slot_k + 1) * period + (int64_t)(pp_wall_uniform(&seed) * (double)period);
        pp_mutex_unlock(&wall_lock);
    }
}

static int start_locked(void)
{
    self_tid = 0; /* the thread sets them */
    slot_ns = 0;
    if (pp_spawn_detached(sampler_main, NULL, NULL))
        return pp_error_detail(PPROF_ESYS, "cannot start the wall-clock sampler thread");
    running = 1;
    return 0;
}

static void fork_prepare(void) { pp_mutex_lock(&wall_lock); }
static void fork_parent(void) { pp_mutex_unlock(&wall_lock); }
/* The child has no sampler thread and no window of its own. */
static void fork_child(void)
{
    wall_lock = (pp_mutex)PP_MUTEX_INIT;
    pp_wall_nwins = 0;
    running = 0;
    sampler_ns_done = 0;
    slot_ns = 0;
    nlater = 0; /* the answers were the parent's threads' */
    drop_all();
}

static void init_once(void)
{
    pp_atfork(fork_prepare, fork_parent, fork_child);
}

/* Counts every pending sample into the attached windows (wall_lock held). */
static void count_pending_locked(void)
{
    take_later();
    catch_up(pp_now_ns(CLOCK_MONOTONIC));
    flush_all();
}

/* w counts in the sampler's periods from now on (wall_lock held). */
static void window_at_rate(pp_wall_window *w)
{
    w->period_ns = 1000000000ll / rate;
    if (!w->hz_max || rate > w->hz_max)
        w->hz_max = rate;
    if (!w->hz_min || rate < w->hz_min)
        w->hz_min = rate;
}

/* Makes hz the sampler's rate while windows are attached (wall_lock held,
 * every pending count flushed at the old rate): the new periods begin
 * where the last one counted ended, so none is lost or counted twice
 * (the sampler's wake planned at the old rate counts those it missed). */
static void set_rate_locked(int hz)
{
    if (running && slot_ns) {
        slot_t0 += (slot_k + 1) * slot_ns;
        slot_k = -1;
        slot_ns = 1000000000ll / hz;
    }
    rate = hz;
    for (int i = 0; i < pp_wall_nwins; i++)
        window_at_rate(pp_wall_wins[i]);
}

int pp_wall_attach(pp_wall_window *w, int hz)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_once);
    pp_mutex_lock(&wall_lock);
    int rc = 0;
    if (pp_wall_nwins == PP_WALL_MAX_WINDOWS) {
        rc = pp_error_detail(PPROF_ELIMIT, "at most %d wall profiles at once", PP_WALL_MAX_WINDOWS);
        goto out;
    }
    w->hz = hz ? hz : pp_wall_nwins ? rate : PP_WALL_DEFAULT_HZ;
    w->hz_min = w->hz_max = 0;
    if (!pp_wall_nwins) {
        rate = w->hz;
        span_what = (pp_env_trace_id_label() ? PP_TRACE_ID_LABEL : 0) | PP_TRACE_UNIT_LABEL;
    }
    if (!running && (rc = start_locked()) != 0)
        goto out;
    count_pending_locked(); /* what was ticked before belongs to the windows already attached */
    pp_wall_wins[pp_wall_nwins++] = w;
    if (w->hz > rate)
        set_rate_locked(w->hz);
    else
        window_at_rate(w);
out:
    pp_mutex_unlock(&wall_lock);
    return rc;
}

pprof_profile *pp_wall_swap(pp_wall_window *w, pprof_profile *next)
{
    pp_mutex_lock(&wall_lock);
    count_pending_locked();
    pprof_profile *p = w->profile;
    pp_profile_say_rates(p, w->hz, w->hz_min, w->hz_max, "the nanoseconds are exact");
    w->profile = next;
    w->hz_min = w->hz_max = rate;
    if (!next) {
        int top = 0;
        for (int i = 0; i < pp_wall_nwins; i++)
            if (pp_wall_wins[i] == w)
                pp_wall_wins[i--] = pp_wall_wins[--pp_wall_nwins];
            else if (pp_wall_wins[i]->hz > top)
                top = pp_wall_wins[i]->hz;
        if (top && top < rate)
            set_rate_locked(top);
    }
    pp_mutex_unlock(&wall_lock);
    return p;
}

int pp_wall_peek(pp_wall_window *w, int (*fn)(const pprof_profile *p, void *arg), void *arg)
{
    pp_mutex_lock(&wall_lock);
    count_pending_locked();
    int rc = fn(w->profile, arg);
    pp_mutex_unlock(&wall_lock);
    return rc;
}

int pp_wall_hz(void)
{
    pp_mutex_lock(&wall_lock);
    int hz = pp_wall_nwins ? rate : 0;
    pp_mutex_unlock(&wall_lock);
    return hz;
}

void pp_wall_stats_fill(pprof_wall_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < ST_N; i++)
        *(uint64_t *)(void *)((char *)out + stats_field[i]) = atomic_load(&pp_wall_stats[i]);
    pp_mutex_lock(&wall_lock);
    int ok;
    out->hz = pp_wall_nwins ? rate : 0;
    out->threads = running ? (int64_t)nth : 0;
    out->sampler_ns = sampler_ns_done + (running && self_tid ? clock_ns(pp_thread_cpu_clock(self_tid), &ok) : 0);
    pp_mutex_unlock(&wall_lock);
}

/* Thread-safe. */
void pprof_wall_stats_get(pprof_wall_stats *out)
{
    if (out)
        pp_wall_stats_fill(out);
}
