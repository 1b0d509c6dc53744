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
 * gets its EINTR.
 */
#define _GNU_SOURCE
#include "cpu.h"

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

/* async-signal-safe */
void pp_signal_restart_wait(void *ucontext)
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
    g[REG_RIP] = (greg_t)(ip - 2);
    g[REG_RAX] = (greg_t)nr;
}

