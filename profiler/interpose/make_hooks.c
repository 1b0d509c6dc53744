/* make_hooks.c: the calls that make descriptors, interposed so that every
 * descriptor the profiler's own work makes is the profiler's (base/fds.h).
 *
 * A thread working for the profiler (pp_own_work: its own threads, and
 * the program's threads while they do its work) that opens a file, a
 * socket, a pipe, an epoll set or an eventfd, directly or inside a library
 * it calls (libdw opening debug files, libmicrohttpd its polling set),
 * gets a registered descriptor, moved above the numbers the program uses.
 * Without this a descriptor the profiler holds for a moment (a /proc file
 * read by a thread dump) has a number the program may close and reuse at
 * once: sshd's re-exec'd child runs closefrom(6) and opens its log while
 * the tree's agent lists /proc/self/task, and the agent's closedir then
 * closed sshd's log, whose number sshd reused for the client's socket.
 * Files stay with a forked child (as any inherited descriptor does: the
 * symbolizer's cache of open objects is the child's too); sockets, pipes
 * and polling sets do not (pp_fd_fork_child).
 *
 * Every other call goes straight to the next definition: the cost to the
 * program is one thread-local load. The C library's own opens (fopen,
 * opendir) do not come here: the profiler uses pp_fd_fopen and
 * pp_fd_opendir for those.
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

#define NEXT(X) X(openat) X(socket) X(socketpair) X(pipe2) X(epoll_create1) X(eventfd)
NEXT(PP_NEXT_DECL)

/* Resolved by the constructor (lifecycle.c), before any thread of the
 * profiler exists; until then the system calls themselves serve. */
void pp_make_hooks_init(void)
{
    NEXT(PP_NEXT_RESOLVE)
}

/* The mode argument of an open: present only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, last, mode)                                                                              \
    do {                                                                                                          \
        if ((flags) & (O_CREAT | O_TMPFILE)) {                                                                    \
            va_list ap;                                                                                           \
            va_start(ap, last);                                                                                   \
            mode = va_arg(ap, int);                                                                               \
            va_end(ap);                                                                                           \
        }                                                                                                         \
    } while (0)

/* Begins a making when the caller works for the profiler; returns
 * whether it does. async-signal-safe for the program's calls */
static int make_begin(void)
{
    int own = pp_own_work();
    if (__builtin_expect(own, 0))
        pp_fd_create_begin();
    return own;
}

/* Registers fd when the profiler's work made it (kept by a forked child
 * with `keep`) and ends the making. async-signal-safe for the program's
 * calls */
static int made(int own, int fd, int keep)
{
    if (__builtin_expect(!own, 1))
        return fd;
    fd = keep ? pp_fd_keep(fd) : pp_fd_own(fd);
    pp_fd_create_end();
    return fd;
}

/* async-signal-safe for the program's calls */
static int make_openat(int dir, const char *path, int flags, int mode)
{
    int own = make_begin();
    int fd = real_openat ? real_openat(dir, path, flags, mode) : (int)syscall(SYS_openat, dir, path, flags, mode);
    return made(own, fd, 1);
}

API int open(const char *path, int flags, ...)
{
    int mode = 0;
    OPEN_MODE(flags, flags, mode);
    return make_openat(AT_FDCWD, path, flags, mode);
}

API int open64(const char *path, int flags, ...)
{
    int mode = 0;
    OPEN_MODE(flags, flags, mode);
    return make_openat(AT_FDCWD, path, flags, mode);
}

API int openat(int dir, const char *path, int flags, ...)
{
    int mode = 0;
    OPEN_MODE(flags, flags, mode);
    return make_openat(dir, path, flags, mode);
}

API int openat64(int dir, const char *path, int flags, ...)
{
    int mode = 0;
    OPEN_MODE(flags, flags, mode);
    return make_openat(dir, path, flags, mode);
}

/* _FORTIFY_SOURCE's entry points (no O_CREAT: they check that), which
 * the C library declares only inside its own headers' inline wrappers. */
API int __open_2(const char *path, int flags);
API int __open64_2(const char *path, int flags);
API int __openat_2(int dir, const char *path, int flags);
API int __openat64_2(int dir, const char *path, int flags);

API int __open_2(const char *path, int flags)
{
    return make_openat(AT_FDCWD, path, flags, 0);
}

API int __open64_2(const char *path, int flags)
{
    return make_openat(AT_FDCWD, path, flags, 0);
}

API int __openat_2(int dir, const char *path, int flags)
{
    return make_openat(dir, path, flags, 0);
}

API int __openat64_2(int dir, const char *path, int flags)
{
    return make_openat(dir, path, flags, 0);
}

API int socket(int domain, int type, int protocol)
{
    int own = make_begin();
    return made(own, real_socket ? real_socket(domain, type, protocol) : (int)syscall(SYS_socket, domain, type, protocol),
                0);
}

/* Registers both ends of a pair made by the profiler's work. */
static int made_pair(int own, int rc, int sv[2])
{
    if (!own)
        return rc;
    if (rc == 0) {
        sv[0] = pp_fd_own(sv[0]);
        sv[1] = pp_fd_own(sv[1]);
    }
    pp_fd_create_end();
    return rc;
}

API int socketpair(int domain, int type, int protocol, int sv[2])
{
    int own = make_begin();
    return made_pair(own,
                     real_socketpair ? real_socketpair(domain, type, protocol, sv)
                                     : (int)syscall(SYS_socketpair, domain, type, protocol, sv),
                     sv);
}

API int pipe2(int p[2], int flags)
{
    int own = make_begin();
    return made_pair(own, real_pipe2 ? real_pipe2(p, flags) : (int)syscall(SYS_pipe2, p, flags), p);
}

API int pipe(int p[2])
{
    return pipe2(p, 0);
}

API int epoll_create1(int flags)
{
    int own = make_begin();
    return made(own, real_epoll_create1 ? real_epoll_create1(flags) : (int)syscall(SYS_epoll_create1, flags), 0);
}

API int eventfd(unsigned count, int flags)
{
    int own = make_begin();
    return made(own, real_eventfd ? real_eventfd(count, flags) : (int)syscall(SYS_eventfd2, count, flags), 0);
}
#else
void pp_make_hooks_init(void)
{
}
#endif
