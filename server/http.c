/* http.c: transport-independent handling of /debug/pprof requests.
 *
 * pprof_http_handle routes a request (prefix, endpoint, method), parses the
 * query parameters we know (seconds, debug, gc), and calls the endpoint's
 * function from handlers.c. Quick endpoints answer before it returns.
 * Windowed profiles (profile?seconds=N) become pending calls that the
 * scheduler thread completes when their deadline passes.
 *
 * The scheduler is one library thread, created on first use. It keeps the
 * calls in one list ordered by deadline and sleeps on a CLOCK_MONOTONIC
 * condition variable until the earliest deadline. Transports that park a
 * connection while a call is pending (suspended MHD connections are not
 * polled) register the socket with pp_http_watch; while any call is
 * watched, the scheduler also wakes every 250 ms and peeks at those sockets
 * so a client that went away ends its profile early.
 *
 * A call is PENDING (in the list, waiting for its deadline), RUNNING (its
 * done or closed callback runs, without the lock held) or FINISHED. Only
 * PENDING calls are taken by the scheduler, pprof_http_cancel and
 * pp_http_cancel_owner, each under the lock, so exactly one of them runs a
 * call's end. A canceller that finds the call RUNNING waits for it to
 * finish; whoever sees the call FINISHED last frees it.
 *
 * Callbacks never run with the lock held, and nothing here takes the lock
 * of a transport while holding ours, so transports may call in while
 * holding their own locks. A forked child starts with no calls and no
 * scheduler thread (the parent's are not in the child).
 */
#include "http_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

/* ================================================================ replies */

void pp_reply_init(pp_reply *r, int status)
{
    memset(r, 0, sizeof *r);
    r->resp.status = status;
    pp_reply_header(r, "X-Content-Type-Options", "nosniff");
}

void pp_reply_header(pp_reply *r, const char *name, const char *value)
{
    pprof_http_response *p = &r->resp;
    for (size_t i = 0; i < p->nheaders; i++) {
        if (strcasecmp(p->headers[i].name, name) == 0) {
            p->headers[i].value = value;
            return;
        }
    }
    if (p->nheaders == PPROF_HTTP_MAX_HEADERS) {
        r->failed = 1;
        return;
    }
    p->headers[p->nheaders].name = name;
    p->headers[p->nheaders].value = value;
    p->nheaders++;
}

void pp_reply_write(pp_reply *r, const void *data, size_t len)
{
    if (r->failed || len == 0)
        return;
    pprof_writer w = pprof_writer_buffer(&r->resp.body);
    if (w.write(w.ctx, data, len) != 0)
        r->failed = 1;
}

static int reply_writer_write(void *ctx, const void *data, size_t len)
{
    pp_reply *r = ctx;
    pp_reply_write(r, data, len);
    return r->failed ? -1 : 0;
}

pprof_writer pp_reply_writer(pp_reply *r)
{
    return (pprof_writer){.write = reply_writer_write, .ctx = r};
}

void pp_reply_printf(pp_reply *r, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        r->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        pp_reply_write(r, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        r->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    pp_reply_write(r, big, (size_t)n);
    free(big);
}

void pp_reply_set_errorv(pp_reply *r, int status, const char *fmt, va_list ap)
{
    char line[512];
    pprof_buffer_free(&r->resp.body);
    pp_reply_init(r, status);
    pp_reply_header(r, "Content-Type", "text/plain; charset=utf-8");
    pp_reply_header(r, "X-Go-Pprof", "1");
    if (status == 503) /* every 503 here is a limit or a passing state */
        pp_reply_header(r, "Retry-After", "5");
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof line - 2)
        n = (int)(sizeof line - 2);
    for (int i = 0; i < n; i++) /* one line, whatever the message holds */
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';
    pp_reply_write(r, line, (size_t)n);
}

void pp_reply_set_error(pp_reply *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pp_reply_set_errorv(r, status, fmt, ap);
    va_end(ap);
}

void pp_reply_deliver(pp_reply *r, pprof_http_done done, void *ctx)
{
    static char oom_text[] = "out of memory\n";
    if (r->failed) {
        /* Answer without allocating: a static body, not freed below. */
        pprof_buffer_free(&r->resp.body);
        pp_reply_init(r, 500);
        pp_reply_header(r, "Content-Type", "text/plain; charset=utf-8");
        pp_reply_header(r, "X-Go-Pprof", "1");
        r->resp.body.data = oom_text;
        r->resp.body.len = sizeof oom_text - 1;
        done(ctx, &r->resp);
        r->resp.body = (pprof_buffer){0};
        return;
    }
    done(ctx, &r->resp);
    pprof_buffer_free(&r->resp.body);
}

int pp_reply_send(pp_req *q, pp_reply *r)
{
    pp_reply_deliver(r, q->done, q->ctx);
    return 0;
}

int pp_reply_error(pp_req *q, int status, const char *fmt, ...)
{
    pp_reply r;
    va_list ap;
    pp_reply_init(&r, status);
    va_start(ap, fmt);
    pp_reply_set_errorv(&r, status, fmt, ap);
    va_end(ap);
    return pp_reply_send(q, &r);
}

/* ========================================================== query parsing */

/* Parses an optionally signed decimal integer filling s[0..n). Values beyond
 * +-INT_MAX are rejected. Returns 0 and *v, or -1. */
int pp_parse_int(const char *s, size_t n, long long *v)
{
    size_t i = 0;
    int neg = 0;
    long long x = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i == n)
        return -1;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (s[i] - '0');
        if (x > INT32_MAX)
            return -1;
    }
    *v = neg ? -x : x;
    return 0;
}

static const char SECONDS_INVALID[] = "invalid value for \"seconds\" - must be a positive integer";

/* Answers 400 with the formatted reason; returns 1 for parse_query. */
static int bad_query(pp_req *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad_query(pp_req *q, const char *fmt, ...)
{
    pp_reply r;
    va_list ap;
    pp_reply_init(&r, 400);
    va_start(ap, fmt);
    pp_reply_set_errorv(&r, 400, fmt, ap);
    va_end(ap);
    pp_reply_send(q, &r);
    return 1;
}

/* Fills q->q from the query. Returns 0, or 1 after answering 400. */
static int parse_query(pp_req *q)
{
    static const char *const names[] = {"seconds", "debug", "gc"};
    const char *s = q->req->query;
    pp_query *pq = &q->q;
    while (s && *s) {
        const char *amp = strchr(s, '&');
        size_t len = amp ? (size_t)(amp - s) : strlen(s);
        const char *eq = memchr(s, '=', len);
        size_t klen = eq ? (size_t)(eq - s) : len;
        char key[16], val[32];
        long kl = pp_pct_decode(s, klen, key, sizeof key, PP_PCT_PLUS);
        if (kl < 0)
            return bad_query(q, "malformed query - bad %%-escape");
        int which = -1;
        for (int i = 0; i < 3 && kl < (long)sizeof key; i++)
            if ((size_t)kl == strlen(names[i]) && memcmp(key, names[i], (size_t)kl) == 0)
                which = i;
        if (kl == 6 && memcmp(key, "format", 6) == 0) {
            long vl = eq ? pp_pct_decode(eq + 1, len - klen - 1, val, sizeof val, PP_PCT_PLUS) : -1;
            if (pq->out.format)
                return bad_query(q, "parameter \"format\" given more than once");
            if (vl == 5 && memcmp(val, "proto", 5) == 0)
                pq->out.format = PP_OUT_PROTO;
            else if (vl == 6 && memcmp(val, "folded", 6) == 0)
                pq->out.format = PP_OUT_FOLDED;
            else
                return bad_query(q, "invalid value for \"format\" - must be proto or folded");
        } else if (kl == 6 && memcmp(key, "labels", 6) == 0) {
            long vl = eq ? pp_pct_decode(eq + 1, len - klen - 1, val, sizeof val, PP_PCT_PLUS) : -1;
            if (vl != 1 || (val[0] != '0' && val[0] != '1'))
                return bad_query(q, "invalid value for \"labels\" - must be 0 or 1");
            pq->out.labels = val[0] == '1';
        } else if (kl == 12 && memcmp(key, "sample_index", 12) == 0) {
            char *si = pq->out.sample_index;
            long vl = eq ? pp_pct_decode(eq + 1, len - klen - 1, si, sizeof pq->out.sample_index, PP_PCT_PLUS) : -1;
            if (vl <= 0 || vl >= (long)sizeof pq->out.sample_index || memchr(si, 0, (size_t)vl))
                return bad_query(q, "invalid value for \"sample_index\" - must be a sample type's name or index");
            si[vl] = 0;
        } else if (kl == 9 && memcmp(key, "symbolize", 9) == 0) {
            static const char *const hows[] = {"full", "functions", "none"};
            long vl = eq ? pp_pct_decode(eq + 1, len - klen - 1, val, sizeof val, PP_PCT_PLUS) : -1;
            if (pq->symbolize)
                return bad_query(q, "parameter \"symbolize\" given more than once");
            for (int i = 0; i < 3 && vl >= 0 && vl < (long)sizeof val; i++)
                if ((size_t)vl == strlen(hows[i]) && memcmp(val, hows[i], (size_t)vl) == 0)
                    pq->symbolize = (pprof_symbolize)(PPROF_SYMBOLIZE_FULL + i);
            if (!pq->symbolize)
                return bad_query(q, "invalid value for \"symbolize\" - must be full, functions or none");
        } else if (which >= 0) {
            int *has = which == 0 ? &pq->has_seconds : which == 1 ? &pq->has_debug : &pq->has_gc;
            int *out = which == 0 ? &pq->seconds : which == 1 ? &pq->debug : &pq->gc;
            long vl = eq ? pp_pct_decode(eq + 1, len - klen - 1, val, sizeof val, PP_PCT_PLUS) : 0;
            long long v = 0;
            if (vl < 0)
                return bad_query(q, "malformed query - bad %%-escape");
            if (*has)
                return bad_query(q, "parameter \"%s\" given more than once", names[which]);
            int ok = vl < (long)sizeof val && pp_parse_int(val, (size_t)vl, &v) == 0;
            if (which == 0) {
                if (!ok || v <= 0)
                    return bad_query(q, "%s", SECONDS_INVALID);
                if (v > q->cfg.max_seconds)
                    return bad_query(q, "invalid value for \"seconds\" - must be at most %d",
                                     q->cfg.max_seconds);
            } else if (!ok) {
                return bad_query(q, "invalid value for \"%s\" - must be an integer", names[which]);
            } else if (which == 1 && v < 0) {
                return bad_query(q, "invalid value for \"debug\" - must be 0 or more");
            }
            *has = 1;
            *out = (int)v;
        }
        s += len;
        if (*s == '&')
            s++;
    }
    if (pq->out.format && pq->has_debug && pq->debug)
        return bad_query(q, "format and debug params are incompatible");
    if ((pq->out.labels || pq->out.sample_index[0]) && pq->out.format != PP_OUT_FOLDED)
        return bad_query(q, "\"labels\" and \"sample_index\" go with format=folded");
    return 0;
}

/* ================================================================ routing */

/* Thread-safe: each call works on its own request; shared state (the
 * pending calls) is behind the scheduler's lock. */
static int handle(const pprof_server_config *cfg, const pprof_http_request *req, pprof_http_done done, void *ctx,
                  pprof_http_call **call)
{
    if (call)
        *call = NULL;
    if (!req || !req->method || !req->path || !done)
        return pp_fail(PPROF_EINVAL);

    pp_req q;
    memset(&q, 0, sizeof q);
    if (cfg)
        q.cfg = *cfg;
    if (!q.cfg.prefix)
        q.cfg.prefix = PP_DEFAULT_PREFIX;
    size_t plen = strlen(q.cfg.prefix);
    if (plen == 0 || q.cfg.prefix[0] != '/' || q.cfg.prefix[plen - 1] != '/')
        return pp_fail(PPROF_EINVAL);
    if (q.cfg.max_seconds <= 0)
        q.cfg.max_seconds = PP_DEFAULT_MAX_SECONDS;
    if (q.cfg.max_concurrent <= 0)
        q.cfg.max_concurrent = PP_DEFAULT_MAX_CONCURRENT;
    q.req = req;
    q.done = done;
    q.ctx = ctx;
    q.call = call;

    const pp_endpoint *ep = NULL;
    if (strncmp(req->path, q.cfg.prefix, plen) == 0) {
        q.name = req->path + plen;
        ep = pp_endpoint_find(q.name);
        if (!ep)
            return pp_reply_error(&q, 404, "Unknown profile");
    } else if (plen > 1 && strlen(req->path) == plen - 1 && strncmp(req->path, q.cfg.prefix, plen - 1) == 0) {
        /* the prefix without its slash: where the index is, as Go's mux says */
        pp_reply r;
        pp_reply_init(&r, 301);
        pp_reply_header(&r, "Location", q.cfg.prefix);
        pp_reply_header(&r, "Content-Type", "text/plain; charset=utf-8");
        pprof_writer w = pp_reply_writer(&r);
        w.write(w.ctx, "Moved Permanently\n", 18);
        return pp_reply_send(&q, &r);
    } else if (strcmp(req->path, "/symbolz") == 0 && !strstr(q.cfg.prefix, "/debug/pprof/")) {
        /* go tool pprof asks here when the profile URL lacks /debug/pprof/. */
        ep = pp_endpoint_find("symbol");
        q.name = "symbol";
    }
    if (!ep)
        return pp_reply_error(&q, 404, "404 page not found");

    const char *m = req->method;
    int post_ok = (ep->flags & PP_EP_POST) != 0;
    if (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0 && !(post_ok && strcmp(m, "POST") == 0)) {
        pp_reply r;
        pp_reply_init(&r, 405);
        pp_reply_set_error(&r, 405, "method not allowed (use %s)", post_ok ? "GET, HEAD or POST" : "GET or HEAD");
        pp_reply_header(&r, "Allow", post_ok ? "GET, HEAD, POST" : "GET, HEAD");
        return pp_reply_send(&q, &r);
    }
    if ((ep->flags & PP_EP_QUERY) && parse_query(&q))
        return 0;
    return ep->fn(&q);
}

/* Answering is the profiler's own work, on whichever thread it runs; a
 * hub answers for its process tree (tree.c). */
int pprof_http_handle(const pprof_server_config *cfg, const pprof_http_request *req,
                      pprof_http_done done, void *ctx, pprof_http_call **call)
{
    if (!req || !req->method || !req->path || !done)
        return handle(cfg, req, done, ctx, call);
    pprof_labels *prev = pp_own_labels_begin();
    int rc = pp_tree_handle(cfg, req, done, ctx, call, handle);
    pp_own_labels_end(prev);
    return rc;
}

/* ============================================================== scheduler */

enum { CALL_PENDING, CALL_RUNNING, CALL_FINISHED };

struct pprof_http_call {
    struct pprof_http_call *next; /* the list, ordered by deadline */
    int64_t deadline;             /* CLOCK_MONOTONIC, ns */
    int state;
    int waiters;                  /* cancellers waiting for FINISHED */
    int held;                     /* the caller holds the handle (until pprof_http_cancel) */
    pprof_recorder *rec;
    pp_finish_fn finish;
    const void *finish_arg;
    pp_output out;                /* the request's ?format= and its options */
    pprof_http_done done;
    void *ctx;
    int fd;                       /* watched socket, or -1 */
    void (*closed)(void *arg);
    void *closed_arg;
    const void *owner;
};

#define PEER_CHECK_NS 250000000LL

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* the scheduler: the list changed */
static pthread_cond_t idle; /* cancellers: a call finished */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pprof_http_call *calls; /* PENDING and RUNNING calls */
static int active;             /* reservations + calls not yet finished */
static int thread_running;

static void init_conds(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &a);
    pthread_cond_init(&idle, &a);
    pthread_condattr_destroy(&a);
}

/* In a forked child the scheduler thread does not exist and the lock may
 * have been held by a parent thread: start over (the calls are leaked). */
static void after_fork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    init_conds();
    calls = NULL;
    active = 0;
    thread_running = 0;
}

static void init_once(void)
{
    init_conds();
    pthread_atfork(NULL, NULL, after_fork_child);
}

static void unlink_locked(pprof_http_call *c)
{
    for (pprof_http_call **p = &calls; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            c->next = NULL;
            return;
        }
    }
}

/* Marks a RUNNING call finished; frees it unless a canceller waits. */
static void finish_locked(pprof_http_call *c)
{
    unlink_locked(c);
    c->state = CALL_FINISHED;
    active--;
    pthread_cond_broadcast(&idle);
    if (c->waiters == 0 && !c->held)
        free(c);
}

/* Waits (lock held) until a RUNNING call is finished, then frees it if this
 * was the last waiter. */
static void wait_finished_locked(pprof_http_call *c)
{
    c->waiters++;
    while (c->state != CALL_FINISHED)
        pthread_cond_wait(&idle, &mu);
    if (--c->waiters == 0 && !c->held)
        free(c);
}

/* Ends a PENDING call (lock held on entry and exit, dropped meanwhile):
 * either completes it (stop the recorder, build the reply, call done) or,
 * when its peer is gone, discards the recorder and calls its closed hook. */
static void run_locked(pprof_http_call *c, int peer_gone)
{
    c->state = CALL_RUNNING;
    pthread_mutex_unlock(&mu);
    if (peer_gone) {
        pprof_recorder_free(c->rec);
        if (c->closed)
            c->closed(c->closed_arg);
    } else {
        pp_reply r;
        pp_reply_init(&r, 200);
        c->finish(c->rec, c->finish_arg, &c->out, &r);
        pprof_recorder_free(c->rec);
        pp_reply_deliver(&r, c->done, c->ctx);
    }
    c->rec = NULL;
    pthread_mutex_lock(&mu);
    finish_locked(c);
}

/* Whether the peer of a watched socket has closed it (or reset it). */
static int peer_closed(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0)
        return 1;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOTSOCK)
        return 1;
    return 0;
}

const char *pp_why(int rc)
{
    const char *e = pprof_last_error();
    return e[0] ? e : pprof_strerror(rc);
}

/* Ends the pending calls whose peers have gone (lock held on entry and
 * exit), so their places are free now rather than at the scheduler's next
 * check. */
static void reap_gone_locked(void)
{
    for (;;) {
        pprof_http_call *gone = NULL;
        for (pprof_http_call *c = calls; c && !gone; c = c->next)
            if (c->state == CALL_PENDING && c->fd >= 0 && peer_closed(c->fd))
                gone = c;
        if (!gone)
            return;
        run_locked(gone, 1);
    }
}

/* Finishes one due call (the scheduler marked it RUNNING). Inherits the
 * scheduler's signal mask, which leaves the host's signals to the host. */
static void *finisher_main(void *arg)
{
    pprof_labels_unref(pp_own_labels_begin()); /* no request's labels */
    pp_own_heap_enter(); /* its memory is the profiler's, for its life */
    pthread_mutex_lock(&mu);
    run_locked(arg, 0);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *scheduler_main(void *unused)
{
    (void)unused;
    pprof_labels_unref(pp_own_labels_begin()); /* not its creator's request labels */
    pp_own_heap_enter(); /* its memory, and its finishers', is the profiler's */
    int64_t next_check = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        int64_t now = pp_now_ns(CLOCK_MONOTONIC);
        pprof_http_call *first = NULL;
        int watched = 0;
        for (pprof_http_call *c = calls; c; c = c->next) {
            if (c->state != CALL_PENDING)
                continue;
            if (!first)
                first = c;
            watched |= c->fd >= 0;
        }
        if (first && first->deadline <= now) {
            /* Each due call finishes on a thread of its own, so that the
             * windows due together close together: one profile's
             * symbolizing and encoding must not lengthen the next one's. */
            first->state = CALL_RUNNING;
            pthread_t t;
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            if (pthread_create(&t, &attr, finisher_main, first) != 0)
                run_locked(first, 0);
            pthread_attr_destroy(&attr);
            continue;
        }
        if (watched && now >= next_check) {
            reap_gone_locked();
            next_check = now + PEER_CHECK_NS;
            continue; /* the list may have changed */
        }
        int64_t until = first ? first->deadline : INT64_MAX;
        if (watched && next_check < until)
            until = next_check;
        if (until == INT64_MAX) {
            pthread_cond_wait(&wake, &mu);
        } else {
            struct timespec ts = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
            pthread_cond_timedwait(&wake, &mu, &ts);
        }
    }
    return NULL;
}

static int start_thread_locked(void)
{
    if (thread_running)
        return 0;
    pthread_t t;
    pthread_attr_t attr;
    sigset_t old;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pp_block_host_signals(&old);
    int rc = pthread_create(&t, &attr, scheduler_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return pp_fail(PPROF_ESYS);
    thread_running = 1;
    return 0;
}

int pp_call_reserve(const pp_req *q)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    if (active >= q->cfg.max_concurrent)
        reap_gone_locked();
    int ok = active < q->cfg.max_concurrent;
    if (ok)
        active++;
    pthread_mutex_unlock(&mu);
    return ok ? 0 : PPROF_ELIMIT;
}

void pp_call_unreserve(void)
{
    pthread_mutex_lock(&mu);
    active--;
    pthread_mutex_unlock(&mu);
}

int pp_call_defer(pp_req *q, pprof_recorder *rec, int seconds, pp_finish_fn finish, const void *arg)
{
    pprof_http_call *c = calloc(1, sizeof *c);
    if (!c) {
        pp_call_unreserve();
        return pp_fail(PPROF_ENOMEM);
    }
    c->deadline = pp_now_ns(CLOCK_MONOTONIC) + (int64_t)seconds * 1000000000;
    c->state = CALL_PENDING;
    c->rec = rec;
    c->finish = finish;
    c->finish_arg = arg;
    c->out = q->q.out;
    c->done = q->done;
    c->ctx = q->ctx;
    c->fd = -1;
    c->held = q->call != NULL;

    pthread_mutex_lock(&mu);
    int rc = start_thread_locked();
    if (rc != 0) {
        active--;
        pthread_mutex_unlock(&mu);
        free(c);
        return rc;
    }
    if (q->call)
        *q->call = c; /* before the scheduler can see the call */
    pprof_http_call **p = &calls;
    while (*p && (*p)->deadline <= c->deadline)
        p = &(*p)->next;
    c->next = *p;
    *p = c;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&mu);
    return 0;
}

void pp_http_finish_all_now(int64_t wait_ns)
{
    pthread_mutex_lock(&mu);
    for (;;) {
        pprof_http_call *c = calls;
        while (c && c->state != CALL_PENDING)
            c = c->next;
        if (!c)
            break;
        run_locked(c, 0); /* on this thread: the process may be about to end */
    }
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + wait_ns;
    while (calls) { /* finishers still delivering */
        int64_t now = pp_now_ns(CLOCK_MONOTONIC);
        if (now >= end)
            break;
        struct timespec ts = {.tv_sec = end / 1000000000, .tv_nsec = end % 1000000000};
        pthread_cond_timedwait(&idle, &mu, &ts);
    }
    pthread_mutex_unlock(&mu);
}

/* Thread-safe. Waits for a done callback running on another thread; must
 * not be called from inside the call's own done callback. Releases the
 * caller's handle in every state. */
void pprof_http_cancel(pprof_http_call *call)
{
    if (!call)
        return;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    call->held = 0;
    if (call->state == CALL_FINISHED) {
        if (call->waiters == 0)
            free(call);
        pthread_mutex_unlock(&mu);
        return;
    }
    if (call->state == CALL_PENDING) {
        unlink_locked(call);
        call->state = CALL_FINISHED;
        active--;
        pthread_mutex_unlock(&mu);
        pprof_recorder_free(call->rec);
        free(call);
        return;
    }
    wait_finished_locked(call);
    pthread_mutex_unlock(&mu);
}

int pp_http_watch(pprof_http_call *call, int fd, void (*closed)(void *arg), void *arg,
                  const void *owner)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    int rc = PPROF_ESTATE;
    if (call->state == CALL_PENDING) {
        call->fd = fd;
        call->closed = closed;
        call->closed_arg = arg;
        call->owner = owner;
        pthread_cond_signal(&wake);
        rc = 0;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

void pp_http_cancel_owner(const void *owner)
{
    if (!owner)
        return;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    for (;;) {
        pprof_http_call *pending = NULL, *running = NULL;
        for (pprof_http_call *c = calls; c; c = c->next) {
            if (c->owner != owner)
                continue;
            if (c->state == CALL_PENDING && !pending)
                pending = c;
            if (c->state == CALL_RUNNING && !running)
                running = c;
        }
        if (pending)
            run_locked(pending, 1);
        else if (running)
            wait_finished_locked(running);
        else
            break;
    }
    pthread_mutex_unlock(&mu);
}

void pp_block_host_signals(sigset_t *old)
{
    static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
                               SIGCHLD, SIGPIPE, SIGALRM, SIGWINCH, SIGTSTP, SIGTTIN,
                               SIGTTOU, SIGIO,   SIGURG};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&set, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}
