/* signal_hooks.c: the program's signal calls, interposed where they meet
 * the profiling signal: sigaction and signal, so that a handler of the
 * program's on it stands behind libpprof's instead of replacing it, and
 * pthread_sigmask and sigprocmask, so that a program that blocks signals
 * wholesale still gets CPU samples.
 *
 * The profiling signal (SIGSTKFLT unless LIBPPROF_SIGNAL says otherwise)
 * is one no program is known to use. A program that installs a handler on
 * it anyway, once libpprof's is installed, gets its action recorded: the
 * deliveries that are not libpprof's (not its timers', not queued by
 * libpprof) go to it, and sigaction reports the program's own action back,
 * never libpprof's. Other signals pass through untouched.
 *
 * A very common server start-up blocks every signal (sigfillset, then
 * pthread_sigmask) before it creates its workers and waits for signals in
 * one thread with sigwait or a signalfd. Every thread then blocks the
 * profiling signal too, and a CPU profile of it is all "not sampled". So a
 * mask that blocks signals wholesale (a set holding at least 16 of the
 * signals 1 to 31: APR's, for one, leaves out the 8 that faults and
 * broken pipes raise) leaves the profiling signal open: SIG_BLOCK does not
 * add it, and SIG_SETMASK keeps it open unless the thread blocks it now.
 * A program that names the profiling signal itself (a set of a few
 * signals that holds it) gets its way, and a thread that blocks it that
 * way keeps it blocked through its later wholesale masks. The program's
 * own signals keep their exact semantics: only the profiling signal's bit
 * changes, and a timer's signal is delivered to the thread it samples
 * (never to a sigwait or signalfd of the program's, which take only
 * signals their thread blocks). The profiler changes masks through
 * pp_sigmask_exact alone, which passes through unchanged.
 */
#define _GNU_SOURCE
#include "hooks.h"
#include "base/base.h"
#include "signals/signals.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))
#define WHOLESALE 16

typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
API sighandler_t bsd_signal(int sig, sighandler_t h); /* glibc declares it for old standards only */
#define NEXT(X) X(pthread_sigmask) X(sigprocmask) X(sigaction) X(signal) X(bsd_signal) X(sysv_signal)
NEXT(PP_NEXT_DECL)

void pp_signal_hooks_init(void)
{
    NEXT(PP_NEXT_RESOLVE)
    pp_signal_resolve();
}

/* async-signal-safe once the constructor resolved the next definitions */
API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig == pp_signal_number() && pp_signal_host_action(act, old) == 0)
        return 0;
    if (!real_sigaction)
        pp_signal_hooks_init();
    if (!real_sigaction) {
        errno = ENOSYS;
        return -1;
    }
    return real_sigaction(sig, act, old);
}

/* signal, bsd_signal and sysv_signal on the profiling signal: the C
 * library's set the action without passing through sigaction's symbol,
 * so they are made here with the flags glibc gives them.
 * async-signal-safe */
static sighandler_t set_handler(int sig, sighandler_t h, int flags, signal_fn next)
{
    if (sig == pp_signal_number() && h != SIG_ERR) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = h;
        sa.sa_flags = flags;
        sigemptyset(&sa.sa_mask);
        if (!(flags & SA_NODEFER))
            sigaddset(&sa.sa_mask, sig);
        if (pp_signal_host_action(&sa, &old) == 0)
            return old.sa_handler;
    }
    if (!next) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return next(sig, h);
}

/* async-signal-safe once the constructor resolved the next definitions */
API sighandler_t signal(int sig, sighandler_t h)
{
    return set_handler(sig, h, SA_RESTART, real_signal);
}

/* async-signal-safe once the constructor resolved the next definitions */
API sighandler_t bsd_signal(int sig, sighandler_t h)
{
    return set_handler(sig, h, SA_RESTART, real_bsd_signal);
}

/* async-signal-safe once the constructor resolved the next definitions */
API sighandler_t sysv_signal(int sig, sighandler_t h)
{
    return set_handler(sig, h, SA_RESETHAND | SA_NODEFER, real_sysv_signal);
}

/* Whether `set` blocks signals wholesale. async-signal-safe */
static int wholesale(const sigset_t *set)
{
    int n = 0;
    for (int s = 1; s <= 31; s++)
        n += sigismember(set, s) == 1;
    return n >= WHOLESALE;
}

/* The set to pass on for (how, set): `set` itself, or *copy without the
 * profiling signal. async-signal-safe */
static const sigset_t *adjust(sigmask_fn real, int how, const sigset_t *set, sigset_t *copy)
{
    int sig = pp_signal_number();
    if (!set || pp_sigmask_exact_depth || how == SIG_UNBLOCK || sigismember(set, sig) != 1 || !wholesale(set))
        return set;
    if (how == SIG_SETMASK) {
        sigset_t now;
        if (real(SIG_BLOCK, NULL, &now) == 0 && sigismember(&now, sig) == 1)
            return set; /* blocked by name before: it stays so */
    }
    *copy = *set;
    sigdelset(copy, sig);
    return copy;
}

/* async-signal-safe once the constructor resolved the next definitions */
API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!real_pthread_sigmask)
        pp_signal_hooks_init();
    if (!real_pthread_sigmask)
        return ENOSYS;
    sigset_t copy;
    return real_pthread_sigmask(how, adjust(real_pthread_sigmask, how, set, &copy), old);
}

/* async-signal-safe once the constructor resolved the next definitions */
API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!real_sigprocmask)
        pp_signal_hooks_init();
    if (!real_sigprocmask) {
        errno = ENOSYS;
        return -1;
    }
    sigset_t copy;
    return real_sigprocmask(how, adjust(real_pthread_sigmask ? real_pthread_sigmask : real_sigprocmask, how, set,
                                        &copy),
                            old);
}

/* A mask inherited through exec that blocks signals wholesale (a
 * supervisor's) opens the profiling signal in the main thread. */
void pp_signal_hooks_open_inherited(void)
{
    sigset_t now;
    if (!real_pthread_sigmask || real_pthread_sigmask(SIG_BLOCK, NULL, &now) != 0)
        return;
    int sig = pp_signal_number();
    if (sigismember(&now, sig) == 1 && wholesale(&now)) {
        sigset_t open;
        sigemptyset(&open);
        sigaddset(&open, sig);
        real_pthread_sigmask(SIG_UNBLOCK, &open, NULL);
    }
}
#else
void pp_signal_hooks_init(void)
{
}

void pp_signal_hooks_open_inherited(void)
{
}
#endif
