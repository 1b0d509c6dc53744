/* heads.c: holding connections until their request head is in (see
 * heads.h). Used by the accept thread alone; the statistics are atomics. */
#define _GNU_SOURCE
#include "heads.h"
#include "base/base.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

typedef struct held {
    int fd;       /* -1: free */
    int64_t since; /* CLOCK_MONOTONIC ns */
    struct sockaddr_storage ss;
    socklen_t sl;
} held;

struct pp_heads {
    int ep, cap, n, tls;
    held *w;
    char buf[PP_TLS_RECORD_MAX]; /* what a client sent, peeked */
};

static _Atomic int st_held, st_cap;
static _Atomic uint64_t st_timed_out, st_displaced, st_too_large;

pp_heads *pp_heads_new(int cap, int tls)
{
    pp_heads *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->w = calloc((size_t)cap, sizeof *h->w);
    h->ep = pp_fd_epoll();
    if (!h->w || h->ep < 0) {
        if (h->ep >= 0)
            pp_fd_close(h->ep);
        free(h->w);
        free(h);
        return NULL;
    }
    h->cap = cap;
    h->tls = tls;
    for (int i = 0; i < cap; i++)
        h->w[i].fd = -1;
    atomic_store(&st_cap, cap);
    return h;
}

/* The slot is free again (its connection closed or passed on). */
static void release(pp_heads *h, held *c)
{
    c->fd = -1;
    h->n--;
    atomic_store(&st_held, h->n);
}

static void drop(pp_heads *h, held *c)
{
    pp_fd_close(c->fd); /* leaves the epoll set with it */
    release(h, c);
}

void pp_heads_free(pp_heads *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->cap; i++)
        if (h->w[i].fd >= 0)
            drop(h, &h->w[i]);
    pp_fd_close(h->ep);
    free(h->w);
    free(h);
}

void pp_heads_forget(pp_heads *h)
{
    if (!h)
        return;
    free(h->w);
    free(h);
}

int pp_heads_fd(const pp_heads *h)
{
    return h->ep;
}

void pp_heads_add(pp_heads *h, int fd, const struct sockaddr_storage *ss, socklen_t sl)
{
    held *slot = NULL;
    PP_ASSERT(h->cap > 0); /* daemon.c's budget leaves it at least one */
    for (int i = 0; i < h->cap && !slot; i++)
        if (h->w[i].fd < 0)
            slot = &h->w[i];
    if (!slot) { /* full: the longest wait gives way */
        for (int i = 0; i < h->cap; i++)
            if (!slot || h->w[i].since < slot->since)
                slot = &h->w[i];
        drop(h, slot);
        atomic_fetch_add(&st_displaced, 1);
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                             .data.u64 = (uint64_t)(uint32_t)fd << 32 | (uint32_t)(slot - h->w)};
    if (epoll_ctl(h->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        pp_fd_close(fd);
        return;
    }
    *slot = (held){.fd = fd, .since = pp_now_ns(CLOCK_MONOTONIC), .sl = sl};
    memcpy(&slot->ss, ss, sl < sizeof slot->ss ? sl : sizeof slot->ss);
    h->n++;
    atomic_store(&st_held, h->n);
}

void pp_heads_answer(int fd, const char *status, const char *why)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n%sConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\n%s\n",
                     status, !strncmp(status, "503", 3) ? "Retry-After: 5\r\n" : "", strlen(why) + 1, why);
    if (n > 0 && n < (int)sizeof buf && send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
        shutdown(fd, SHUT_WR);
}

/* The first TLS record in buf[0..n): 1 in whole, 0 not yet, -1 not a
 * handshake record (content type 22, protocol major version 3). */
static int tls_record_state(const unsigned char *b, size_t n)
{
    if ((n >= 1 && b[0] != 22) || (n >= 2 && b[1] != 3))
        return -1;
    if (n < 5)
        return 0;
    size_t len = (size_t)b[3] << 8 | b[4];
    return 5 + len > PP_TLS_RECORD_MAX ? -1 : n >= 5 + len;
}

/* Looks at what the client has sent so far: 1 the head is in, 0 not yet,
 * -1 the connection is over (closed, failed, too large, not TLS). */
static int head_state(pp_heads *h, int fd)
{
    size_t size = h->tls ? PP_TLS_RECORD_MAX : PP_HEAD_MAX;
    ssize_t n = recv(fd, h->buf, size, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    if (n == 0)
        return -1;
    if (h->tls)
        return tls_record_state((const unsigned char *)h->buf, (size_t)n);
    if (memmem(h->buf, (size_t)n, "\r\n\r\n", 4) || memmem(h->buf, (size_t)n, "\n\n", 2))
        return 1;
    if ((size_t)n == size) {
        pp_heads_answer(fd, "431 Request Header Fields Too Large", "request head over 8192 bytes");
        atomic_fetch_add(&st_too_large, 1);
        return -1;
    }
    return 0;
}

int pp_heads_run(pp_heads *h, pp_heads_ready ready, void *arg)
{
    struct epoll_event ev[64];
    int n;
    while ((n = epoll_wait(h->ep, ev, 64, 0)) > 0) {
        for (int i = 0; i < n; i++) {
            int fd = (int)(ev[i].data.u64 >> 32);
            held *c = &h->w[(uint32_t)ev[i].data.u64];
            if (c->fd != fd) /* closed earlier in this batch */
                continue;
            int s = head_state(h, fd);
            if (s < 0) {
                drop(h, c);
            } else if (s > 0) {
                epoll_ctl(h->ep, EPOLL_CTL_DEL, fd, NULL);
                struct sockaddr_storage ss = c->ss;
                socklen_t sl = c->sl;
                release(h, c);
                ready(arg, fd, &ss, sl);
            }
        }
        if (n < 64)
            break;
    }
    int64_t now = pp_now_ns(CLOCK_MONOTONIC), limit = (int64_t)PP_HEAD_SECONDS * 1000000000, next = -1;
    for (int i = 0; i < h->cap; i++) {
        held *c = &h->w[i];
        if (c->fd < 0)
            continue;
        if (now - c->since >= limit) {
            drop(h, c);
            atomic_fetch_add(&st_timed_out, 1);
        } else if (next < 0 || c->since + limit - now < next) {
            next = c->since + limit - now;
        }
    }
    return next < 0 ? -1 : (int)(next / 1000000) + 1;
}

void pp_heads_stats_get(pp_heads_stats *out)
{
    out->held = atomic_load(&st_held);
    out->cap = atomic_load(&st_cap);
    out->timed_out = atomic_load(&st_timed_out);
    out->displaced = atomic_load(&st_displaced);
    out->too_large = atomic_load(&st_too_large);
}
