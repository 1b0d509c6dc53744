/* heads.h: connections the built-in server holds until their request head
 * is in (heads.c).
 *
 * The accept thread keeps each new connection here, reading nothing (it
 * peeks), until the client has sent a whole request head (the empty line
 * after the headers); only then does libmicrohttpd get it, so that idle
 * and slow clients never hold one of libmicrohttpd's places. A connection
 * whose head is not complete within PP_HEAD_SECONDS is closed, as is one
 * whose head passes PP_HEAD_MAX bytes (431) or that the client closes.
 * When every place here is taken, the connection that has waited longest
 * is closed to make room: a client that sends its request at once always
 * gets through, however many idle ones there are. Edge-triggered epoll: a
 * partial head is looked at again only when more bytes arrive.
 *
 * Over TLS the request head is encrypted: there the holder waits for the
 * client's first TLS record (its ClientHello, at most PP_TLS_RECORD_MAX
 * bytes) to be in whole, and closes a connection whose first bytes are
 * not a TLS handshake record; the handshake and the request head then
 * run under libmicrohttpd's own PP_HEAD_SECONDS timeout.
 */
#ifndef PP_HEADS_H
#define PP_HEADS_H
#include <stdint.h>
#include <sys/socket.h>

#define PP_HEAD_SECONDS 10
#define PP_HEAD_MAX 8192
#define PP_TLS_RECORD_MAX (5 + 16384)

typedef struct pp_heads pp_heads;

/* Called with each connection whose head is in; it owns fd from then. */
typedef void (*pp_heads_ready)(void *arg, int fd, const struct sockaddr_storage *ss, socklen_t sl);

/* A holder for up to cap connections (tls: of a TLS server), or NULL (out
 * of memory or fds). */
pp_heads *pp_heads_new(int cap, int tls);
/* Closes the connections still held, and the holder. */
void pp_heads_free(pp_heads *h);
/* Frees the holder and closes nothing: for a forked child, whose copies of
 * its descriptors base/fds.c closed already (their numbers may be
 * another's now). */
void pp_heads_forget(pp_heads *h);
/* The descriptor to poll for POLLIN: something here is ready. */
int pp_heads_fd(const pp_heads *h);
/* Takes a new connection (making room, see above). */
void pp_heads_add(pp_heads *h, int fd, const struct sockaddr_storage *ss, socklen_t sl);
/* Passes on the connections whose heads are in, closes those that failed
 * or waited too long. Returns the milliseconds until the next deadline,
 * or -1 when nothing is held. */
int pp_heads_run(pp_heads *h, pp_heads_ready ready, void *arg);

typedef struct pp_heads_stats {
    int held, cap;
    uint64_t timed_out; /* no whole head in PP_HEAD_SECONDS */
    uint64_t displaced; /* closed to make room */
    uint64_t too_large; /* head over PP_HEAD_MAX: 431 */
} pp_heads_stats;
/* Writes a whole plain-text answer ("431 Request Header Fields Too Large",
 * "503 Service Unavailable" with Retry-After) with `why` as its body,
 * without waiting, and ends the sending side; the caller closes fd. */
void pp_heads_answer(int fd, const char *status, const char *why);

/* Thread-safe (the counters are the last ones any holder published). */
void pp_heads_stats_get(pp_heads_stats *out);
#endif
