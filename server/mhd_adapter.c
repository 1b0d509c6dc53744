/* mhd_adapter.c: the adapter that mounts the endpoints on any
 * libmicrohttpd daemon (pprof_mhd.h), the host's or the built-in one
 * (daemon.c).
 *
 * The adapter turns MHD's access-handler calls into one pprof_http_handle
 * call per request: it collects a POST body (at most PP_MAX_BODY bytes,
 * else 413), hands the request over and queues the answer. When the answer
 * is not ready at once (a profile of N seconds), it suspends the connection
 * and registers its socket with pp_call_watch; the done callback, on the
 * scheduler thread, turns the answer into an MHD response and resumes the
 * connection, and MHD's next access-handler call queues it. If the client
 * goes away meanwhile, the scheduler notices (suspended connections are not
 * polled by MHD), ends the profile and resumes the connection, which is then
 * closed. Per-request state lives in *con_cls and is freed by
 * pprof_mhd_completed.
 *
 * A daemon with a thread per connection cannot suspend one (libmicrohttpd
 * leaves such a connection waiting for good): there the connection's own
 * thread waits for the answer, which blocks no other connection. A daemon
 * started without MHD_ALLOW_SUSPEND_RESUME, and not with a thread per
 * connection, answers a long request at once with a 501 that says so
 * (waiting would stall every connection; suspending would abort).
 *
 * Per-request lock protocol: the state's mutex guards phase, answer and
 * call handle. The connection is suspended and resumed only under it, so a
 * resume can never overtake its suspend. The mutex is never held while
 * calling pprof_http_cancel (which waits for a running done callback that
 * takes the same mutex).
 */
#define _GNU_SOURCE
#include "auth.h"
#include "base/base.h"
#include "mhd_adapter.h"
#include "pprof_mhd.h"
#include "reply.h"
#include "sched.h"
#include "tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

enum { ST_FRESH, ST_BODY, ST_HANDLING, ST_SUSPENDED, ST_RESUMED, ST_WAITING, ST_FINISHED };

struct pp_mhd_req {
    pthread_mutex_t mu;
    pthread_cond_t answered;     /* ST_WAITING: the answer came, or the client left */
    int phase;
    int gone;                    /* client left or request over: drop answers */
    struct MHD_Connection *conn;
    char *query;                 /* raw query, when have_query */
    int have_query;
    pprof_buffer body;
    int body_too_large;
    pprof_http_call *call;       /* while a call is pending */
    int have_resp;
    int refused;                 /* the access check's refusal is queued */
    struct MHD_Response *resp;   /* NULL if it could not be made */
    unsigned int status;
    _Atomic int *parked;         /* built-in server: count of suspended connections */
};

pp_mhd_req *pp_mhd_req_new(const char *query, _Atomic int *parked)
{
    pp_mhd_req *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    if (query) {
        st->query = strdup(query);
        if (!st->query) {
            free(st);
            return NULL;
        }
    }
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->answered, NULL);
    st->phase = ST_FRESH;
    st->have_query = parked != NULL;
    st->parked = parked;
    return st;
}

static void req_free(pp_mhd_req *st)
{
    if (st->resp)
        MHD_destroy_response(st->resp);
    pprof_buffer_free(&st->body);
    free(st->query);
    pthread_cond_destroy(&st->answered);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

/* Leaves the parked state (lock held): the connection is MHD's again. */
static void unpark_locked(pp_mhd_req *st)
{
    if ((st->phase == ST_SUSPENDED || st->phase == ST_RESUMED) && st->parked)
        atomic_fetch_sub(st->parked, 1);
    st->phase = ST_FINISHED;
}

/* Hands the connection back to its daemon, or to its thread waiting in
 * start_request, once its answer is in or its client left (lock held). */
static void wake_locked(pp_mhd_req *st)
{
    if (st->phase == ST_SUSPENDED) {
        st->phase = ST_RESUMED;
        MHD_resume_connection(st->conn);
    } else if (st->phase == ST_WAITING) {
        pthread_cond_signal(&st->answered);
    }
}

/* done callback: any thread. Builds the MHD response outside the lock. */
static void mhd_done(void *ctx, const pprof_http_response *resp)
{
    pp_mhd_req *st = ctx;
    struct MHD_Response *mr =
        MHD_create_response_from_buffer(resp->body.len, resp->body.data, MHD_RESPMEM_MUST_COPY);
    for (size_t i = 0; mr && i < resp->nheaders; i++) {
        if (MHD_add_response_header(mr, resp->headers[i].name, resp->headers[i].value) != MHD_YES) {
            MHD_destroy_response(mr);
            mr = NULL;
        }
    }
    if (mr && st->parked && MHD_add_response_header(mr, "Connection", "close") != MHD_YES) {
        MHD_destroy_response(mr); /* built-in server: one request per connection (heads.h) */
        mr = NULL;
    }
    pthread_mutex_lock(&st->mu);
    if (st->gone) {
        pthread_mutex_unlock(&st->mu);
        if (mr)
            MHD_destroy_response(mr);
        return;
    }
    st->resp = mr;
    st->status = (unsigned int)resp->status;
    st->have_resp = 1;
    wake_locked(st);
    pthread_mutex_unlock(&st->mu);
}

/* closed hook: the peer left (or the server stops) while a call was
 * pending; the call is over without an answer. Resume so MHD closes. */
static void mhd_closed(void *arg)
{
    pp_mhd_req *st = arg;
    pthread_mutex_lock(&st->mu);
    st->gone = 1;
    wake_locked(st);
    pthread_mutex_unlock(&st->mu);
}

/* The answer when memory ran out before one could be built: made once
 * (the built-in server makes it at start) and shared by every connection,
 * so a request is answered even then. */
static struct MHD_Response *oom_response(void)
{
    static struct MHD_Response *_Atomic shared;
    static const char text[] = "out of memory while answering; try again\n";
    struct MHD_Response *r = atomic_load(&shared), *none = NULL;
    if (r)
        return r;
    r = MHD_create_response_from_buffer(sizeof text - 1, (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return NULL;
    if (MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8") != MHD_YES ||
        !atomic_compare_exchange_strong(&shared, &none, r)) {
        MHD_destroy_response(r);
        return none;
    }
    return r;
}

void pp_mhd_prepare(void)
{
    oom_response();
}

enum MHD_Result pp_mhd_queue_oom(struct MHD_Connection *c)
{
    struct MHD_Response *r = oom_response();
    return r ? MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r) : MHD_NO;
}

static enum MHD_Result queue_and_release(struct MHD_Connection *c, unsigned int status,
                                         struct MHD_Response *r)
{
    if (!r)
        return pp_mhd_queue_oom(c);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* The answer to a request whose call ended without one: its client left
 * (no one reads it, and MHD closes the connection when the write fails),
 * or the server stopped while it was pending (the process exits, or
 * enters a sandbox; a daemon's process that lives on may take the
 * endpoint over), and the client reads why. (Returning MHD_NO would close
 * the connection too, but daemons with MHD_USE_ERROR_LOG then log an
 * "internal application error" for every dropped client.) */
static enum MHD_Result queue_gone(struct MHD_Connection *c)
{
    static const char why[] = "the server stopped before this request was done (its process is exiting or "
                              "stopped profiling); ask again\n";
    static struct MHD_Response *_Atomic shared;
    struct MHD_Response *r = atomic_load(&shared), *none = NULL;
    if (!r) {
        r = MHD_create_response_from_buffer(sizeof why - 1, (void *)why, MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Connection", "close");
        MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(r, "X-Go-Pprof", "1");
        MHD_add_response_header(r, "Retry-After", "5");
        if (!atomic_compare_exchange_strong(&shared, &none, r)) {
            MHD_destroy_response(r);
            r = none;
        }
    }
    return MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
}

/* Takes the stored answer (lock held) and queues it after unlocking. */
static enum MHD_Result answer_unlock(pp_mhd_req *st)
{
    int ok = st->have_resp && !st->gone;
    struct MHD_Response *r = st->resp;
    unsigned int status = st->status;
    st->resp = NULL;
    unpark_locked(st);
    pthread_mutex_unlock(&st->mu);
    if (!ok) {
        if (r)
            MHD_destroy_response(r);
        return st->gone ? queue_gone(st->conn) : MHD_NO;
    }
    return queue_and_release(st->conn, status, r);
}

/* The raw query rebuilt from MHD's decoded arguments (for daemons without
 * our URI log callback): each key and value re-encoded, in order, with
 * every byte MHD decoded, NULs too (so "seconds=1%00" stays malformed and
 * is refused, as on the built-in server). */
static void append_encoded(pprof_buffer *b, int *failed, const char *s, size_t len)
{
    pprof_writer w = pprof_writer_buffer(b);
    char out[3 * 128];
    for (size_t i = 0; i < len && !*failed; i += 128) {
        size_t n = pp_pct_encode(s + i, len - i < 128 ? len - i : 128, out, sizeof out);
        if (w.write(w.ctx, out, n) != 0)
            *failed = 1;
    }
}

typedef struct query_builder {
    pprof_buffer b;
    int failed;
} query_builder;

static enum MHD_Result add_argument(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                    const char *value, size_t value_size)
{
    query_builder *qb = cls;
    pprof_writer w = pprof_writer_buffer(&qb->b);
    (void)kind;
    if (qb->b.len > 0 && w.write(w.ctx, "&", 1) != 0)
        qb->failed = 1;
    append_encoded(&qb->b, &qb->failed, key ? key : "", key ? key_size : 0);
    if (value) {
        if (w.write(w.ctx, "=", 1) != 0)
            qb->failed = 1;
        append_encoded(&qb->b, &qb->failed, value, value_size);
    }
    return qb->failed ? MHD_NO : MHD_YES;
}

/* The answer to a request that would wait, on a daemon that can neither
 * suspend a connection nor give it a thread of its own. */
static enum MHD_Result refuse_long(pp_mhd_req *st)
{
    pp_reply r;
    pp_reply_init(&r, 501);
    pp_reply_set_error(&r, 501, "this libmicrohttpd daemon was started without MHD_ALLOW_SUSPEND_RESUME (or "
                                "MHD_USE_THREAD_PER_CONNECTION): it cannot wait for a profile of some seconds");
    pp_reply_deliver(&r, mhd_done, st);
    pthread_mutex_lock(&st->mu);
    return answer_unlock(st);
}

/* The last access-handler call of a request's upload: handle it. */
static enum MHD_Result start_request(const pprof_server_config *cfg, pp_mhd_req *st,
                                     const char *url, const char *method)
{
    pthread_mutex_lock(&st->mu);
    st->phase = ST_HANDLING;
    pthread_mutex_unlock(&st->mu);

    if (st->body_too_large) {
        pp_reply r;
        pp_reply_init(&r, 413);
        pp_reply_set_error(&r, 413, "request body too large (limit %u bytes)", PP_MAX_BODY);
        pp_reply_deliver(&r, mhd_done, st);
        pthread_mutex_lock(&st->mu);
        return answer_unlock(st);
    }

    query_builder qb = {{0}, 0};
    const char *query = st->query;
    if (!st->have_query) {
        pp_own_heap_enter(); /* the adapter's work on the host's thread: the profiler's */
        MHD_get_connection_values_n(st->conn, MHD_GET_ARGUMENT_KIND, add_argument, &qb);
        pp_own_heap_leave();
        if (qb.failed) {
            pprof_buffer_free(&qb.b);
            return pp_mhd_queue_oom(st->conn);
        }
        pprof_writer w = pprof_writer_buffer(&qb.b);
        if (qb.b.len > 0 && w.write(w.ctx, "", 1) != 0) { /* NUL-terminate */
            pprof_buffer_free(&qb.b);
            return pp_mhd_queue_oom(st->conn);
        }
        query = qb.b.len > 0 ? qb.b.data : NULL;
    }
    pprof_http_request req = {
        .method = method,
        .path = url,
        .query = query,
        .body = st->body.data,
        .body_len = st->body.len,
    };
    pprof_http_call *call = NULL;
    int rc = pprof_http_handle(cfg, &req, mhd_done, st, &call);
    pprof_buffer_free(&qb.b);
    if (rc != 0)
        return pp_mhd_queue_oom(st->conn);

    pthread_mutex_lock(&st->mu);
    st->call = call; /* released in pprof_mhd_completed, whatever happens */
    if (st->have_resp)
        return answer_unlock(st);
    const union MHD_ConnectionInfo *di = MHD_get_connection_info(st->conn, MHD_CONNECTION_INFO_DAEMON);
    struct MHD_Daemon *d = di ? di->daemon : NULL;
    const union MHD_DaemonInfo *fl = d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_FLAGS) : NULL;
    unsigned int flags = fl ? (unsigned int)fl->flags : MHD_ALLOW_SUSPEND_RESUME; /* unknown: as documented */
    if (!(flags & MHD_USE_THREAD_PER_CONNECTION) && !(flags & MHD_ALLOW_SUSPEND_RESUME)) {
        st->call = NULL;
        pthread_mutex_unlock(&st->mu);
        pprof_http_cancel(call); /* if it was ending, its answer is in now */
        pthread_mutex_lock(&st->mu);
        if (st->have_resp)
            return answer_unlock(st);
        pthread_mutex_unlock(&st->mu);
        return refuse_long(st);
    }
    const union MHD_ConnectionInfo *fi = MHD_get_connection_info(st->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (flags & MHD_USE_THREAD_PER_CONNECTION) { /* this thread is the connection's: wait here */
        st->phase = ST_WAITING;
        pp_call_watch(call, fi ? (int)fi->connect_fd : -1, mhd_closed, st, d);
        while (!st->have_resp && !st->gone)
            pp_cond_wait(&st->answered, &st->mu);
        return answer_unlock(st);
    }
    /* Pending: park the connection until done or closed resumes it. */
    st->phase = ST_SUSPENDED;
    if (st->parked)
        atomic_fetch_add(st->parked, 1);
    MHD_suspend_connection(st->conn);
    pp_call_watch(call, fi ? (int)fi->connect_fd : -1, mhd_closed, st, d);
    pthread_mutex_unlock(&st->mu);
    return MHD_YES;
}

/* The client's address, for the refusal log. */
static const char *peer_of(struct MHD_Connection *c, char *buf, size_t size)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (!sa)
        return NULL;
    if (sa->sa_family == AF_INET)
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)size);
    if (sa->sa_family == AF_INET6)
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)size);
    return sa->sa_family == AF_UNIX ? "the unix socket" : NULL;
}

/* The built-in server has a client CA: every request needs a verified
 * client certificate (tls.h). */
static _Atomic int need_client_cert;

void pp_mhd_require_client_cert(int on)
{
    atomic_store(&need_client_cert, on);
}

/* The access check (auth.h, tls.h), once the request's headers are in:
 * MHD_YES to go on, or the refusal queued (the request then ends there). */
static enum MHD_Result refuse_unless_allowed(const pprof_server_config *cfg, struct MHD_Connection *c,
                                             pp_mhd_req *st)
{
    pp_access a;
    pp_access_resolve(cfg, &a);
    const char *text = "a client certificate signed by the server's client CA is required";
    int status = st->parked && atomic_load(&need_client_cert) && !pp_tls_client_verified(c) ? 403 : 0;
    if (status == 0)
        status = pp_auth_check(&a, MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
                               a.token_in_query ? MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token")
                                                : NULL,
                               &text);
    if (status == 0)
        return MHD_YES;
    char peer[64];
    pp_auth_refused(status, peer_of(c, peer, sizeof peer));
    char body[160];
    int n = snprintf(body, sizeof body, "%s\n", text);
    struct MHD_Response *r = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
    if (r && (MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8") != MHD_YES ||
              (st->parked && MHD_add_response_header(r, "Connection", "close") != MHD_YES) ||
              (status == 401 && MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                                        "Bearer realm=\"libpprof\"") != MHD_YES))) {
        MHD_destroy_response(r);
        r = NULL;
    }
    pthread_mutex_lock(&st->mu);
    st->phase = ST_FINISHED;
    st->refused = 1;
    pthread_mutex_unlock(&st->mu);
    return queue_and_release(c, (unsigned int)status, r);
}

/* Thread-safe: called from MHD's threads, one at a time per connection. */
int pprof_mhd_handle(const pprof_server_config *cfg, struct MHD_Connection *connection,
                     const char *url, const char *method, const char *upload_data,
                     size_t *upload_data_size, void **con_cls)
{
    pp_mhd_req *st = *con_cls;
    if (!st && pp_mhd_load() != 0) /* the service's own daemon: dlopen finds its libmicrohttpd */
        return MHD_NO;
    if (!st) {
        pp_own_heap_enter(); /* the adapter's state on the host's thread: the profiler's */
        st = pp_mhd_req_new(NULL, NULL);
        pp_own_heap_leave();
        if (!st)
            return pp_mhd_queue_oom(connection);
        *con_cls = st;
    }
    switch (st->phase) {
    case ST_FRESH:
        st->conn = connection;
        st->phase = ST_BODY;
        return refuse_unless_allowed(cfg, connection, st);
    case ST_BODY:
        if (*upload_data_size != 0) {
            if (st->body_too_large || st->body.len + *upload_data_size > PP_MAX_BODY) {
                st->body_too_large = 1;
                pprof_buffer_free(&st->body);
            } else {
                pprof_writer w = pprof_writer_buffer(&st->body);
                if (w.write(w.ctx, upload_data, *upload_data_size) != 0)
                    return MHD_NO;
            }
            *upload_data_size = 0;
            return MHD_YES;
        }
        return start_request(cfg, st, url, method);
    default:
        if (st->refused) { /* the refusal is queued: drop any body */
            *upload_data_size = 0;
            return MHD_YES;
        }
        /* Called again after a resume: queue the answer, or close. */
        pthread_mutex_lock(&st->mu);
        return answer_unlock(st);
    }
}

int pp_mhd_req_fresh(const pp_mhd_req *st)
{
    return st->phase == ST_FRESH;
}

/* Thread-safe: called from MHD's threads when a request ends. */
void pprof_mhd_completed(void **con_cls)
{
    pp_mhd_req *st = con_cls ? *con_cls : NULL;
    if (!st)
        return;
    *con_cls = NULL;
    pthread_mutex_lock(&st->mu);
    pprof_http_call *call = st->call;
    st->call = NULL;
    st->gone = 1;
    unpark_locked(st);
    pthread_mutex_unlock(&st->mu);
    pprof_http_cancel(call); /* ends it if pending, waits for a done in flight, frees the handle */
    req_free(st);
}

/* Thread-safe. A request being handled right now may park one more
 * connection after the first pass; the second pass catches it. */
void pprof_mhd_release(struct MHD_Daemon *daemon)
{
    if (!daemon)
        return;
    pp_call_cancel_owner(daemon);
    nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
    pp_call_cancel_owner(daemon);
}
