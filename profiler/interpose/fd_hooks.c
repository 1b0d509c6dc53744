/* fd_hooks.c: the close family and dup2/dup3, interposed, so the program
 * and the profiler never close, write to or poll each other's descriptors
 * (base/fds.h; make_hooks.c registers those the profiler makes).
 *
 * The program's close, close_range and closefrom pass over the
 * profiler's registered descriptors: close answers EBADF, as for a number
 * the program never had, and a range is closed around them. dup2 and dup3
 * onto one hand it back first (pp_fd_taken), so the program's call does
 * what it asked. The profiler's own code (a thread working for it: its
 * allocations come from its own heap) closes through these too, and then
 * a registered descriptor is closed only while it is still its file.
 * Every other call goes straight to the next definition; the cost to the
 * program is one bitmap load per close.
 * Sanitizer builds (PPROF_NO_HOOKS) leave these to the runtime: there the
 * profiler's explicit registrations still keep its closes to its own files.
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

#define NEXT(X) X(close) X(close_range) X(closefrom) X(dup2) X(dup3)
NEXT(PP_NEXT_DECL)

/* Resolved by the constructor (lifecycle.c), before any thread of the
 * profiler exists; until then the system calls themselves serve. */
void pp_fd_hooks_init(void)
{
    NEXT(PP_NEXT_RESOLVE)
}

/* async-signal-safe */
static int next_close(int fd)
{
    return real_close ? real_close(fd) : (int)syscall(SYS_close, fd);
}

/* async-signal-safe */
static int next_close_range(unsigned first, unsigned last, int flags)
{
    return real_close_range ? real_close_range(first, last, flags)
                            : (int)syscall(SYS_close_range, first, last, flags);
}

/* async-signal-safe (the program's calls; the profiler's go through pp_fd_close) */
API int close(int fd)
{
    if (__builtin_expect(!pp_fd_owned(fd), 1)) {
        pp_fd_close_wait(); /* a number being moved is not the program's */
        return next_close(fd);
    }
    if (pp_own_work())
        return pp_fd_close(fd);
    errno = EBADF; /* not the program's: as if it did not exist */
    return -1;
}

/* Closes [first, last] but the profiler's descriptors. async-signal-safe */
static int close_around(unsigned first, unsigned last, int flags)
{
    unsigned from = first;
    for (int o = pp_fd_next_owned((int)(first > 0x7fffffffu ? 0x7fffffff : first));
         o >= 0 && (unsigned)o <= last; o = pp_fd_next_owned(o + 1)) {
        if ((unsigned)o > from) {
            if (next_close_range(from, (unsigned)o - 1, flags) != 0)
                return -1;
            flags &= ~(int)CLOSE_RANGE_UNSHARE; /* done by the first call */
        }
        from = (unsigned)o + 1;
        if (from == 0)
            return 0;
    }
    return from <= last ? next_close_range(from, last, flags) : 0;
}

/* async-signal-safe */
API int close_range(unsigned first, unsigned last, int flags)
{
    if ((flags & (int)CLOSE_RANGE_CLOEXEC) || first > last || pp_own_work())
        return next_close_range(first, last, flags);
    pp_fd_bulk_begin();
    int rc = close_around(first, last, flags);
    int err = errno;
    pp_fd_bulk_end();
    errno = err;
    return rc;
}

/* async-signal-safe */
API void closefrom(int lowfd)
{
    if (lowfd < 0)
        lowfd = 0;
    pp_fd_bulk_begin();
    int last = -1;
    for (int o = pp_fd_next_owned(lowfd); o >= 0; o = pp_fd_next_owned(o + 1))
        last = o;
    int rc = last < 0 ? 0 : close_around((unsigned)lowfd, (unsigned)last, 0);
    if (rc != 0) /* no close_range in this kernel: one by one */
        for (int fd = lowfd; fd <= last; fd++)
            if (!pp_fd_owned(fd))
                next_close(fd);
    int from = last < 0 ? lowfd : last + 1;
    if (real_closefrom)
        real_closefrom(from);
    else if (next_close_range((unsigned)from, ~0U, 0) != 0)
        for (int fd = from; fd < 65536; fd++)
            next_close(fd);
    pp_fd_bulk_end();
}

/* dup2 by system call: arm64 has only dup3, which refuses equal
 * descriptors, where dup2 checks oldfd and returns it. async-signal-safe */
static int raw_dup2(int oldfd, int newfd)
{
#ifdef SYS_dup2
    return (int)syscall(SYS_dup2, oldfd, newfd);
#else
    if (oldfd == newfd)
        return syscall(SYS_fcntl, oldfd, F_GETFD) < 0 ? -1 : newfd;
    return (int)syscall(SYS_dup3, oldfd, newfd, 0);
#endif
}

/* The program's dup2 or dup3 onto newfd: one of the profiler's is handed
 * back first; otherwise the call waits for a descriptor the profiler is
 * making and moving up (pp_fd_create_begin), as a bulk close does: that
 * number is briefly the lowest free one, and a dup2 onto it would replace
 * the profiler's socket, whose move would then close the program's file
 * (sshd's child sets up its re-exec's descriptors with dup2 right after
 * the fork that starts the tree's agent). 1 when dup_end must end the
 * wait. async-signal-safe but for a descriptor of the profiler's, whose
 * taken hook stops the server first (a handler never targets those) */
static int dup_begin(int oldfd, int newfd)
{
    if (oldfd == newfd || pp_own_work())
        return 0;
    if (pp_fd_owned(newfd)) {
        pp_fd_taken(newfd);
        return 0;
    }
    pp_fd_bulk_begin();
    return 1;
}

/* async-signal-safe */
static int dup_end(int bulk, int rc)
{
    if (bulk) {
        int saved = errno;
        pp_fd_bulk_end();
        errno = saved;
    }
    return rc;
}

/* async-signal-safe as dup_begin */
API int dup2(int oldfd, int newfd)
{
    int bulk = dup_begin(oldfd, newfd);
    return dup_end(bulk, real_dup2 ? real_dup2(oldfd, newfd) : raw_dup2(oldfd, newfd));
}

/* async-signal-safe as dup_begin */
API int dup3(int oldfd, int newfd, int flags)
{
    int bulk = dup_begin(oldfd, newfd);
    return dup_end(bulk, real_dup3 ? real_dup3(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags));
}

#else
void pp_fd_hooks_init(void)
{
}
#endif
