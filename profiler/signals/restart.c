/* restart.c: a wait that the profiling signal broke is entered again.
 *
 * A thread seen running (by a thread dump) or charged CPU time (by its
 * timer) may enter a waiting call (poll, epoll_wait, nanosleep, a
 * futex...) before the signal arrives, which then makes the call fail
 * with EINTR (event loops with short timeouts hit it in about 5% of thread
 * dumps). The handler undoes that: when the context it interrupted is the
 * instruction after glibc's `mov $nr,%eax; syscall` with -EINTR in rax,
 * and nr is a wait that can be entered again with the same arguments, it
 * points the thread back at the syscall instruction with nr in rax, as
 * the kernel does for the calls it restarts itself. The call was entered
 * after the thread was last seen running, so entering it again lengthens
 * a relative timeout by at most the microseconds between the two. A
 * signal of the program's that arrives at once with the profiling signal
 * is delivered first when its number is lower, and then the profiling
 * handler sees that handler's context, not the call's: the program still
 * gets its EINTR. One that arrives while the handler runs is held pending
 * (the handler blocks every signal but faults), and the handler, deciding
 * last, leaves the EINTR in place when one with a handler of the
 * program's is pending: its handler runs as the profiling handler returns,
 * and the wait ends as it would have without libpprof. Only one arriving
 * in the instructions between that decision and the return can still meet
 * the entered-again wait, as one arriving just before the program entered
 * the wait would.
 *
 * One case cannot be told apart: a program's handler that ended the wait
 * returns (rt_sigreturn restores the call's EINTR context) and the
 * profiling signal is delivered at that very instant; the context is the
 * one a wait broken by the profiling signal leaves, and the wait is
 * entered again. Dumps signal threads seen running, and a thread that
 * waits for its own signals runs just then, so 2,000 dumps in a second
 * against a thread woken 50 times a second meet it about once in three
 * runs (test_dump_eintr); the CPU timer, which needs the thread to have
 * used a period of CPU, far less often.
 */
#define _GNU_SOURCE
#include "signals.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

/* The waits a thread can enter again with the same arguments (x86-64). */
static int restartable(uint32_t nr) /* async-signal-safe */
{
    switch (nr) {
    case 7:   /* poll */
    case 23:  /* select */
    case 34:  /* pause */
    case 35:  /* nanosleep */
    case 128: /* rt_sigtimedwait */
    case 130: /* rt_sigsuspend */
    case 202: /* futex */
    case 208: /* io_getevents */
    case 230: /* clock_nanosleep */
    case 232: /* epoll_wait */
    case 270: /* pselect6 */
    case 271: /* ppoll */
    case 281: /* epoll_pwait */
    case 441: /* epoll_pwait2 */
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

/* async-signal-safe */
void pp_signal_restart_wait(void *ucontext, int sig)
{
    ucontext_t *uc = ucontext;
    greg_t *g = uc->uc_mcontext.gregs;
    uintptr_t ip = (uintptr_t)g[REG_RIP];
    if (g[REG_RAX] != -EINTR || (ip & 4095) < 7) /* the 7 bytes before ip on its page */
        return;
    const unsigned char *c = (const unsigned char *)ip;
    uint32_t nr;
    memcpy(&nr, c - 6, sizeof nr);
    if (c[-7] != 0xb8 || c[-2] != 0x0f || c[-1] != 0x05 || !restartable(nr))
        return;
    int saved = errno;
    int pending = program_signal_pending(uc, sig);
    errno = saved;
    if (pending)
        return;
    g[REG_RIP] = (greg_t)(ip - 2);
    g[REG_RAX] = (greg_t)nr;
}

