/* cpu.c: per-thread CPU timers and the profiling signal handler.
 *
 * While any CPU recorder runs, every thread of the process has a POSIX
 * timer on its own CPU clock (timer_create with SIGEV_THREAD_ID), so each
 * thread is sampled in proportion to the CPU it uses, as Go does since 1.18.
 * Timers are created by the profiler itself for all threads: those found in
 * /proc/self/task when profiling starts, new ones as they start (through the
 * pthread_create hook) and any others at the collector's periodic rescan.
 * The registry maps tid -> timer; a starting thread replaces whatever entry
 * its tid had, so a reused tid never inherits its predecessor's timer, and an
 * exiting thread deletes its own timer with the signal blocked.
 *
 * A timer's first expiry is random within one period, so short-lived
 * threads are not under-sampled. Each signal weighs the thread's own CPU
 * time since its previous one, in periods (the remainder carried to the
 * next), and a thread's first since its timer was armed weighs the time
 * since then (the arming leaves the thread's CPU clock in its state,
 * thread_state; a thread without one weighs 1 + si_overrun). The kernel's
 * overrun count loses expirations on a loaded machine (a thread burning
 * 4 s of CPU at 100 Hz under a load of 14 on 2 cores: 304 of 400), and the
 * thread's CPU clock does not: reading it is one system call per signal.
 * On such a machine signals also come rarely (the kernel checks CPU timers
 * only at the ticks that find the thread running), so the collector sends
 * a queued signal to a running thread that has gone long without one
 * (pp_cpu_catch_up), an exiting thread adds its time since its last signal
 * as one more sample on that signal's stack (count_tail), and a window's
 * end counts the running threads' (pp_cpu_flush). Accounting starts afresh
 * when a profile starts, and for one thread when its timer is set again
 * because it blocks the signal (count_blocked_locked, through the resets
 * ring), so time already counted as not sampled is never counted twice.
 *
 * The handler captures the stack into a ring cell (no locks, no
 * allocation), saving errno, and chains any signal that is not ours to the
 * handler the host had installed. The registry lock is never taken in the
 * handler. If per-thread timers are unavailable, setitimer(ITIMER_PROF) is
 * the fallback.
 *
 * A host that installs a handler of its own on the profiling signal later
 * (gperftools-style code, language runtimes) would leave every profile
 * empty: when a profile starts and every 250 ms while one runs, a displaced
 * handler is put back and the host's becomes the one signals that are not
 * ours chain to (counted in pprof_cpu_stats.handler_reclaimed).
 */
#define _GNU_SOURCE
#include "cpu.h"
#include "base/base.h"
#include "labels/labels.h"
#include "model/model.h"
#include "unwind/unwind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define PP_SIGNAL prof_signal
#define TIMER_MAGIC 0x70707266 /* sigev_value of our timers */
#define FLUSH_MAGIC 0x70706673 /* sival of a window end's signal (pp_cpu_flush) */
#define CATCHUP_MAGIC 0x70706375 /* sival of a catch-up signal (pp_cpu_catch_up) */
#define MAX_THREADS 8192
#define RING_CELLS 1024 /* 2 MiB, mapped and populated once, when profiling first starts */

struct thread_state;
typedef struct tslot {
    int tid;                /* 0: free */
    timer_t timer;
    struct thread_state *st; /* the thread's state, or NULL (freed only after the slot) */
    uint64_t cpu_ns;        /* its CPU clock at the last rescan, 0 before */
    int blocked;            /* it blocked the profiling signal then */
} tslot;

static pp_mutex reg_lock = PP_MUTEX_INIT;
static int prof_signal = SIGPROF; /* fixed once the handler is installed */
static tslot slots[MAX_THREADS];
static int nslots;          /* high-water mark of used slots */
static int fallback;        /* setitimer mode */
static int installed;
/* The host's handler that signals which are not ours go to: one of the
 * two, read atomically in the handler (it can change while signals land). */
static void (*_Atomic host_info)(int, siginfo_t *, void *);
static void (*_Atomic host_plain)(int);
static _Atomic uint64_t st_reclaimed;

static _Atomic int cpu_hz;          /* rate in force, 0 idle */
static _Atomic uint32_t cpu_gen;    /* bumped when a profile starts: every thread starts afresh */

/* Threads whose timer was set again because they block the signal (their
 * time was counted as not sampled; count_blocked_locked): a ring of
 * (sequence, tid) written under reg_lock, read by the handler when the
 * sequence moved since the thread last looked. */
#define RESETS 64
static _Atomic uint32_t reset_seq;
static struct {
    _Atomic uint32_t seq;
    _Atomic int tid;
} resets[RESETS];

/* A thread's CPU time at its last sample (signal handler only). */
typedef struct cpu_acct {
    uint32_t gen, reset_seen;
    int hz;
    uint64_t last_ns, carry;
} cpu_acct;
static __thread cpu_acct my_acct;

/* A thread's sampling state that other threads read: the stack of its
 * last sample, kept for the CPU time after it (count_tail), where its
 * accounting starts in a profile, and its CPU time when last counted
 * (pp_cpu_catch_up). Threads started through pthread_create and the main
 * thread have one, from the profiler's own heap, on the registry's list. */
#define TAIL_FRAMES 64
typedef struct thread_state {
    struct thread_state *next; /* the list (reg_lock) */
    int tid;
    uint32_t gen;       /* cpu_gen when the stack was taken */
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
    uint64_t pcs[TAIL_FRAMES];
} thread_state;
static __thread thread_state *my_state;
static thread_state *states; /* every thread's that has one (reg_lock) */

/* Whether this thread's timer was set again since it last looked (or
 * too many were to tell). async-signal-safe */
static bool was_reset(int tid)
{
    uint32_t now = atomic_load_explicit(&reset_seq, memory_order_acquire);
    uint32_t seen = my_acct.reset_seen;
    if (now == seen)
        return false;
    my_acct.reset_seen = now;
    if (now - seen > RESETS)
        return true;
    for (uint32_t q = seen + 1; q != now + 1; q++) {
        uint32_t i = q % RESETS;
        if (atomic_load_explicit(&resets[i].seq, memory_order_acquire) == q &&
            atomic_load_explicit(&resets[i].tid, memory_order_relaxed) == tid)
            return true;
    }
    return false;
}
static _Atomic int cpu_max_frames = PPROF_DEFAULT_MAX_FRAMES;
static _Atomic uint64_t st_catch_ups;
static _Atomic uint64_t st_signals, st_samples, st_lost, st_truncated, st_handler_ns, st_blocked, st_unlisted;
static _Atomic int st_threads;
static _Atomic uint64_t st_hist[PPROF_CPU_HIST_BUCKETS];

pp_ring pp_cpu_ring;

static __thread int my_tid;

static int gettid_cached(void) /* async-signal-safe */
{
    if (!my_tid)
        my_tid = (int)syscall(SYS_gettid);
    return my_tid;
}

static uint64_t mono_ns(void) /* async-signal-safe */
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void chain(int sig, siginfo_t *si, void *uc) /* async-signal-safe */
{
    void (*info)(int, siginfo_t *, void *) = atomic_load(&host_info);
    void (*plain)(int) = atomic_load(&host_plain);
    if (info)
        info(sig, si, uc);
    else if (plain)
        plain(sig);
}

/* Makes `a` the host's handler that chain() calls (default and ignore:
 * none). */
static void set_host(const struct sigaction *a)
{
    if (a->sa_flags & SA_SIGINFO) {
        atomic_store(&host_plain, NULL);
        atomic_store(&host_info, a->sa_sigaction);
    } else {
        atomic_store(&host_info, NULL);
        atomic_store(&host_plain, a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN ? NULL : a->sa_handler);
    }
}

/* The handler of queued profiling signals (thread dumps), once one is
 * registered. */
static pp_queued_handler _Atomic queued_handler;

void pp_cpu_set_queued_handler(pp_queued_handler fn)
{
    atomic_store(&queued_handler, fn);
}

/* async-signal-safe */
static int64_t period_ns(int hz)
{
    return 1000000000ll / hz;
}

/* Where the thread's accounting in profile `gen` starts, as its timer's
 * arming left it in its state: 1 and *ns, *carry, or 0 when it did not.
 * async-signal-safe */
static int start_of(uint32_t gen, uint64_t *ns, uint64_t *carry)
{
    thread_state *st = my_state;
    /* Sequentially consistent: arm_locked zeroes start_gen before it
     * rewrites the values, so if start_gen reads `gen` both times, the
     * values read between are that arming's. */
    if (!st || atomic_load(&st->start_gen) != gen)
        return 0;
    *ns = atomic_load(&st->start_ns);
    *carry = atomic_load(&st->start_carry);
    return atomic_load(&st->start_gen) == gen;
}

/* The weight of one timer signal (see the top of the file), or of a
 * window end's or catch-up's (`flush`: the thread's CPU time since its
 * last signal, or since its timer was armed; si is not read and may be
 * NULL). async-signal-safe */
static uint64_t sample_weight(const siginfo_t *si, int hz, int flush)
{
    uint64_t kernel = flush ? 0 : 1 + (uint64_t)(si->si_code == SI_TIMER && si->si_overrun > 0 ? si->si_overrun : 0);
    struct timespec ts;
    if ((!flush && si->si_code != SI_TIMER) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
        return kernel;
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint32_t gen = atomic_load_explicit(&cpu_gen, memory_order_relaxed);
    if (my_state)
        atomic_store_explicit(&my_state->counted_ns, now, memory_order_relaxed);
    if (was_reset(gettid_cached())) { /* that time was counted as not sampled */
        my_acct = (cpu_acct){gen, my_acct.reset_seen, hz, now, 0};
        return kernel;
    }
    if (my_acct.gen != gen || my_acct.hz != hz || now < my_acct.last_ns) {
        uint64_t start, carry;
        if (!start_of(gen, &start, &carry) || now < start) {
            my_acct = (cpu_acct){gen, my_acct.reset_seen, hz, now, 0};
            return kernel;
        }
        my_acct = (cpu_acct){gen, my_acct.reset_seen, hz, start, carry};
    }
    uint64_t period = (uint64_t)period_ns(hz);
    uint64_t elapsed = now - my_acct.last_ns + my_acct.carry;
    my_acct.last_ns = now;
    my_acct.carry = elapsed % period;
    return elapsed / period;
}

static void take_sample(siginfo_t *si, void *uc, int flush);
static _Atomic uint32_t flush_acks; /* window-end signals handled */

/* The profiling signal handler: queued signals go to the registered
 * handler, timer signals are CPU samples. Other signals are blocked while
 * it runs (put_ours), so that one of the program's that arrives meanwhile
 * is still pending when the handler decides, last, whether to enter an
 * interrupted wait again (restart.c). async-signal-safe */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    if (si->si_code == SI_QUEUE && si->si_pid == getpid() &&
        (si->si_value.sival_int == FLUSH_MAGIC || si->si_value.sival_int == CATCHUP_MAGIC)) {
        take_sample(si, uc, 1);
        if (si->si_value.sival_int == FLUSH_MAGIC)
            atomic_fetch_add_explicit(&flush_acks, 1, memory_order_release);
        else
            atomic_fetch_add_explicit(&st_catch_ups, 1, memory_order_relaxed);
        pp_signal_restart_wait(uc, sig);
        return;
    }
    pp_queued_handler queued = atomic_load_explicit(&queued_handler, memory_order_acquire);
    if (si->si_code == SI_QUEUE && queued) {
        int saved = errno;
        int dump = queued(si, uc, gettid_cached());
        errno = saved;
        if (dump)
            return;
    }
    int ours = (si->si_code == SI_TIMER && si->si_value.sival_int == TIMER_MAGIC) ||
               (fallback && si->si_code == SI_KERNEL);
    if (!ours) {
        chain(sig, si, uc);
        return;
    }
    take_sample(si, uc, 0);
    pp_signal_restart_wait(uc, sig);
}

/* Copies the record's stack, labels and span to the thread's state
 * (a deeper stack ends in the truncation frame). The reference to the
 * set it replaces goes with the record, for the collector to drop: the
 * handler never frees. async-signal-safe */
static void keep_last(pp_record *r)
{
    thread_state *l = my_state;
    if (!l)
        return;
    uint32_t k = r->npcs <= TAIL_FRAMES ? r->npcs : TAIL_FRAMES;
    for (uint32_t i = 0; i < k; i++)
        l->pcs[i] = r->pcs[i];
    if (k < r->npcs)
        l->pcs[k - 1] = PP_PC_TRUNCATED;
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
    int hz = atomic_load_explicit(&cpu_hz, memory_order_relaxed);
    if (!hz)
        return;
    int saved = errno;
    uint64_t t0 = mono_ns();
    uint64_t weight = sample_weight(si, hz, flush);
    atomic_fetch_add_explicit(&st_signals, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st_samples, weight, memory_order_relaxed);
    if (weight == 0) { /* less than a period of CPU since the last one */
        errno = saved;
        return;
    }
    size_t ticket;
    pp_record *r = pp_ring_reserve(&pp_cpu_ring, &ticket);
    if (!r) {
        atomic_fetch_add_explicit(&st_lost, weight, memory_order_relaxed);
    } else {
        int truncated;
        int n = pp_unwind_signal(uc, r->pcs, atomic_load_explicit(&cpu_max_frames, memory_order_relaxed),
                                 &truncated);
        if (truncated) {
            r->pcs[n++] = PP_PC_TRUNCATED;
            atomic_fetch_add_explicit(&st_truncated, 1, memory_order_relaxed);
        }
        r->npcs = (uint32_t)n;
        r->weight = weight;
        r->tid = gettid_cached();
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
    errno = saved;
}

/* Installs the profiling signal's handler; *old (if not NULL) gets the
 * one it replaces. 0 or -1 (errno). */
static int put_ours(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    /* Every signal but those a fault raises waits for the handler. */
    sigfillset(&sa.sa_mask);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT};
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        sigdelset(&sa.sa_mask, faults[i]);
    return sigaction(PP_SIGNAL, &sa, old);
}

static int install_handler(void)
{
    if (installed)
        return 0;
    if (pp_ring_init(&pp_cpu_ring, RING_CELLS))
        return pp_fail(PPROF_ENOMEM);
    struct sigaction old;
    if (put_ours(&old))
        return pp_fail(PPROF_ESYS);
    set_host(&old);
    installed = 1;
    return 0;
}

/* Puts the handler back if another replaced it, chaining to that one from
 * then on (reg_lock held). */
static void reclaim_handler_locked(void)
{
    struct sigaction cur;
    if (!installed || sigaction(PP_SIGNAL, NULL, &cur) ||
        ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal))
        return;
    set_host(&cur);
    if (put_ours(NULL) == 0)
        atomic_fetch_add(&st_reclaimed, 1);
}

int pp_cpu_install_handler(void)
{
    pp_mutex_lock(&reg_lock);
    int rc = install_handler();
    pp_mutex_unlock(&reg_lock);
    return rc;
}

int pprof_cpu_set_signal(int signo)
{
    /* Signals the kernel or the C library keep for themselves or deliver
     * synchronously cannot carry samples. */
    if (signo <= 0 || signo > SIGRTMAX || signo == SIGKILL || signo == SIGSTOP || signo == SIGSEGV ||
        signo == SIGBUS || signo == SIGFPE || signo == SIGILL || signo == SIGABRT || signo == SIGTRAP ||
        signo == SIGSYS || signo == SIGCHLD || signo == SIGCONT || (signo > 31 && signo < SIGRTMIN))
        return pp_error_detail(PPROF_EINVAL, "signal %d cannot be the profiling signal", signo);
    pp_mutex_lock(&reg_lock);
    int rc = 0;
    if (installed && signo != prof_signal)
        rc = pp_error_detail(PPROF_EBUSY, "CPU profiling already uses signal %d", prof_signal);
    else
        prof_signal = signo;
    pp_mutex_unlock(&reg_lock);
    return rc;
}

int pp_cpu_signal(void)
{
    return prof_signal;
}

/* --- the registry (reg_lock held) --- */

static clockid_t thread_cpu_clock(int tid)
{
    /* The kernel's encoding of a thread's CPU clock: ~tid << 3 | SCHED | PERTHREAD. */
    return (clockid_t)((~(unsigned)tid) << 3) | 6;
}

/* xorshift, so the host's random() sequence is left alone (reg_lock held) */
static uint64_t next_random(void)
{
    static uint64_t x;
    if (!x)
        x = mono_ns() | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

/* Thread tid's state, or NULL (reg_lock held). */
static thread_state *state_of_locked(int tid)
{
    for (thread_state *st = states; st; st = st->next)
        if (st->tid == tid)
            return st;
    return NULL;
}

/* Thread tid's CPU clock in ns, or 0 when it cannot be read. */
static uint64_t cpu_of(int tid)
{
    struct timespec ts;
    if (clock_gettime(thread_cpu_clock(tid), &ts))
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU time thread st used since its time was last counted in profile
 * `gen`: 1 and *ns, or 0 when its accounting is not of that profile or
 * its clock cannot be read (it exited). reg_lock held. */
static int uncounted_locked(const thread_state *st, uint32_t gen, uint64_t *ns)
{
    if (atomic_load(&st->start_gen) != gen)
        return 0;
    uint64_t now = cpu_of(st->tid);
    if (!now)
        return 0;
    *ns = now - atomic_load(&st->counted_ns);
    return 1;
}

/* Gives thread tid a timer whose first expiry is random within one period
 * (in the thread's CPU time), and its state the start of its accounting:
 * its CPU clock before the timer was set, with the carry that makes its
 * first signal weigh one period. */
static int arm_locked(int tid)
{
    int hz = atomic_load(&cpu_hz);
    int free_slot = -1;
    for (int i = 0; i < nslots; i++) {
        if (slots[i].tid == tid) {
            timer_delete(slots[i].timer); /* a reused tid: start afresh */
            slots[i].tid = 0;
            atomic_fetch_sub(&st_threads, 1);
        }
        if (!slots[i].tid && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0) {
        if (nslots == MAX_THREADS)
            return pp_fail(PPROF_ELIMIT);
        free_slot = nslots++;
    }
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = PP_SIGNAL;
    ev.sigev_value.sival_int = TIMER_MAGIC;
    ev._sigev_un._tid = tid; /* sigev_notify_thread_id */
    timer_t t;
    if (timer_create(thread_cpu_clock(tid), &ev, &t))
        return pp_fail(PPROF_ESYS); /* errno says why (pp_cpu_enable reads it) */
    int64_t p = period_ns(hz);
    int64_t first = 1 + (int64_t)(next_random() % (uint64_t)p);
    thread_state *st = state_of_locked(tid);
    uint64_t start = st ? cpu_of(tid) : 0;
    if (st && start) {
        atomic_store(&st->start_gen, 0); /* sequentially consistent: see start_of */
        atomic_store(&st->start_ns, start);
        atomic_store(&st->start_carry, (uint64_t)(p - first));
        atomic_store(&st->counted_ns, start);
        atomic_store(&st->start_gen, atomic_load(&cpu_gen));
    }
    struct itimerspec its = {
        .it_interval = {p / 1000000000, p % 1000000000},
        .it_value = {first / 1000000000, first % 1000000000},
    };
    if (timer_settime(t, 0, &its, NULL)) {
        int e = errno;
        timer_delete(t);
        errno = e;
        return pp_fail(PPROF_ESYS);
    }
    slots[free_slot] = (tslot){.tid = tid, .timer = t, .st = st};
    atomic_fetch_add(&st_threads, 1);
    return 0;
}

static void disarm_slot_locked(int i)
{
    timer_delete(slots[i].timer);
    slots[i].tid = 0;
    atomic_fetch_sub(&st_threads, 1);
}

static int set_fallback_timer(int hz)
{
    struct itimerval it = {{0, 0}, {0, 0}};
    if (hz) {
        it.it_interval.tv_sec = 1 / hz;
        it.it_interval.tv_usec = hz > 1 ? 1000000 / hz : 0;
        it.it_value = it.it_interval;
    }
    return setitimer(ITIMER_PROF, &it, NULL) ? PPROF_ESYS : 0;
}

/* Lists /proc/self/task into tids; returns the count. */
static int list_tasks(int *tids, int max)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        int tid = atoi(e->d_name);
        if (tid > 0)
            tids[n++] = tid;
    }
    closedir(d);
    return n;
}

static int *task_buf;
static _Atomic pp_thread_lister thread_lister;

void pp_cpu_set_thread_lister(pp_thread_lister fn)
{
    atomic_store(&thread_lister, fn);
}

uint64_t pp_cpu_unlisted(void)
{
    return atomic_load(&st_unlisted);
}

/* Reads thread tid's /proc status: whether it blocks the profiling
 * signal (SigBlk) and whether it is running or ready to (State R). 0 when
 * it cannot be read. */
static int read_status(int tid, int *blocks, int *runnable)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *b = strstr(buf, "SigBlk:"), *st = strstr(buf, "State:");
    unsigned long long mask = b ? strtoull(b + 7, NULL, 16) : 0;
    *blocks = (mask >> (PP_SIGNAL - 1)) & 1;
    *runnable = st && st[strspn(st + 6, " \t") + 6] == 'R';
    return 1;
}

/* Whether thread tid blocks the profiling signal. */
static int blocks_signal(int tid)
{
    int blocks, runnable;
    return read_status(tid, &blocks, &runnable) && blocks;
}

/* Whether thread tid runs or is ready to, with the signal open. */
static int runs_open(int tid)
{
    int blocks, runnable;
    return read_status(tid, &blocks, &runnable) && runnable && !blocks;
}

/* A thread that blocks the profiling signal gets none of its samples: its
 * timer's expirations pile up on one pending signal. When a thread that
 * ran at least a period since the last rescan blocks the signal now and
 * did then too, its CPU time in between counts as not sampled, and its
 * timer is set again, which drops the pending signal's overrun (else the
 * same time would come back as that signal's weight once it unblocks). */
static void count_blocked_locked(int i, int64_t period)
{
    tslot *s = &slots[i];
    uint64_t now = cpu_of(s->tid);
    if (!now)
        return;
    if (s->cpu_ns && now - s->cpu_ns >= (uint64_t)period) {
        int blocked = blocks_signal(s->tid);
        if (blocked && s->blocked) {
            atomic_fetch_add(&st_blocked, (now - s->cpu_ns) / (uint64_t)period);
            /* that time must not come back as a weight (reg_lock held: one writer) */
            uint32_t q = atomic_load(&reset_seq) + 1;
            atomic_store_explicit(&resets[q % RESETS].seq, 0, memory_order_relaxed);
            atomic_store_explicit(&resets[q % RESETS].tid, s->tid, memory_order_relaxed);
            atomic_store_explicit(&resets[q % RESETS].seq, q, memory_order_release);
            atomic_store_explicit(&reset_seq, q, memory_order_release);
            struct itimerspec its = {
                .it_interval = {period / 1000000000, period % 1000000000},
                .it_value = {period / 1000000000, period % 1000000000},
            };
            timer_settime(s->timer, 0, &its, NULL);
        }
        s->blocked = blocked;
    }
    s->cpu_ns = now;
}

static void rescan_locked(void)
{
    if (!task_buf && !(task_buf = malloc(MAX_THREADS * sizeof *task_buf)))
        return;
    int n = list_tasks(task_buf, MAX_THREADS);
    if (n < 0) { /* no fd left, say: the threads that threads/ knows */
        pp_thread_lister lister = atomic_load(&thread_lister);
        atomic_fetch_add(&st_unlisted, 1);
        if (!lister || (n = lister(task_buf, MAX_THREADS)) <= 0)
            return;
    }
    /* drop timers of threads that are gone */
    for (int i = 0; i < nslots; i++) {
        if (!slots[i].tid)
            continue;
        int alive = 0;
        for (int k = 0; k < n && !alive; k++)
            alive = task_buf[k] == slots[i].tid;
        if (!alive)
            disarm_slot_locked(i);
    }
    /* arm threads that have none */
    for (int k = 0; k < n; k++) {
        int known = 0;
        for (int i = 0; i < nslots && !known; i++)
            known = slots[i].tid == task_buf[k];
        if (!known)
            arm_locked(task_buf[k]);
    }
    int hz = atomic_load(&cpu_hz);
    for (int i = 0; i < nslots && hz; i++)
        if (slots[i].tid)
            count_blocked_locked(i, period_ns(hz));
}

int pp_cpu_enable(int hz, int max_frames)
{
    pp_mutex_lock(&reg_lock);
    int rc = install_handler();
    if (rc == 0) {
        pp_ring_prepare(&pp_cpu_ring);
        reclaim_handler_locked();
        atomic_store(&cpu_max_frames, max_frames);
        atomic_fetch_add(&cpu_gen, 1);
        atomic_store(&cpu_hz, hz);
        rc = arm_locked(gettid_cached());
        if (rc == PPROF_ESYS && prof_signal == SIGPROF && /* setitimer sends only SIGPROF */
            (errno == EINVAL || errno == ENOSYS || errno == EPERM)) {
            fallback = 1;
            rc = set_fallback_timer(hz);
        } else if (rc == 0) {
            rescan_locked();
        }
        if (rc)
            atomic_store(&cpu_hz, 0);
    }
    pp_mutex_unlock(&reg_lock);
    return rc;
}

void pp_cpu_disable(void)
{
    pp_mutex_lock(&reg_lock);
    atomic_store(&cpu_hz, 0);
    if (fallback)
        set_fallback_timer(0);
    for (int i = 0; i < nslots; i++)
        if (slots[i].tid)
            disarm_slot_locked(i);
    nslots = 0;
    pp_mutex_unlock(&reg_lock);
}

void pp_cpu_rescan(void)
{
    if (!atomic_load(&cpu_hz))
        return;
    pp_mutex_lock(&reg_lock);
    if (atomic_load(&cpu_hz)) {
        reclaim_handler_locked();
        if (!fallback)
            rescan_locked();
    }
    pp_mutex_unlock(&reg_lock);
}

int pp_cpu_hz(void)
{
    return atomic_load(&cpu_hz);
}

int pp_cpu_threads(void)
{
    return atomic_load(&st_threads);
}

uint64_t pp_cpu_blocked(void)
{
    return atomic_load(&st_blocked);
}

uint64_t pp_cpu_lost(void)
{
    return atomic_load(&st_lost);
}

int pp_cpu_max_frames(void)
{
    return atomic_load(&cpu_max_frames);
}

static void block_prof_signal(sigset_t *old);

/* (See cpu.h.) Not in a signal handler: it allocates and takes reg_lock. */
void pp_cpu_track_thread(void)
{
    if (my_state)
        return;
    pp_own_heap_enter(); /* the profiler's, on the program's thread */
    thread_state *l = calloc(1, sizeof *l);
    pp_own_heap_leave();
    if (!l)
        return;
    l->tid = gettid_cached();
    pp_mutex_lock(&reg_lock);
    l->next = states;
    states = l;
    pp_mutex_unlock(&reg_lock);
    my_state = l;
}

void pp_cpu_thread_start(const void *fn)
{
    my_tid = (int)syscall(SYS_gettid);
    my_acct.reset_seen = atomic_load(&reset_seq); /* earlier resets were of other threads */
    pp_cpu_track_thread(); /* before any profile: the thread may outlive its start */
    if (my_state)
        my_state->root = (uint64_t)(uintptr_t)fn;
    if (!atomic_load(&cpu_hz) || fallback)
        return;
    pp_mutex_lock(&reg_lock);
    if (atomic_load(&cpu_hz))
        arm_locked(my_tid); /* its CPU time counts from here (its state's start) */
    pp_mutex_unlock(&reg_lock);
}

/* Blocks the profiling signal in the calling thread; *old gets the mask. */
static void block_prof_signal(sigset_t *old)
{
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, PP_SIGNAL);
    pthread_sigmask(SIG_BLOCK, &block, old);
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
 * window (pp_cpu_flush). The profiling signal is blocked. */
static void count_tail(int was_blocked)
{
    thread_state *l = my_state;
    int hz = atomic_load(&cpu_hz);
    if (!l || !hz)
        return;
    int have = l->n && l->gen == atomic_load(&cpu_gen);
    if (!have && !l->root)
        return;
    uint64_t weight = sample_weight(NULL, hz, 1);
    if (weight == 0)
        return;
    if (was_blocked) {
        atomic_fetch_add(&st_blocked, weight);
        return;
    }
    atomic_fetch_add(&st_samples, weight);
    size_t ticket;
    pp_record *r = pp_ring_reserve(&pp_cpu_ring, &ticket);
    if (!r) {
        atomic_fetch_add(&st_lost, weight);
        return;
    }
    if (have) {
        memcpy(r->pcs, l->pcs, l->n * sizeof *l->pcs);
        r->npcs = l->n;
        r->labels = pprof_labels_ref((pprof_labels *)l->labels); /* l holds one: it is alive */
        r->trace = l->trace;
    } else {
        r->pcs[0] = l->root;
        r->npcs = 1;
        r->labels = pp_labels_current_ref();
        pp_trace_capture(&r->trace);
    }
    r->weight = weight;
    r->tid = gettid_cached();
    r->release = NULL;
    pp_ring_publish(&pp_cpu_ring, ticket);
}

/* Sends thread tid the profiling signal, queued with `magic`. */
static int queue_signal(int tid, int magic)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = PP_SIGNAL;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = magic;
    return (int)syscall(SYS_rt_tgsigqueueinfo, si.si_pid, tid, PP_SIGNAL, &si);
}

/* Window ends (recorder/): the CPU time since each thread's last signal
 * goes into the window that is closing, not the next one (and is not lost
 * with a recorder that stops). The calling thread counts its own on its
 * last signal's stack (count_tail); every other thread that is running or
 * ready to (state R) with the signal open gets a queued signal and weighs
 * its time since its last signal at the stack it is at, within 100 ms
 * (later, into the next window). A thread that waits keeps what it used
 * between its last signal and the wait for the next window. Signalling
 * only threads that run keeps this out of waits (restart.c covers the
 * rest). */
void pp_cpu_flush(void)
{
    if (!atomic_load(&cpu_hz) || fallback)
        return;
    sigset_t old;
    block_prof_signal(&old);
    count_tail(sigismember(&old, PP_SIGNAL) == 1);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    int self = gettid_cached();
    uint32_t base = atomic_load_explicit(&flush_acks, memory_order_acquire), sent = 0;
    uint32_t gen = atomic_load(&cpu_gen);
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < nslots; i++) {
        int tid = slots[i].tid;
        uint64_t ns;
        if (!tid || tid == self)
            continue;
        /* One that has not run since its time was last counted (but for
         * the end of that signal's handler, a few microseconds) has nothing
         * to add: one clock read instead of reading its /proc status (a
         * server's idle pool). */
        if (slots[i].st && uncounted_locked(slots[i].st, gen, &ns) && ns < 50000)
            continue;
        if (runs_open(tid))
            sent += queue_signal(tid, FLUSH_MAGIC) == 0;
    }
    pp_mutex_unlock(&reg_lock);
    for (int w = 0; w < 100 && atomic_load_explicit(&flush_acks, memory_order_acquire) - base < sent; w++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* Under load the kernel can let a thread use hundreds of milliseconds of
 * CPU without a timer signal (it checks CPU timers only at the ticks that
 * find the thread running: a thread beside 8 busy ones on 2 cores got 0
 * to 4 signals in 150 ms of CPU at 1000 Hz, 37 alone). The collector
 * calls this at each wake: every thread with a state that has used
 * max(2 periods, 8 ms) of CPU since its time was last counted, and runs
 * now with the signal open, gets a queued signal that samples it where it
 * is, weighing that time (as a window end's does). Threads the kernel
 * serves on time are never due. Reading each thread's CPU clock is one
 * system call; the scan is skipped while its own cost since the last one
 * would pass 1% of the time between them. */
void pp_cpu_catch_up(void)
{
    static uint64_t last_end, last_cost;
    int hz = atomic_load(&cpu_hz);
    if (!hz || fallback)
        return;
    uint64_t t0 = mono_ns();
    if (t0 - last_end < 100 * last_cost)
        return;
    uint64_t due = 2 * (uint64_t)period_ns(hz);
    if (due < 8000000)
        due = 8000000; /* two of the kernel's 4 ms ticks */
    uint32_t gen = atomic_load(&cpu_gen);
    int self = gettid_cached();
    pp_mutex_lock(&reg_lock);
    for (thread_state *st = states; st; st = st->next) {
        uint64_t ns;
        if (st->tid != self && uncounted_locked(st, gen, &ns) && ns >= due && runs_open(st->tid))
            queue_signal(st->tid, CATCHUP_MAGIC);
    }
    pp_mutex_unlock(&reg_lock);
    last_end = mono_ns();
    last_cost = last_end - t0;
}

void pp_cpu_thread_exit(void)
{
    sigset_t old;
    block_prof_signal(&old);
    count_tail(sigismember(&old, PP_SIGNAL) == 1);
    thread_state *mine = my_state;
    my_state = NULL;
    int tid = gettid_cached();
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < nslots; i++)
        if (slots[i].tid == tid)
            disarm_slot_locked(i);
    for (thread_state **pp = &states; mine && *pp; pp = &(*pp)->next)
        if (*pp == mine) {
            *pp = mine->next;
            break;
        }
    pp_mutex_unlock(&reg_lock);
    if (mine) {
        pp_labels_unref(mine->labels);
        free(mine); /* the own heap's: free knows it by its address */
    }
    /* The signal stays blocked: the thread is on its way out. */
}

/* The forking thread's mask before fork (one fork at a time holds reg_lock). */
static sigset_t fork_saved_mask;

void pp_cpu_fork_prepare(void)
{
    sigset_t old;
    block_prof_signal(&old);
    pp_mutex_lock(&reg_lock);
    fork_saved_mask = old;
}

void pp_cpu_fork_parent(void)
{
    sigset_t old = fork_saved_mask;
    pp_mutex_unlock(&reg_lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void pp_cpu_fork_child(void)
{
    /* Timers do not survive fork; the child starts unprofiled. */
    nslots = 0; /* slots at and above nslots are never read: no need to clear (and copy) them */
    atomic_store(&st_threads, 0);
    atomic_store(&cpu_hz, 0);
    if (fallback)
        set_fallback_timer(0);
    my_tid = (int)syscall(SYS_gettid);
    /* The child's one thread; the other threads' states stay behind,
     * unreachable, in its copy of the own heap. */
    states = my_state;
    if (my_state) {
        my_state->next = NULL;
        my_state->tid = my_tid;
    }
    reg_lock = (pp_mutex)PP_MUTEX_INIT;
    pthread_sigmask(SIG_SETMASK, &fork_saved_mask, NULL);
}

void pp_cpu_stats_fill(pprof_cpu_stats *out)
{
    memset(out, 0, sizeof *out);
    out->signals = atomic_load(&st_signals);
    out->samples = atomic_load(&st_samples);
    out->lost = atomic_load(&st_lost);
    out->truncated = atomic_load(&st_truncated);
    out->handler_ns = atomic_load(&st_handler_ns);
    out->threads_timed = atomic_load(&st_threads);
    out->hz = atomic_load(&cpu_hz);
    out->handler_reclaimed = atomic_load(&st_reclaimed);
    out->blocked = atomic_load(&st_blocked);
    out->catch_ups = atomic_load(&st_catch_ups);
    for (int i = 0; i < PPROF_CPU_HIST_BUCKETS; i++)
        out->handler_hist[i] = atomic_load(&st_hist[i]);
}
