/* syscall_hook.c: syscall(), interposed, for the kinds of call that
 * libpprof must see even when a program makes them through it: futex
 * waits with a timeout (a broken one ends at its deadline, as the waits of
 * wait_hooks.c), seccomp (the process is entering a sandbox:
 * pp_sandbox_enter, lifecycle.c; libseccomp and most programs that
 * install a filter call seccomp(2) through syscall()), and clone or
 * clone3 making a new process (vsftpd starts each session so, in new
 * namespaces): the profiler's fork handlers run around it as around a
 * fork (pp_atfork_run), so that the child finds none of the profiler's
 * locks held by a thread it does not have, and starts over as a forked
 * child does.
 */
#define _GNU_SOURCE
#include "hooks.h"
#include "unwind/unwind.h"
#include "wait_hooks.h"

#include <linux/futex.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

typedef long (*syscall_fn)(long, ...);
static syscall_fn real_syscall;

void pp_syscall_hook_init(void)
{
    real_syscall = (syscall_fn)pp_next_symbol("syscall", NULL);
}

/* Whether a clone or clone3 call with these arguments makes a new process
 * as fork does: on a copy of the caller's stack, sharing nothing with it
 * but what fork shares. */
static int makes_process(long nr, const long *a)
{
    unsigned long flags;
    const struct clone_args *ca = (const struct clone_args *)a[0];
    if (nr == SYS_clone && !a[1])
        flags = (unsigned long)a[0];
    else if (nr == SYS_clone3 && ca && (size_t)a[1] >= offsetof(struct clone_args, stack_size) && !ca->stack)
        flags = (unsigned long)ca->flags;
    else
        return 0;
    return !(flags & (CLONE_VM | CLONE_THREAD | CLONE_VFORK | CLONE_SIGHAND | CLONE_FILES));
}

/* A futex wait goes through a wait's frame (wait_hooks.h: glibc's
 * syscall moves the number out of its register before the call, so the
 * handler cannot enter it again itself); a relative FUTEX_WAIT is made
 * again with the time left, an absolute FUTEX_WAIT_BITSET as it was.
 * Entering seccomp stops profiling first (pp_sandbox_enter); a clone that
 * makes a process runs the fork handlers around it. Every other call
 * passes through. async-signal-safe once the constructor resolved the
 * next definition (libpprof's handlers call it), but for that clone, as
 * fork is not. */
PP_HIDDEN_FRAME API long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (!real_syscall)
        real_syscall = (syscall_fn)pp_next_symbol("syscall", NULL);
    if (!real_syscall) {
        errno = ENOSYS;
        return -1;
    }
    /* libseccomp first probes the kernel with calls that cannot succeed
     * (strict mode with flags, a filter with no program): those pass */
    if (nr == SYS_seccomp &&
        ((a[0] == SECCOMP_SET_MODE_STRICT && !a[1] && !a[2]) || (a[0] == SECCOMP_SET_MODE_FILTER && a[2])))
        pp_sandbox_enter(a[0] == SECCOMP_SET_MODE_STRICT ? "entered seccomp strict mode" : "entered a seccomp filter");
    if (makes_process(nr, a)) {
        pp_atfork_run(PP_FORK_PREPARE);
        long rc = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        int saved = errno;
        if (rc == 0)
            pp_process_isolated_set(); /* before the tree's handler would join */
        pp_atfork_run(rc == 0 ? PP_FORK_CHILD : PP_FORK_PARENT);
        errno = saved;
        return rc;
    }
    int cmd = (int)a[1] & FUTEX_CMD_MASK;
    if (nr != SYS_futex || (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET))
        return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    const struct timespec *ts = (const struct timespec *)a[3];
    int relative = cmd == FUTEX_WAIT && ts;
    if (relative && !valid(ts))
        return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    wait_frame f;
    int64_t deadline = relative ? pp_now_ns(CLOCK_MONOTONIC) + ts_ns(ts) : 0;
    struct timespec left;
    wait_enter(&f);
    long rc;
    while (wait_broken((rc = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5])) < 0))
        if (relative) {
            left = ns_ts(deadline - pp_now_ns(CLOCK_MONOTONIC));
            a[3] = (long)&left;
        }
    wait_leave(&f);
    return rc;
}
#else
void pp_syscall_hook_init(void)
{
}
#endif
