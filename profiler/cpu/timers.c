/* timers.c: per-thread CPU timers, the registry of the CPU sampler (the
 * samples their signals take are samples.c's).
 *
 * While any CPU recorder runs, every thread of the process has a POSIX
 * timer on its own CPU clock (timer_create with SIGEV_THREAD_ID), so each
 * thread is sampled in proportion to the CPU it uses, as Go does since 1.18.
 * Timers are created by the profiler itself for all threads: those found in
 * /proc/self/task when profiling starts, new ones as they start (through the
 * pthread_create hook) and any others at the collector's periodic rescan.
 * The registry maps tid -> timer; a starting thread replaces whatever entry
 * its tid had, so a reused tid never inherits its predecessor's timer, and an
 * exiting thread deletes its own timer with the signal blocked. A timer's
 * first expiry is random within one period, so short-lived threads are not
 * under-sampled.
 *
 * On a loaded machine signals come rarely (the kernel checks CPU timers
 * only at the ticks that find the thread running), so the collector sends
 * a queued signal to a running thread that has gone long without one
 * (pp_cpu_catch_up), and a window's end counts the running threads' time
 * (pp_cpu_flush). A thread that blocks the signal has its time counted as
 * not sampled (count_blocked_locked). If per-thread timers are
 * unavailable, setitimer(ITIMER_PROF) is the fallback. The registry lock
 * is never taken in the signal handler.
 */
#define _GNU_SOURCE
#include "cpu_internal.h"
#include "signals/signals.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#define MAX_THREADS 8192

typedef struct tslot {
    int tid;                   /* 0: free */
    timer_t timer;
    pp_thread_state *st;       /* the thread's state, or NULL (freed only after the slot) */
    uint64_t cpu_ns;           /* its CPU clock at the last rescan, 0 before */
    int blocked;               /* it blocked the profiling signal then */
} tslot;

pp_mutex pp_cpu_reg_lock = PP_MUTEX_INIT;
__thread pp_thread_state *pp_cpu_my_state;
__thread int pp_cpu_my_tid;
_Atomic int pp_cpu_rate;
_Atomic uint32_t pp_cpu_gen;
_Atomic int pp_cpu_frames = PPROF_DEFAULT_MAX_FRAMES;
int pp_cpu_fallback;
_Atomic uint64_t pp_cpu_st_blocked, pp_cpu_st_lost;
_Atomic uint64_t pp_cpu_st_blocked_ns, pp_cpu_st_lost_ns;
_Atomic uint32_t pp_cpu_reset_seq;
struct pp_cpu_reset pp_cpu_resets[PP_RESETS];

static tslot slots[MAX_THREADS];
static int nslots;                  /* high-water mark of used slots */
static pp_thread_state *states;     /* every thread's that has one (registry lock) */
static _Atomic int st_threads;
static _Atomic uint64_t st_unlisted;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- the registry (pp_cpu_reg_lock held) --- */

/* xorshift, so the host's random() sequence is left alone (pp_cpu_reg_lock held) */
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

/* Thread tid's state, or NULL (pp_cpu_reg_lock held). */
static pp_thread_state *state_of_locked(int tid)
{
    for (pp_thread_state *st = states; st; st = st->next)
        if (st->tid == tid)
            return st;
    return NULL;
}

/* Thread tid's CPU clock in ns, or 0 when it cannot be read. */
static uint64_t cpu_of(int tid)
{
    struct timespec ts;
    if (clock_gettime(pp_thread_cpu_clock(tid), &ts))
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU time thread st used since its time was last counted in profile
 * `gen`: 1 and *ns, or 0 when its accounting is not of that profile or
 * its clock cannot be read (it exited). pp_cpu_reg_lock held. */
static int uncounted_locked(const pp_thread_state *st, uint32_t gen, uint64_t *ns)
{
    if (atomic_load(&st->start_gen) != gen)
        return 0;
    uint64_t now = cpu_of(st->tid);
    if (!now)
        return 0;
    *ns = now - atomic_load(&st->counted_ns);
    return 1;
}

/* Sets timer t to expire after `first` ns of its thread's CPU time, then
 * every `period` ns. */
static int set_timer(timer_t t, int64_t first, int64_t period)
{
    struct itimerspec its = {
        .it_interval = {period / 1000000000, period % 1000000000},
        .it_value = {first / 1000000000, first % 1000000000},
    };
    return timer_settime(t, 0, &its, NULL);
}

/* Gives thread tid a timer whose first expiry is random within one period
 * (in the thread's CPU time), and its state the start of its accounting:
 * its CPU clock before the timer was set, with the carry that makes its
 * first signal weigh one period. */
static int arm_locked(int tid)
{
    int hz = atomic_load(&pp_cpu_rate);
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
    ev.sigev_signo = pp_signal_number();
    ev.sigev_value.sival_int = PP_TIMER_VALUE;
    ev._sigev_un._tid = tid; /* sigev_notify_thread_id */
    timer_t t;
    if (timer_create(pp_thread_cpu_clock(tid), &ev, &t))
        return pp_fail(PPROF_ESYS); /* errno says why (pp_cpu_enable reads it) */
    int64_t p = pp_cpu_period_ns(hz);
    int64_t first = 1 + (int64_t)(next_random() % (uint64_t)p);
    pp_thread_state *st = state_of_locked(tid);
    uint64_t start = st ? cpu_of(tid) : 0;
    if (st && start) {
        atomic_store(&st->start_gen, 0); /* sequentially consistent: see start_of */
        atomic_store(&st->start_ns, start);
        atomic_store(&st->start_carry, (uint64_t)(p - first));
        atomic_store(&st->counted_ns, start);
        atomic_store(&st->start_gen, atomic_load(&pp_cpu_gen));
    }
    if (set_timer(t, first, p)) {
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
    DIR *d = pp_fd_opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        int tid = atoi(e->d_name);
        if (tid > 0)
            tids[n++] = tid;
    }
    pp_fd_closedir(d);
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
    *blocks = (mask >> (pp_signal_number() - 1)) & 1;
    *runnable = st && st[strspn(st + 6, " \t") + 6] == 'R';
    return 1;
}

/* Whether thread tid blocks the profiling signal. */
static int blocks_signal(int tid)
{
    int blocks, runnable;
    return read_status(tid, &blocks, &runnable) && blocks;
}

/* Whether thread tid runs or is ready to, with the signal open. When its
 * status cannot be read (a chroot without /proc): `moved`, whether it has
 * used CPU since its time was last counted. */
static int runs_open(int tid, int moved)
{
    int blocks, runnable;
    if (!read_status(tid, &blocks, &runnable))
        return moved;
    return runnable && !blocks;
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
        sigset_t mine;
        int blocked = s->tid != pp_cpu_tid() ? blocks_signal(s->tid)
                      : !pthread_sigmask(SIG_BLOCK, NULL, &mine) && sigismember(&mine, pp_signal_number()) == 1;
        if (blocked && s->blocked) {
            uint64_t periods = (now - s->cpu_ns) / (uint64_t)period;
            atomic_fetch_add(&pp_cpu_st_blocked, periods);
            atomic_fetch_add(&pp_cpu_st_blocked_ns, periods * (uint64_t)period);
            /* that time must not come back as a weight (pp_cpu_reg_lock held: one writer) */
            uint32_t q = atomic_load(&pp_cpu_reset_seq) + 1;
            atomic_store_explicit(&pp_cpu_resets[q % PP_RESETS].seq, 0, memory_order_relaxed);
            atomic_store_explicit(&pp_cpu_resets[q % PP_RESETS].tid, s->tid, memory_order_relaxed);
            atomic_store_explicit(&pp_cpu_resets[q % PP_RESETS].seq, q, memory_order_release);
            atomic_store_explicit(&pp_cpu_reset_seq, q, memory_order_release);
            set_timer(s->timer, period, period);
        }
        s->blocked = blocked;
    }
    s->cpu_ns = now;
}

/* The number of threads in the process: one stat (a directory's link
 * count in /proc is its entries' plus two), where listing them is an open,
 * reads and a close. -1 if unknown. */
static int count_tasks(void)
{
    struct stat st;
    return stat("/proc/self/task", &st) == 0 && st.st_nlink > 2 ? (int)st.st_nlink - 2 : -1;
}

/* Arms threads without a timer and drops those gone, from the list of the
 * process's threads; `cheap`: only if their number is not the number with
 * a timer (threads that start and end through pthread keep the two equal). */
static void rearm_locked(int cheap)
{
    if (!task_buf && !(task_buf = malloc(MAX_THREADS * sizeof *task_buf)))
        return;
    if (cheap && count_tasks() == atomic_load(&st_threads))
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
}

static void count_all_blocked_locked(void)
{
    int hz = atomic_load(&pp_cpu_rate);
    for (int i = 0; i < nslots && hz; i++)
        if (slots[i].tid)
            count_blocked_locked(i, pp_cpu_period_ns(hz));
}

int pp_cpu_enable(int hz, int max_frames)
{
    pp_mutex_lock(&pp_cpu_reg_lock);
    int rc = pp_cpu_samples_init();
    if (rc == 0) {
        pp_signal_reclaim();
        atomic_store(&pp_cpu_frames, max_frames);
        atomic_fetch_add(&pp_cpu_gen, 1);
        atomic_store(&pp_cpu_rate, hz);
        rc = arm_locked(pp_cpu_tid());
        if (rc == PPROF_ESYS && pp_signal_number() == SIGPROF && /* setitimer sends only SIGPROF */
            (errno == EINVAL || errno == ENOSYS || errno == EPERM)) {
            pp_cpu_fallback = 1;
            rc = set_fallback_timer(hz);
        } else if (rc == 0) {
            rearm_locked(0);
            count_all_blocked_locked();
        }
        if (rc)
            atomic_store(&pp_cpu_rate, 0);
    }
    pp_mutex_unlock(&pp_cpu_reg_lock);
    return rc;
}

void pp_cpu_disable(void)
{
    pp_mutex_lock(&pp_cpu_reg_lock);
    atomic_store(&pp_cpu_rate, 0);
    if (pp_cpu_fallback)
        set_fallback_timer(0);
    for (int i = 0; i < nslots; i++)
        if (slots[i].tid)
            disarm_slot_locked(i);
    nslots = 0;
    pp_mutex_unlock(&pp_cpu_reg_lock);
}

void pp_cpu_rescan(void)
{
    static unsigned calls;
    if (!atomic_load(&pp_cpu_rate))
        return;
    pp_mutex_lock(&pp_cpu_reg_lock);
    if (atomic_load(&pp_cpu_rate)) {
        pp_signal_reclaim();
        calls++;
        if (!pp_cpu_fallback) {
            rearm_locked(calls % 16 != 0); /* the whole list every 16th: a thread may end as another starts */
            count_all_blocked_locked();
        }
    }
    pp_mutex_unlock(&pp_cpu_reg_lock);
}

int pp_cpu_set_rate(int hz)
{
    int rc = 0;
    pp_mutex_lock(&pp_cpu_reg_lock);
    int was = atomic_load(&pp_cpu_rate);
    if (was && hz != was) {
        atomic_store(&pp_cpu_rate, hz);
        int64_t p = pp_cpu_period_ns(hz);
        if (pp_cpu_fallback)
            rc = set_fallback_timer(hz);
        for (int i = 0; i < nslots && !pp_cpu_fallback; i++)
            if (slots[i].tid && set_timer(slots[i].timer, 1 + (int64_t)(next_random() % (uint64_t)p), p))
                rc = pp_fail(PPROF_ESYS);
    }
    pp_mutex_unlock(&pp_cpu_reg_lock);
    return rc;
}

int pp_cpu_hz(void)
{
    return atomic_load(&pp_cpu_rate);
}

int pp_cpu_threads(void)
{
    return atomic_load(&st_threads);
}

uint64_t pp_cpu_blocked_ns(void)
{
    return atomic_load(&pp_cpu_st_blocked_ns);
}

int pp_cpu_max_frames(void)
{
    return atomic_load(&pp_cpu_frames);
}

/* (See cpu.h.) Not in a signal handler: it allocates and takes pp_cpu_reg_lock. */
void pp_cpu_track_thread(void)
{
    if (pp_cpu_my_state)
        return;
    pp_own_heap_enter(); /* the profiler's, on the program's thread */
    pp_thread_state *l = calloc(1, sizeof *l);
    pp_own_heap_leave();
    if (!l)
        return;
    l->tid = pp_cpu_tid();
    pp_mutex_lock(&pp_cpu_reg_lock);
    l->next = states;
    states = l;
    pp_mutex_unlock(&pp_cpu_reg_lock);
    pp_cpu_my_state = l;
}

void pp_cpu_thread_start(const void *fn)
{
    pp_cpu_my_tid = (int)syscall(SYS_gettid);
    pp_cpu_samples_thread_start();
    pp_cpu_track_thread(); /* before any profile: the thread may outlive its start */
    if (pp_cpu_my_state)
        pp_cpu_my_state->root = (uint64_t)(uintptr_t)fn;
    if (!atomic_load(&pp_cpu_rate) || pp_cpu_fallback)
        return;
    pp_mutex_lock(&pp_cpu_reg_lock);
    if (atomic_load(&pp_cpu_rate))
        arm_locked(pp_cpu_my_tid); /* its CPU time counts from here (its state's start) */
    pp_mutex_unlock(&pp_cpu_reg_lock);
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
    if (!atomic_load(&pp_cpu_rate) || pp_cpu_fallback)
        return;
    sigset_t old;
    pp_signal_block(&old);
    pp_cpu_count_tail(sigismember(&old, pp_signal_number()) == 1, 0);
    pp_sigmask_exact(SIG_SETMASK, &old, NULL);
    int self = pp_cpu_tid();
    uint32_t base = pp_cpu_flush_acks(), sent = 0;
    uint32_t gen = atomic_load(&pp_cpu_gen);
    pp_mutex_lock(&pp_cpu_reg_lock);
    for (int i = 0; i < nslots; i++) {
        int tid = slots[i].tid;
        uint64_t ns;
        if (!tid || tid == self)
            continue;
        /* One that has not run since its time was last counted (but for
         * the end of that signal's handler, a few microseconds) has nothing
         * to add: one clock read instead of reading its /proc status (a
         * server's idle pool). */
        int known = slots[i].st && uncounted_locked(slots[i].st, gen, &ns);
        if (known && ns < 50000)
            continue;
        if (runs_open(tid, known))
            sent += pp_signal_queue(tid, PP_FLUSH_VALUE) == 0;
    }
    pp_mutex_unlock(&pp_cpu_reg_lock);
    for (int w = 0; w < 100 && pp_cpu_flush_acks() - base < sent; w++) {
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
    int hz = atomic_load(&pp_cpu_rate);
    if (!hz || pp_cpu_fallback)
        return;
    uint64_t t0 = mono_ns();
    if (t0 - last_end < 100 * last_cost)
        return;
    uint64_t due = 2 * (uint64_t)pp_cpu_period_ns(hz);
    if (due < 8000000)
        due = 8000000; /* two of the kernel's 4 ms ticks */
    uint32_t gen = atomic_load(&pp_cpu_gen);
    int self = pp_cpu_tid();
    pp_mutex_lock(&pp_cpu_reg_lock);
    for (pp_thread_state *st = states; st; st = st->next) {
        uint64_t ns;
        if (st->tid != self && uncounted_locked(st, gen, &ns) && ns >= due && runs_open(st->tid, 1))
            pp_signal_queue(st->tid, PP_CATCHUP_VALUE);
    }
    pp_mutex_unlock(&pp_cpu_reg_lock);
    last_end = mono_ns();
    last_cost = last_end - t0;
}

void pp_cpu_thread_exit(void)
{
    sigset_t old;
    pp_signal_block(&old);
    pp_cpu_count_tail(sigismember(&old, pp_signal_number()) == 1, 1);
    pp_thread_state *mine = pp_cpu_my_state;
    pp_cpu_my_state = NULL;
    int tid = pp_cpu_tid();
    pp_mutex_lock(&pp_cpu_reg_lock);
    for (int i = 0; i < nslots; i++)
        if (slots[i].tid == tid)
            disarm_slot_locked(i);
    for (pp_thread_state **pp = &states; mine && *pp; pp = &(*pp)->next)
        if (*pp == mine) {
            *pp = mine->next;
            break;
        }
    pp_mutex_unlock(&pp_cpu_reg_lock);
    if (mine) {
        pp_labels_unref(mine->labels);
        free(mine); /* the own heap's: free knows it by its address */
    }
    /* The signal stays blocked: the thread is on its way out. */
}

/* The forking thread's mask before fork (one fork at a time holds pp_cpu_reg_lock). */
static sigset_t fork_saved_mask;

void pp_cpu_fork_prepare(void)
{
    sigset_t old;
    pp_signal_block(&old);
    pp_mutex_lock(&pp_cpu_reg_lock);
    fork_saved_mask = old;
}

void pp_cpu_fork_parent(void)
{
    sigset_t old = fork_saved_mask;
    pp_mutex_unlock(&pp_cpu_reg_lock);
    pp_sigmask_exact(SIG_SETMASK, &old, NULL);
}

void pp_cpu_fork_child(void)
{
    /* Timers do not survive fork; the child starts unprofiled. */
    nslots = 0; /* slots at and above nslots are never read: no need to clear (and copy) them */
    atomic_store(&st_threads, 0);
    atomic_store(&pp_cpu_rate, 0);
    if (pp_cpu_fallback)
        set_fallback_timer(0);
    pp_cpu_my_tid = (int)syscall(SYS_gettid);
    /* The child's one thread; the other threads' states stay behind,
     * unreachable, in its copy of the own heap. */
    states = pp_cpu_my_state;
    if (pp_cpu_my_state) {
        pp_cpu_my_state->next = NULL;
        pp_cpu_my_state->tid = pp_cpu_my_tid;
    }
    pp_cpu_reg_lock = (pp_mutex)PP_MUTEX_INIT;
    pp_sigmask_exact(SIG_SETMASK, &fork_saved_mask, NULL);
}
