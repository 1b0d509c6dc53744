/* sock_hooks.c: the program's socket calls that can wait with a timeout
 * of the socket's own (SO_RCVTIMEO), interposed, so that one the
 * profiling signal breaks ends when it would have.
 *
 * A socket call without a timeout that a signal breaks is restarted by
 * the kernel itself (SA_RESTART). With SO_RCVTIMEO set, recv, recvfrom,
 * recvmsg, accept and accept4 fail with EINTR instead, whatever the
 * handler's flags, and the time they had waited is lost: called again,
 * they would wait the whole timeout once more. Each wrapper notes when
 * the call began (wait_hooks.h's stamp: the processor's counter, as most
 * calls are never broken and most sockets have no timeout, a clock read
 * on every call cost a busy server more than the rest of the wrapper;
 * bench/RESULTS.md); when the profiling signal broke
 * the call, it reads the socket's timeout and waits for the socket to be
 * readable for the time that remains (poll, itself wrapped), then calls
 * again, or gives the timeout's EAGAIN once no time remains and nothing
 * is ready. A call the program's own signal breaks keeps its EINTR.
 */
#define _GNU_SOURCE
/* These define poll, recv and the rest themselves: the C library's
 * _FORTIFY_SOURCE inline wrappers of the same names (a distribution's
 * default flags) would clash with their attributes. */
#undef _FORTIFY_SOURCE
#include "hooks.h"
#include "unwind/unwind.h"
#include "wait_hooks.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

#define NEXT(X) X(recv) X(recvfrom) X(recvmsg) X(accept) X(accept4)
NEXT(PP_NEXT_DECL)

void pp_sock_hooks_init(void)
{
    NEXT(PP_NEXT_RESOLVE)
}

#define NEED(fn) PP_NEED(fn, pp_sock_hooks_init)

/* After the profiling signal broke a call on `fd` begun at `start`:
 * 1 to call again (the socket is readable, or it has no timeout), 0 when
 * the socket's timeout has run out with nothing to read (errno EAGAIN, the
 * timeout's). async-signal-safe */
PP_HIDDEN_FRAME static int again(int fd, uint64_t start)
{
    struct timeval tv;
    socklen_t len = sizeof tv;
    if (getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) || (tv.tv_sec == 0 && tv.tv_usec == 0))
        return 1; /* no timeout of its own: as the kernel would restart it */
    int64_t left = (int64_t)tv.tv_sec * NS + (int64_t)tv.tv_usec * 1000 - pp_wait_since_ns(start);
    struct pollfd p = {fd, POLLIN, 0};
    int ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
    int rc = poll(&p, 1, ms); /* wrapped: only the program's signal breaks it */
    if (rc > 0)
        return 1;
    if (rc < 0)
        return errno != EINTR; /* EINTR: the program's signal, the program's EINTR */
    errno = EAGAIN;
    return 0;
}

/* The body of each wrapper: `call` made until it is not broken by the
 * profiling signal, or the socket's time has run out. */
#define SOCK_WAIT(type, fd, call)                                                                                 \
    do {                                                                                                          \
        wait_frame f;                                                                                             \
        uint64_t start = wait_stamp();                                                                            \
        wait_enter(&f);                                                                                           \
        type rc;                                                                                                  \
        while (wait_broken((rc = (call)) < 0) && again(fd, start))                                               \
            ;                                                                                                     \
        wait_leave(&f);                                                                                           \
        return rc;                                                                                                \
    } while (0)

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    NEED(real_recv);
    if (flags & MSG_DONTWAIT)
        return real_recv(fd, buf, n, flags);
    SOCK_WAIT(ssize_t, fd, real_recv(fd, buf, n, flags));
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *len)
{
    NEED(real_recvfrom);
    if (flags & MSG_DONTWAIT)
        return real_recvfrom(fd, buf, n, flags, from, len);
    SOCK_WAIT(ssize_t, fd, real_recvfrom(fd, buf, n, flags, from, len));
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    NEED(real_recvmsg);
    if (flags & MSG_DONTWAIT)
        return real_recvmsg(fd, msg, flags);
    SOCK_WAIT(ssize_t, fd, real_recvmsg(fd, msg, flags));
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    NEED(real_accept);
    SOCK_WAIT(int, fd, real_accept(fd, addr, len));
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    NEED(real_accept4);
    SOCK_WAIT(int, fd, real_accept4(fd, addr, len, flags));
}
#else
void pp_sock_hooks_init(void)
{
}
#endif
