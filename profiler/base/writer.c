/* writer.c: the ready-made writers of include/pprof.h.
 *
 * A writer is a callback and a context; everything the library serializes
 * (profiles, text pages) goes through one, so output can go to a file, a
 * socket, a memory buffer or a program's own transport alike.
 *
 *  - pprof_writer_fd: the context is the descriptor itself, cast through
 *    intptr_t, so the writer needs no memory and cannot leak. Short writes
 *    and EINTR are retried; a non-blocking descriptor is waited on with
 *    poll. Sockets are written with MSG_NOSIGNAL, so a peer that went away
 *    gives an error (EPIPE) instead of killing the process with SIGPIPE.
 *  - pprof_writer_buffer: appends to a pprof_buffer, doubling its capacity
 *    as needed. The data is kept NUL-terminated (data[len] == '\0' whenever
 *    data is not NULL) so text output can be used as a C string; the NUL is
 *    not counted in len.
 */
#include "pprof.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One write(2) or send(2) of at most `len` bytes; -1 with errno on failure. */
static ssize_t write_some(int fd, const char *p, size_t len)
{
    if (len > SSIZE_MAX)
        len = SSIZE_MAX;
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK)
        n = write(fd, p, len);
    return n;
}

static int fd_write(void *ctx, const void *data, size_t len)
{
    int fd = (int)(intptr_t)ctx;
    const char *p = data;
    while (len > 0) {
        ssize_t n = write_some(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                    return -1;
                continue;
            }
            return -1;
        }
        if (n == 0) /* no progress and no error: give up rather than spin */
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

pprof_writer pprof_writer_fd(int fd)
{
    pprof_writer w = { fd_write, (void *)(intptr_t)fd };
    return w;
}

static int buffer_write(void *ctx, const void *data, size_t len)
{
    pprof_buffer *b = ctx;
    if (len == 0)
        return 0;
    if (len > SIZE_MAX - 1 - b->len)
        return -1;
    size_t need = b->len + len + 1; /* + the terminating NUL */
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need) {
            if (cap > SIZE_MAX / 2) {
                cap = need;
                break;
            }
            cap *= 2;
        }
        char *d = realloc(b->data, cap);
        if (!d)
            return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

pprof_writer pprof_writer_buffer(pprof_buffer *buf)
{
    /* A NULL buffer gives a writer without a callback, which every
     * function taking a writer rejects with PPROF_EINVAL. */
    pprof_writer w = { buf ? buffer_write : NULL, buf };
    return w;
}

void pprof_buffer_free(pprof_buffer *buf)
{
    if (!buf)
        return;
    free(buf->data);
    buf->data = NULL;
    buf->len = 0;
    buf->cap = 0;
}
