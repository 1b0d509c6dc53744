/* accept.c: accepting connections when file descriptors run out (see
 * accept.h). */
#define _GNU_SOURCE
#include "accept.h"
#include "base/base.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <time.h>

#define FIRST_DELAY_MS 10
#define MAX_DELAY_MS 500

int pp_accept_one(pp_accept_state *st, int listen_fd, int nonblock, struct sockaddr_storage *addr,
                  socklen_t *len)
{
    if (st->delay_ms && pp_now_ns(CLOCK_MONOTONIC) < st->resume_ns)
        return -1;
    int fd = pp_fd_accept(listen_fd, (struct sockaddr *)addr, len, SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0));
    if (fd >= 0) {
        st->delay_ms = 0;
        return fd;
    }
    if (errno != EMFILE && errno != ENFILE && errno != ENOBUFS && errno != ENOMEM)
        return -1;
    if (!st->delay_ms)
        pp_say("libpprof: cannot accept a connection (%s); trying again in a moment\n",
               errno == EMFILE   ? "no file descriptor left in the process"
               : errno == ENFILE ? "no file descriptor left in the system"
                                 : "out of memory");
    st->delay_ms = st->delay_ms ? (st->delay_ms * 2 > MAX_DELAY_MS ? MAX_DELAY_MS : st->delay_ms * 2) : FIRST_DELAY_MS;
    st->resume_ns = pp_now_ns(CLOCK_MONOTONIC) + (int64_t)st->delay_ms * 1000000;
    return -1;
}

short pp_accept_events(const pp_accept_state *st)
{
    return st->delay_ms && pp_now_ns(CLOCK_MONOTONIC) < st->resume_ns ? 0 : POLLIN;
}

int pp_accept_timeout(const pp_accept_state *st, int usual)
{
    if (!st->delay_ms)
        return usual;
    int64_t left_ms = (st->resume_ns - pp_now_ns(CLOCK_MONOTONIC)) / 1000000 + 1;
    if (left_ms < 0)
        left_ms = 0;
    return usual >= 0 && usual < left_ms ? usual : (int)left_ms;
}
