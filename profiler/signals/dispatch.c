/* dispatch.c: the profiling signal's one handler and its users (signals.h).
 *
 * The handler looks at each delivery's kind (si_code) and value and hands
 * it to the first registered user that claims it; a queued delivery counts
 * only when this process sent it. A delivery no user takes (the host's own
 * setitimer, a signal another process sent) goes to the handler the host
 * had installed before ours, or that it installed after ours and that was
 * then put behind ours (pp_signal_reclaim: a host that installs a handler
 * of its own on the profiling signal, gperftools-style code or a language
 * runtime, would otherwise leave every profile empty).
 *
 * Users are kept in a fixed table that only grows; the handler reads it
 * without a lock (an entry is complete before the count that shows it).
 * The signal number is fixed once the handler is installed.
 */
#define _GNU_SOURCE
#include "signals.h"
#include "base/base.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_USERS 8

typedef struct user {
    int kinds, value;
    pp_signal_fn fn;
} user;

static pp_mutex lock = PP_MUTEX_INIT;
static user users[MAX_USERS];
static _Atomic int nusers;
static _Atomic int installed;
/* The host's handler that deliveries no user takes go to: one of the two,
 * read atomically in the handler (it can change while signals land), with
 * its flags (SA_RESETHAND). host_act is the whole action the host set, as
 * sigaction reports it back to the host; host_busy guards it. */
static void (*_Atomic host_info)(int, siginfo_t *, void *);
static void (*_Atomic host_plain)(int);
static _Atomic int host_flags;
static struct sigaction host_act;
static _Atomic int host_busy;
static _Atomic uint64_t reclaimed;
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn _Atomic next_sigaction;

/* The C library's sigaction (libpprof's own override, signal_hooks.c,
 * would answer for the profiling signal with the host's action).
 * async-signal-safe once pp_signal_resolve ran. */
static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn fn = atomic_load(&next_sigaction);
    return fn ? fn(sig, act, old) : sigaction(sig, act, old);
}

void pp_signal_resolve(void)
{
    if (!atomic_load(&next_sigaction))
        atomic_store(&next_sigaction, (sigaction_fn)pp_next_symbol("sigaction", NULL));
}

/* async-signal-safe */
static void chain(int sig, siginfo_t *si, void *uc)
{
    void (*info)(int, siginfo_t *, void *) = atomic_load(&host_info);
    void (*plain)(int) = atomic_load(&host_plain);
    if ((info || plain) && (atomic_load(&host_flags) & SA_RESETHAND)) {
        /* a one-shot handler: the default again from now on, as the
         * kernel does */
        atomic_store(&host_info, NULL);
        atomic_store(&host_plain, NULL);
        atomic_store(&host_flags, 0);
    }
    if (info)
        info(sig, si, uc);
    else if (plain)
        plain(sig);
}

/* Makes `a` the host's handler that chain() calls (default and ignore:
 * none). The caller holds host_busy. async-signal-safe */
static void set_host(const struct sigaction *a)
{
    PP_ASSERT(atomic_load(&host_busy));
    host_act = *a;
    atomic_store(&host_flags, a->sa_flags);
    if (a->sa_flags & SA_SIGINFO) {
        atomic_store(&host_plain, NULL);
        atomic_store(&host_info, a->sa_sigaction);
    } else {
        atomic_store(&host_info, NULL);
        atomic_store(&host_plain, a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN ? NULL : a->sa_handler);
    }
}

/* Takes host_busy with every signal blocked in the calling thread (so no
 * handler of this thread can wait for it); *mask gets the thread's mask.
 * async-signal-safe */
static void host_lock(sigset_t *mask)
{
    sigset_t all;
    sigfillset(&all);
    pp_sigmask_exact(SIG_BLOCK, &all, mask);
    while (atomic_exchange_explicit(&host_busy, 1, memory_order_acquire))
        ;
}

/* async-signal-safe */
static void host_unlock(const sigset_t *mask)
{
    atomic_store_explicit(&host_busy, 0, memory_order_release);
    pp_sigmask_exact(SIG_SETMASK, mask, NULL);
}

/* async-signal-safe */
int pp_signal_host_action(const struct sigaction *act, struct sigaction *old)
{
    if (!atomic_load(&installed))
        return -1;
    sigset_t mask;
    host_lock(&mask);
    struct sigaction was = host_act;
    int flags = atomic_load(&host_flags);
    if ((was.sa_flags & SA_RESETHAND) && !(flags & SA_RESETHAND)) {
        /* fired once since: the default, as the kernel would report it */
        memset(&was, 0, sizeof was);
        was.sa_handler = SIG_DFL;
    }
    if (act)
        set_host(act);
    host_unlock(&mask);
    if (old)
        *old = was;
    return 0;
}

/* The delivery's kind (PP_SIG_*), or 0 for one no user may claim.
 * async-signal-safe */
static int kind_of(const siginfo_t *si)
{
    switch (si->si_code) {
    case SI_TIMER:
        return PP_SIG_TIMER;
    case SI_QUEUE:
        return si->si_pid == getpid() ? PP_SIG_QUEUED : 0;
    case SI_KERNEL:
        return PP_SIG_KERNEL;
    default:
        return 0;
    }
}

/* The handler. Other signals are blocked while it runs (put_ours), so
 * that one of the program's that arrives meanwhile is still pending when
 * the wait it broke is entered again or not, last (restart.c).
 * async-signal-safe */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    int n = atomic_load_explicit(&nusers, memory_order_acquire);
    PP_ASSERT(n >= 0 && n <= MAX_USERS); /* the table only grows, to MAX_USERS */
    if (pp_sandboxed()) {
        /* A late one of libpprof's is dropped, making no system call the
         * process's filter may refuse (getpid, clock reads, sigpending);
         * the program's own still reach its handler. */
        for (int i = 0; i < n; i++)
            if ((si->si_code == SI_TIMER || si->si_code == SI_QUEUE) && users[i].value == si->si_value.sival_int)
                return;
        chain(sig, si, uc);
        return;
    }
    int kind = kind_of(si);
    for (int i = 0; kind && i < n; i++) {
        const user *u = &users[i];
        if (!(u->kinds & kind) || (kind != PP_SIG_KERNEL && u->value != si->si_value.sival_int))
            continue;
        PP_ASSERT(u->fn); /* an entry is whole before the count that shows it */
        int saved = errno;
        int took = u->fn(sig, si, uc);
        errno = saved;
        if (took) {
            pp_signal_restart_wait(uc, sig);
            return;
        }
    }
    chain(sig, si, uc);
}

int pp_signal_register(int kinds, int value, pp_signal_fn fn)
{
    PP_ASSERT(fn && kinds && !(kinds & ~(PP_SIG_TIMER | PP_SIG_QUEUED | PP_SIG_KERNEL)));
    pp_mutex_lock(&lock);
    int n = atomic_load(&nusers), rc = 0;
    for (int i = 0; i < n; i++)
        if (users[i].fn == fn && users[i].kinds == kinds && users[i].value == value)
            goto out;
    if (n == MAX_USERS) {
        rc = PPROF_ELIMIT;
        goto out;
    }
    users[n] = (user){kinds, value, fn};
    atomic_store_explicit(&nusers, n + 1, memory_order_release);
out:
    pp_mutex_unlock(&lock);
    return rc;
}

/* Installs the handler; *old (if not NULL) gets the one it replaces. 0 or
 * -1 (errno). */
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
    return real_sigaction(pp_signal_number(), &sa, old);
}

int pp_signal_install(void)
{
    pp_mutex_lock(&lock);
    int rc = 0;
    struct sigaction old;
    pp_signal_resolve();
    if (!atomic_load(&installed)) {
        sigset_t mask;
        host_lock(&mask);
        if (put_ours(&old) == 0) {
            /* signals.h: the host's previous action, never libpprof's */
            PP_ASSERT(!((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_signal));
            set_host(&old);
            atomic_store(&installed, 1);
        }
        host_unlock(&mask);
        if (!atomic_load(&installed)) {
            rc = pp_fail(PPROF_ESYS);
        }
    }
    pp_mutex_unlock(&lock);
    return rc;
}

void pp_signal_exec_begin(void)
{
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    pp_signal_resolve();
    real_sigaction(pp_signal_number(), &ign, NULL); /* discards the pending ones */
}

void pp_signal_exec_failed(void)
{
    pp_mutex_lock(&lock);
    sigset_t mask;
    host_lock(&mask);
    if (atomic_load(&installed))
        put_ours(NULL);
    host_unlock(&mask);
    pp_mutex_unlock(&lock);
}

void pp_signal_reclaim(void)
{
    pp_mutex_lock(&lock);
    struct sigaction cur;
    sigset_t mask;
    host_lock(&mask);
    if (atomic_load(&installed) && real_sigaction(pp_signal_number(), NULL, &cur) == 0 &&
        !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal)) {
        set_host(&cur);
        if (put_ours(NULL) == 0)
            atomic_fetch_add(&reclaimed, 1);
    }
    host_unlock(&mask);
    pp_mutex_unlock(&lock);
}

uint64_t pp_signal_reclaimed(void)
{
    return atomic_load(&reclaimed);
}

/* async-signal-safe */
int pp_signal_number(void)
{
    return pp_profiling_signal(); /* base/ keeps it: the profiler's threads' masks need it too */
}

int pp_signal_queue(int tid, int value)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int sig = pp_signal_number();
    si.si_signo = sig;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = value;
    return (int)syscall(SYS_rt_tgsigqueueinfo, si.si_pid, tid, sig, &si);
}

/* async-signal-safe */
int pp_signal_drops(void)
{
    return pp_signal_number() < SIGRTMIN;
}

void pp_signal_block(sigset_t *old)
{
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, pp_signal_number());
    pp_sigmask_exact(SIG_BLOCK, &block, old);
}

void pp_signal_fork_prepare(void)
{
    pp_mutex_lock(&lock);
}

void pp_signal_fork_parent(void)
{
    pp_mutex_unlock(&lock);
}

void pp_signal_fork_child(void)
{
    lock = (pp_mutex)PP_MUTEX_INIT;
    atomic_store(&host_busy, 0);
}

/* Thread-safe. */
int pprof_cpu_set_signal(int sig)
{
    /* Signals the kernel or the C library keep for themselves or deliver
     * synchronously cannot carry samples. */
    if (sig <= 0 || sig > SIGRTMAX || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
        sig == SIGFPE || sig == SIGILL || sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS || sig == SIGCHLD ||
        sig == SIGCONT || (sig > 31 && sig < SIGRTMIN))
        return pp_error_detail(PPROF_EINVAL, "signal %d cannot be the profiling signal", sig);
    pp_mutex_lock(&lock);
    int rc = 0;
    if (atomic_load(&installed) && sig != pp_signal_number())
        rc = pp_error_detail(PPROF_EBUSY, "CPU profiling already uses signal %d", pp_signal_number());
    else
        pp_profiling_signal_set(sig);
    pp_mutex_unlock(&lock);
    return rc;
}
