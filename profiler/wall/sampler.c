/* sampler.c: the wall-clock sampler thread (see wall.h for the design).
 *
 * Per live registered thread it keeps the record the thread is counted on
 * (thread_state, stack, labels) and the periods counted on it that no
 * window has received yet; a record goes to the windows when it changes,
 * when the thread exits and when a window is swapped or attached, so each
 * window gets exactly the periods ticked while it was attached.
 *
 * Each tick:
 *   1. the registry's list (threads/): new threads are added, gone ones
 *      flushed and dropped;
 *   2. which threads ran since their last look: each thread that ran at
 *      its previous look has its CPU clock read; the process's CPU clock,
 *      less their use and the sampler's own, says whether any other thread
 *      ran. That rest accumulates (a tick's reading skew is given back at
 *      the next), and past SCAN_SLACK_NS, or when threads came or went,
 *      every thread's clock is read;
 *   3. a thread that did not run is counted on its record as it is; one
 *      that ran is looked at: walked from /proc when it waits (no signal),
 *      asked with the profiling signal when it runs (answers.c);
 *   4. every thread's pending count grows by the periods the tick covers.
 * All under wall_lock, which pp_wall_swap takes too. Lock order: wall_lock,
 * then the threads registry's lock.
 */
#define _GNU_SOURCE
#include "wall.h"
#include "base/base.h"
#include "model/model.h"
#include "threads/threads.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_WINDOWS 64
#define SCAN_SLACK_NS 4000 /* unexplained CPU time (beyond the reading skew) that makes a tick read every
                             thread's clock: less than a wake-up and a system call */
#define RUNNING (-1)         /* a record's state: running */

/* What a thread is counted on. */
typedef struct wrec {
    int nr;               /* RUNNING, or the system call it waits in */
    int npcs;
    uint64_t pcs[PP_WALL_FRAMES + 1];
    pprof_label *labels;  /* owned copies, sorted by key, without thread_state */
    size_t nlabels;
} wrec;

typedef struct wthread {
    int tid;
    uint32_t seen;        /* the tick that last listed it */
    void *const *slot;    /* its label slot */
    int have_cpu, active, valid;
    uint64_t cpu_ns;      /* its CPU clock at its last look */
    uint64_t cpu_now;     /* read this tick */
    wrec rec;             /* valid: what it is counted on */
    uint64_t pending;     /* periods counted on rec, not yet in the windows */
} wthread;

static pp_mutex wall_lock = PP_MUTEX_INIT;
static pp_wall_window *wins[MAX_WINDOWS];
static int nwins;
static int rate;          /* in force while windows are attached */
static int running;       /* the sampler thread exists */
static int self_tid;
static int trace_id;
static clockid_t sampler_clock;
static uint64_t sampler_ns_done;

static wthread **th;      /* the known threads */
static size_t nth, capth;
static int *tids_buf;
static void *const **slots_buf;
static int bufcap;
static uint32_t tick_no;
static uint64_t proc_prev, self_prev;
static int64_t unexplained_acc, skew_prev, skew_reset;
static int have_prev;

static _Atomic uint64_t st_late, st_ticks, st_samples, st_looks, st_walks, st_signals, st_no_answer, st_full_scans,
    st_still;

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

static clockid_t thread_clock(int tid)
{
    /* The kernel's encoding of a thread's CPU clock: ~tid << 3 | SCHED | PERTHREAD. */
    return (clockid_t)((~(unsigned)tid) << 3) | 6;
}

static void free_labels(pprof_label *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++) {
        free((char *)l[i].key);
        free((char *)l[i].value);
    }
    free(l);
}

static int same_rec(const wrec *a, const wrec *b)
{
    if (a->nr != b->nr || a->npcs != b->npcs || a->nlabels != b->nlabels ||
        memcmp(a->pcs, b->pcs, (size_t)a->npcs * sizeof *a->pcs))
        return 0;
    for (size_t i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i].key, b->labels[i].key) || strcmp(a->labels[i].value, b->labels[i].value))
            return 0;
    return 1;
}

/* Adds t's pending periods to every window that keeps its state. */
static void flush_thread(wthread *t)
{
    if (!t->valid || !t->pending)
        return;
    pprof_label l[70];
    size_t n = 0, k = 0;
    char buf[24];
    const char *state = t->rec.nr == RUNNING ? "running" : pp_wall_syscall_name(t->rec.nr, buf);
    for (; k < t->rec.nlabels && n < 64 && strcmp(t->rec.labels[k].key, "thread_state") < 0; k++)
        l[n++] = t->rec.labels[k];
    l[n++] = (pprof_label){"thread_state", state};
    for (; k < t->rec.nlabels && n < 65; k++)
        if (strcmp(t->rec.labels[k].key, "thread_state"))
            l[n++] = t->rec.labels[k];
    for (int i = 0; i < nwins; i++) {
        pp_wall_window *w = wins[i];
        if ((w->state == PP_WALL_OFF_CPU && t->rec.nr == RUNNING) || (w->state == PP_WALL_ON_CPU && t->rec.nr != RUNNING))
            continue;
        int64_t v[2] = {(int64_t)t->pending, (int64_t)t->pending * w->period_ns};
        pp_profile_add(w->profile, t->rec.pcs, (size_t)t->rec.npcs, v, l, n);
    }
    atomic_fetch_add_explicit(&st_samples, t->pending, memory_order_relaxed);
    t->pending = 0;
}

static void flush_all(void)
{
    for (size_t i = 0; i < nth; i++)
        flush_thread(th[i]);
}

/* Makes r (taken over) t's record, flushing the old one if it differs. */
static void set_rec(wthread *t, wrec *r)
{
    if (t->valid && same_rec(&t->rec, r)) {
        free_labels(r->labels, r->nlabels);
        return;
    }
    flush_thread(t);
    if (t->valid)
        free_labels(t->rec.labels, t->rec.nlabels);
    t->rec = *r;
    t->valid = 1;
}

static int cmp_label(const void *a, const void *b)
{
    return strcmp(((const pprof_label *)a)->key, ((const pprof_label *)b)->key);
}

/* Owned, sorted copies of n pairs (NULL, 0 when out of memory). */
static pprof_label *copy_pairs(const pprof_label *p, size_t n, size_t *out_n)
{
    *out_n = 0;
    pprof_label *l = n ? calloc(n, sizeof *l) : NULL;
    if (!l)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        l[i].key = strdup(p[i].key);
        l[i].value = strdup(p[i].value);
        if (!l[i].key || !l[i].value) {
            free_labels(l, i + 1);
            return NULL;
        }
    }
    qsort(l, n, sizeof *l, cmp_label);
    *out_n = n;
    return l;
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
            free_labels(th[i]->rec.labels, th[i]->rec.nlabels);
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
        n = pp_threads_list(tids_buf, slots_buf, bufcap);
        if (n < bufcap)
            break;
        int cap = bufcap ? 2 * bufcap : 256;
        int *t = realloc(tids_buf, (size_t)cap * sizeof *t);
        if (t)
            tids_buf = t;
        void *const **s = realloc(slots_buf, (size_t)cap * sizeof *s);
        if (s)
            slots_buf = s;
        if (!t || !s)
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
        pos++;
    }
    size_t k = 0;
    for (size_t i = 0; i < nth; i++) {
        if (th[i]->seen == stamp) {
            th[k++] = th[i];
            continue;
        }
        flush_thread(th[i]); /* gone: its periods so far */
        if (th[i]->valid)
            free_labels(th[i]->rec.labels, th[i]->rec.nlabels);
        free(th[i]);
        changed = 1;
    }
    nth = k;
    return changed;
}

/* Step 2: reads the clocks that must be read, into cpu_now. The process's
 * clock is read before and after the active threads' (P1, P2): an active
 * thread's clock read after P1 includes up to P2 - P1 that P1 does not,
 * and the tick before left the same kind of error the other way, so the
 * rest is the CPU of threads not followed within D = the two ticks' P2 -
 * P1. It accumulates (the skews cancel from tick to tick, but for the
 * one at the last full scan) until it exceeds SCAN_SLACK_NS + those
 * skews: then some thread outside the set ran, and every thread's clock
 * is read. */
static void read_clocks(int changed)
{
    int ok;
    uint64_t proc = clock_ns(CLOCK_PROCESS_CPUTIME_ID, &ok);
    uint64_t self = clock_ns(CLOCK_THREAD_CPUTIME_ID, &ok);
    int64_t explained = 0;
    for (size_t i = 0; i < nth; i++) {
        wthread *t = th[i];
        t->cpu_now = t->cpu_ns;
        if (!t->active)
            continue;
        uint64_t c = clock_ns(thread_clock(t->tid), &ok);
        if (!ok)
            continue;
        if (t->have_cpu)
            explained += (int64_t)(c - t->cpu_ns);
        t->cpu_now = c;
    }
    int64_t skew = (int64_t)(clock_ns(CLOCK_PROCESS_CPUTIME_ID, &ok) - proc);
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
    skew_reset = skew;
    atomic_fetch_add_explicit(&st_full_scans, 1, memory_order_relaxed);
    for (size_t i = 0; i < nth; i++) {
        wthread *t = th[i];
        if (t->active)
            continue;
        uint64_t c = clock_ns(thread_clock(t->tid), &ok);
        if (ok)
            t->cpu_now = c;
    }
}

/* A waiting thread's record from /proc; 0 if it runs. */
static int look_waiting(wthread *t)
{
    pp_thread_stack st;
    memset(&st, 0, sizeof st);
    if (!pp_thread_walk_waiting(t->tid, &st, t->slot))
        return 0;
    atomic_fetch_add_explicit(&st_walks, 1, memory_order_relaxed);
    wrec r = {.nr = st.syscall, .npcs = st.npcs};
    if (r.npcs > PP_WALL_FRAMES + 1)
        r.npcs = PP_WALL_FRAMES + 1;
    memcpy(r.pcs, st.pcs, (size_t)r.npcs * sizeof *r.pcs);
    r.labels = copy_pairs(st.labels, st.nlabels, &r.nlabels);
    pp_thread_stack_free_labels(&st);
    set_rec(t, &r);
    return 1;
}

/* The answers of running threads: their records. */
static void take_answers(wthread **who, pp_wall_answer *a, int n)
{
    for (int i = 0; i < n; i++) {
        wthread *t = who[i];
        atomic_fetch_add_explicit(&st_signals, 1, memory_order_relaxed);
        if (!a[i].ok) {
            atomic_fetch_add_explicit(&st_no_answer, 1, memory_order_relaxed);
            if (t->valid && t->rec.nr == RUNNING)
                continue; /* counted where it ran last */
            wrec r = {.nr = RUNNING, .npcs = 1, .pcs = {PP_PC_NO_ANSWER}}; /* with its last labels */
            if (t->valid)
                r.labels = copy_pairs(t->rec.labels, t->rec.nlabels, &r.nlabels);
            set_rec(t, &r);
            continue;
        }
        wrec r = {.nr = RUNNING, .npcs = a[i].npcs};
        memcpy(r.pcs, a[i].pcs, (size_t)r.npcs * sizeof *r.pcs);
        pp_trace_text text = {.heap = NULL};
        pprof_label *pairs;
        size_t np = pp_trace_labels(a[i].labels, &a[i].trace, trace_id, &text, &pairs);
        r.labels = copy_pairs(pairs, np, &r.nlabels);
        pp_trace_text_free(&text);
        if (a[i].labels)
            pp_labels_unref(a[i].labels);
        set_rec(t, &r);
    }
}

static void tick(uint64_t periods, int64_t period_ns)
{
    uint32_t stamp = ++tick_no;
    int changed = list_threads(stamp);
    read_clocks(changed);
    static pp_wall_answer ask[PP_WALL_MAX_ASK];
    static wthread *who[PP_WALL_MAX_ASK];
    int nask = 0;
    /* A thread ready to run may wait for a CPU before it answers; the tick
     * does not wait for it longer than a fifth of a period (at least 1 ms):
     * its state is what /proc said, its stack its last running one. */
    int64_t timeout = period_ns / 5 < 1000000 ? 1000000 : period_ns / 5;
    for (size_t i = 0; i < nth; i++) {
        wthread *t = th[i];
        int moved = !t->have_cpu || t->cpu_now != t->cpu_ns;
        t->cpu_ns = t->cpu_now;
        t->have_cpu |= t->cpu_now != 0;
        if (t->valid && !moved) { /* where it was: no look */
            t->active = 0;
            atomic_fetch_add_explicit(&st_still, 1, memory_order_relaxed);
            continue;
        }
        t->active = 1;
        atomic_fetch_add_explicit(&st_looks, 1, memory_order_relaxed);
        if (look_waiting(t))
            continue;
        ask[nask].tid = t->tid;
        who[nask++] = t;
        if (nask == PP_WALL_MAX_ASK) {
            pp_wall_ask(ask, nask, timeout);
            take_answers(who, ask, nask);
            nask = 0;
        }
    }
    if (nask) {
        pp_wall_ask(ask, nask, timeout);
        take_answers(who, ask, nask);
    }
    for (size_t i = 0; i < nth; i++)
        if (th[i]->valid)
            th[i]->pending += periods;
    atomic_fetch_add_explicit(&st_ticks, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st_late, periods - 1, memory_order_relaxed);
}

static void *sampler_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-wall");
    pprof_labels_unref(pp_own_begin()); /* the profiler's own work */
    pp_mutex_lock(&wall_lock);
    self_tid = (int)syscall(SYS_gettid);
    int64_t next = pp_now_ns(CLOCK_MONOTONIC) + 1000000000ll / rate;
    pp_mutex_unlock(&wall_lock);
    for (;;) {
        struct timespec ts = {next / 1000000000, next % 1000000000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        pp_mutex_lock(&wall_lock);
        if (nwins == 0) {
            drop_all();
            int ok;
            sampler_ns_done += clock_ns(CLOCK_THREAD_CPUTIME_ID, &ok);
            running = 0;
            pp_mutex_unlock(&wall_lock);
            return NULL;
        }
        int64_t period = 1000000000ll / rate, now = pp_now_ns(CLOCK_MONOTONIC);
        uint64_t periods = 1;
        if (now > next + period)
            periods += (uint64_t)((now - next) / period);
        next += (int64_t)periods * period;
        tick(periods, period);
        pp_mutex_unlock(&wall_lock);
    }
}

static int start_locked(void)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Every asynchronous signal is left to the host's threads. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGABRT);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&t, &attr, sampler_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc)
        return pp_error_detail(PPROF_ESYS, "cannot start the wall-clock sampler thread");
    pthread_getcpuclockid(t, &sampler_clock);
    running = 1;
    return 0;
}

static void fork_prepare(void) { pp_mutex_lock(&wall_lock); }
static void fork_parent(void) { pp_mutex_unlock(&wall_lock); }
/* The child has no sampler thread and no window of its own. */
static void fork_child(void)
{
    wall_lock = (pp_mutex)PP_MUTEX_INIT;
    nwins = 0;
    running = 0;
    sampler_ns_done = 0;
    drop_all();
}

static void init_once(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int pp_wall_attach(pp_wall_window *w, int hz)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_once);
    pp_mutex_lock(&wall_lock);
    int rc = 0;
    if (nwins && hz && hz != rate) {
        rc = pp_error_detail(PPROF_ERATE, "wall profiling is running at %d Hz; ask for %d or 0", rate, rate);
        goto out;
    }
    if (nwins == MAX_WINDOWS) {
        rc = pp_error_detail(PPROF_ELIMIT, "at most %d wall profiles at once", MAX_WINDOWS);
        goto out;
    }
    if (!nwins) {
        rate = hz ? hz : PP_WALL_DEFAULT_HZ;
        trace_id = pp_env_trace_id_label();
    }
    if (!running && (rc = start_locked()) != 0)
        goto out;
    flush_all(); /* what was ticked before belongs to the windows already attached */
    w->period_ns = 1000000000ll / rate;
    wins[nwins++] = w;
out:
    pp_mutex_unlock(&wall_lock);
    return rc;
}

pprof_profile *pp_wall_swap(pp_wall_window *w, pprof_profile *next)
{
    pp_mutex_lock(&wall_lock);
    flush_all();
    pprof_profile *p = w->profile;
    w->profile = next;
    if (!next)
        for (int i = 0; i < nwins; i++)
            if (wins[i] == w) {
                wins[i] = wins[--nwins];
                break;
            }
    pp_mutex_unlock(&wall_lock);
    return p;
}

int pp_wall_hz(void)
{
    pp_mutex_lock(&wall_lock);
    int hz = nwins ? rate : 0;
    pp_mutex_unlock(&wall_lock);
    return hz;
}

void pp_wall_stats_fill(pprof_wall_stats *out)
{
    memset(out, 0, sizeof *out);
    out->ticks = atomic_load(&st_ticks);
    out->samples = atomic_load(&st_samples);
    out->looks = atomic_load(&st_looks);
    out->still = atomic_load(&st_still);
    out->walks = atomic_load(&st_walks);
    out->signals = atomic_load(&st_signals);
    out->no_answer = atomic_load(&st_no_answer);
    out->full_scans = atomic_load(&st_full_scans);
    out->late = atomic_load(&st_late);
    pp_mutex_lock(&wall_lock);
    int ok;
    out->hz = nwins ? rate : 0;
    out->threads = (int64_t)nth;
    out->sampler_ns = sampler_ns_done + (running ? clock_ns(sampler_clock, &ok) : 0);
    pp_mutex_unlock(&wall_lock);
}

/* Thread-safe. */
void pprof_wall_stats_get(pprof_wall_stats *out)
{
    if (out)
        pp_wall_stats_fill(out);
}
