/* accept.h: accepting connections when file descriptors run out (accept.c).
 *
 * accept(2) fails with EMFILE or ENFILE (or ENOBUFS, ENOMEM) while the
 * listening socket stays readable, so a loop that polls and accepts spins
 * on the CPU until an fd frees up; libmicrohttpd's own loop does, when it
 * has no connection of its own to close. Both of the server's listeners
 * (HTTP and the process tree's) accept through here: after such a failure
 * the listener is left out of the poll for a while, 10 ms doubling to
 * 500 ms, and the client waits in the backlog meanwhile. The first failure
 * of a run of them prints one line to stderr.
 */
#ifndef PP_ACCEPT_H
#define PP_ACCEPT_H
#include <stdint.h>
#include <sys/socket.h>

typedef struct pp_accept_state {
    int delay_ms;      /* 0: accepting; else the current wait */
    int64_t resume_ns; /* CLOCK_MONOTONIC: when to try again */
} pp_accept_state;

/* Accepts one connection (close-on-exec, and non-blocking when nonblock),
 * or returns -1: nothing to accept, or out of descriptors (then the
 * listener rests, see above). addr and len may be NULL. Not thread-safe for
 * one state. */
int pp_accept_one(pp_accept_state *st, int listen_fd, int nonblock, struct sockaddr_storage *addr,
                  socklen_t *len);
/* The events to poll the listener for now: POLLIN, or 0 while it rests. */
short pp_accept_events(const pp_accept_state *st);
/* A poll timeout in ms: `usual` (-1 for none), or less while the listener
 * rests, so that the poll wakes when it may accept again. */
int pp_accept_timeout(const pp_accept_state *st, int usual);
#endif
