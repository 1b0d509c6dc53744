/* restart.c: a wait that the profiling signal broke is entered again.
 *
 * A thread seen running (by a thread dump) or charged CPU time (by its
 * timer) may enter a waiting call (poll, epoll_wait, nanosleep, a
 * futex...) before the signal arrives, which then makes the call fail
 * with EINTR (event loops with short timeouts hit it in about 5% of thread
 * dumps). The handler undoes that: when the context it interrupted is the
 * instruction after a system call that returned -EINTR (arch/ reads the
 * instruction: x86-64's `mov $nr,%eax; syscall`, arm64's `svc #0` with
 * the number in x8), and nr is a wait that can be entered again with the
 * same arguments, it points the thread back at the system call
 * instruction with its registers as they were on entry, as the kernel
 * does for the calls it restarts itself. On arm64 the return value
 * overwrote the first argument (x0) and the signal's context has no copy
 * of it (the kernel keeps orig_x0 to itself): the wait is entered again
 * only when the moves that set up the call show where x0 came from (see
 * arch.c); otherwise the program gets its EINTR. The call was entered
 * after the thread was last seen running, so entering it again lengthens
 * a relative timeout by at most the microseconds between the two.
 *
 * Exact for absolute deadlines and for the waits whose time left the
 * kernel writes back; the relative waits the program makes through the C
 * library are wrapped instead (interpose/wait_hooks.c: the handler only
 * marks the wait broken, pp_wait_broken, and the wrapper enters it again
 * with the time that remains). A signal of the program's pending when the
 * handler decides keeps its EINTR. Which waits, why, the one race left and
 * what was measured: docs/threads.md, "Running threads are, and a wait
 * the signal breaks is entered again".
 */
#define _GNU_SOURCE
#include "signals.h"
#include "arch/arch.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>

/* The waits a thread can enter again with the same arguments (arm64 has
 * no poll, select, pause nor epoll_wait: glibc calls ppoll, pselect6,
 * ppoll and epoll_pwait there). */
static int restartable(long nr) /* async-signal-safe */
{
    switch (nr) {
#ifdef SYS_poll
    case SYS_poll:
#endif
#ifdef SYS_select
    case SYS_select:
#endif
#ifdef SYS_pause
    case SYS_pause:
#endif
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
#endif
    case SYS_nanosleep:
    case SYS_rt_sigtimedwait:
    case SYS_rt_sigsuspend:
    case SYS_futex:
    case SYS_io_getevents:
    case SYS_clock_nanosleep:
    case SYS_pselect6:
    case SYS_ppoll:
    case SYS_epoll_pwait:
    case 441: /* epoll_pwait2, the same number on both */
        return 1;
    default:
        return 0;
    }
}

/* 1 if a signal other than `sig` that the interrupted context does not
 * block and the program handles is pending: it would end the wait.
 * async-signal-safe */
static int program_signal_pending(const ucontext_t *uc, int sig)
{
    sigset_t pending;
    if (sigpending(&pending))
        return 0;
    for (int s = 1; s < NSIG; s++) {
        if (s == sig || !sigismember(&pending, s) || sigismember(&uc->uc_sigmask, s))
            continue;
        struct sigaction sa;
        if (sigaction(s, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO ? sa.sa_sigaction != NULL
                                                                        : sa.sa_handler != SIG_DFL &&
                                                                              sa.sa_handler != SIG_IGN))
            return 1;
    }
    return 0;
}

__thread int pp_wait_depth, pp_wait_broken;

/* async-signal-safe */
void pp_signal_restart_wait(void *ucontext, int sig)
{
    ucontext_t *uc = ucontext;
    pp_arch_syscall sc;
    int wrapped = pp_wait_depth > 0; /* the wait is the wrapper's: its number need not be read */
    if (wrapped ? !pp_arch_after_eintr(uc) : !pp_arch_eintr_syscall(uc, &sc) || !restartable(sc.nr))
        return;
    int saved = errno;
    int pending = program_signal_pending(uc, sig);
    errno = saved;
    if (pending)
        return;
    if (wrapped)
        pp_wait_broken = 1; /* its wrapper enters it again with the time left */
    else
        pp_arch_syscall_rewind(uc, &sc);
}

