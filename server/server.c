/* server.c: the built-in HTTP server (pprof_server_*) and the adapter that
 * mounts the endpoints on any libmicrohttpd daemon (pprof_mhd_*).
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
 * Per-request lock protocol: the state's mutex guards phase, answer and
 * call handle. The connection is suspended and resumed only under it, so a
 * resume can never overtake its suspend. The mutex is never held while
 * calling pprof_http_cancel (which waits for a running done callback that
 * takes the same mutex).
 *
 * The built-in server creates its listening socket itself (close-on-exec,
 * so a bind failure is reported as PPROF_EADDR) and runs MHD on it with one
 * internal polling thread. It captures the raw query with MHD's URI log
 * callback (MHD decodes query arguments itself). MHD must not be stopped
 * with suspended connections, so pprof_server_stop first ends the pending
 * calls of its daemon and waits until MHD has taken the parked connections
 * back. A forked child does not serve: it closes its copy of the listening
 * socket and forgets the daemon, whose thread exists only in the parent.
 */
#define _GNU_SOURCE
#include "accept.h"
#include "auth.h"
#include "heads.h"
#include "http_internal.h"
#include "listen.h"
#include "pprof_mhd.h"
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ================================================================ adapter */

enum { ST_FRESH, ST_BODY, ST_HANDLING, ST_SUSPENDED, ST_RESUMED, ST_FINISHED };

typedef struct pp_mhd_req {
    pthread_mutex_t mu;
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
} pp_mhd_req;

static pp_mhd_req *req_new(const char *query, _Atomic int *parked)
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
    if (st->phase == ST_SUSPENDED) {
        st->phase = ST_RESUMED;
        MHD_resume_connection(st->conn);
    }
    pthread_mutex_unlock(&st->mu);
}

/* closed hook: the peer left (or the server stops) while a call was
 * pending; the call is over without an answer. Resume so MHD closes. */
static void mhd_closed(void *arg)
{
    pp_mhd_req *st = arg;
    pthread_mutex_lock(&st->mu);
    st->gone = 1;
    if (st->phase == ST_SUSPENDED) {
        st->phase = ST_RESUMED;
        MHD_resume_connection(st->conn);
    }
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

static enum MHD_Result queue_oom(struct MHD_Connection *c)
{
    struct MHD_Response *r = oom_response();
    return r ? MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r) : MHD_NO;
}

static enum MHD_Result queue_and_release(struct MHD_Connection *c, unsigned int status,
                                         struct MHD_Response *r)
{
    if (!r)
        return queue_oom(c);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* The answer to a client that left while its request was pending: no one
 * reads it, and MHD closes the connection when the write fails. (Returning
 * MHD_NO would close it too, but daemons with MHD_USE_ERROR_LOG then log an
 * "internal application error" for every dropped client.) */
static enum MHD_Result queue_gone(struct MHD_Connection *c)
{
    static struct MHD_Response *_Atomic shared;
    struct MHD_Response *r = atomic_load(&shared), *none = NULL;
    if (!r) {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Connection", "close");
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
            return queue_oom(st->conn);
        }
        pprof_writer w = pprof_writer_buffer(&qb.b);
        if (qb.b.len > 0 && w.write(w.ctx, "", 1) != 0) { /* NUL-terminate */
            pprof_buffer_free(&qb.b);
            return queue_oom(st->conn);
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
        return queue_oom(st->conn);

    pthread_mutex_lock(&st->mu);
    st->call = call; /* released in pprof_mhd_completed, whatever happens */
    if (st->have_resp)
        return answer_unlock(st);
    /* Pending: park the connection until done or closed resumes it. */
    st->phase = ST_SUSPENDED;
    if (st->parked)
        atomic_fetch_add(st->parked, 1);
    MHD_suspend_connection(st->conn);
    const union MHD_ConnectionInfo *fi =
        MHD_get_connection_info(st->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *di = MHD_get_connection_info(st->conn, MHD_CONNECTION_INFO_DAEMON);
    pp_call_watch(call, fi ? (int)fi->connect_fd : -1, mhd_closed, st, di ? di->daemon : NULL);
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
    if (!st) {
        pp_own_heap_enter(); /* the adapter's state on the host's thread: the profiler's */
        st = req_new(NULL, NULL);
        pp_own_heap_leave();
        if (!st)
            return queue_oom(connection);
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

/* ========================================================== built-in server */

static struct {
    pthread_mutex_t mu;
    int running;
    struct MHD_Daemon *daemon;
    int listen_fd;
    int wake[2];             /* a byte on wake[1] ends the accept thread */
    pthread_t acceptor;
    int port;
    pprof_server_config cfg; /* prefix points to our copy */
    char *prefix;
    char *unix_path;         /* unix:PATH: the socket file, removed at stop */
    pp_heads *heads;         /* connections until their request head is in (heads.h) */
    pp_tls tls;              /* HTTPS: kept while the daemon runs (tls.h) */
    int mhd_cap;             /* connections libmicrohttpd may have at once */
    _Atomic int mhd_live;    /* connections it has */
    _Atomic int stopping;
    _Atomic int handling;        /* access-handler calls in progress */
    _Atomic int parked;      /* suspended connections of our daemon */
    char error[256];         /* why the last start failed */
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1, .wake = {-1, -1}};

static pthread_once_t srv_once = PTHREAD_ONCE_INIT;

/* The child of a fork must not serve on the parent's socket, and the MHD
 * thread does not exist in it: close the socket, forget the daemon. */
static void srv_after_fork_child(void)
{
    pthread_mutex_init(&srv.mu, NULL); /* its descriptors are closed already (base/fds.h) */
    srv.wake[0] = srv.wake[1] = -1;
    srv.running = 0;
    srv.daemon = NULL;
    srv.listen_fd = -1;
    srv.port = 0;
    srv.prefix = NULL;
    srv.unix_path = NULL; /* the parent's: it removes it */
    pp_tls_free(&srv.tls);
    if (srv.running)
        pp_heads_free(srv.heads); /* its copies would keep the parent's clients waiting */
    srv.heads = NULL;
    atomic_store(&srv.mhd_live, 0);
    atomic_store(&srv.stopping, 0);
    atomic_store(&srv.parked, 0);
}

/* The program puts a descriptor of its own on a number the server holds
 * (dup2 or dup3 onto it): serving stops first, so that nothing of the
 * server uses the number after the program's call (base/fds.h). */
static void srv_fd_taken(int fd)
{
    fprintf(stderr, "libpprof: the program reuses descriptor %d, which the profiler's server held; serving stops\n",
            fd);
    pprof_server_stop();
}

/* The index's row about the connections (none before the first start). */
static void write_index_row(pp_reply *r)
{
    int cap = srv.mhd_cap;
    if (!cap)
        return;
    pp_heads_stats hs;
    pp_heads_stats_get(&hs);
    pp_reply_printf(r,
                    "<tr><td>Connections</td><td>%d being answered of %d allowed; %d waiting for their "
                    "request head of %d allowed; closed: %llu without a whole head within %d s, %llu "
                    "to make room, %llu with a head over %d bytes (431)</td></tr>\n",
                    atomic_load(&srv.mhd_live), cap, hs.held, hs.cap, (unsigned long long)hs.timed_out,
                    PP_HEAD_SECONDS, (unsigned long long)hs.displaced, (unsigned long long)hs.too_large,
                    PP_HEAD_MAX);
}

static void srv_init(void)
{
    pthread_atfork(NULL, NULL, srv_after_fork_child);
    pp_index_row_add(write_index_row);
    pp_fd_on_taken(srv_fd_taken);
}

static void *srv_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    const char *qm = strchr(uri, '?');
    return req_new(qm ? qm + 1 : NULL, &srv.parked);
}

static enum MHD_Result srv_access(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)cls;
    (void)version;
    pp_mhd_req *st = *con_cls;
    atomic_fetch_add(&srv.handling, 1); /* before the check: stop waits for us */
    enum MHD_Result r = MHD_NO;
    if (!st) /* the URI log callback could not keep the query: answer rather than lose it */
        r = atomic_load(&srv.stopping) ? MHD_NO : queue_oom(c);
    else if (!atomic_load(&srv.stopping) || st->phase != ST_FRESH)
        r = (enum MHD_Result)pprof_mhd_handle(&srv.cfg, c, url, method, upload_data, upload_data_size,
                                              con_cls);
    atomic_fetch_sub(&srv.handling, 1);
    return r; /* MHD_NO for new requests while stopping */
}

static void srv_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                          enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    pprof_mhd_completed(con_cls);
}

static void srv_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe)
{
    (void)cls;
    (void)c;
    (void)socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
        atomic_fetch_sub(&srv.mhd_live, 1);
}

/* Binds the listening socket (listen.h), the profiler's (base/fds.h).
 * Returns it, or -1 with srv.error set. */
static int open_listener(const char *addr, int *port_out)
{
    pp_listen_error kind;
    int err;
    pp_fd_create_begin();
    int fd = pp_fd_own(pp_listen_open(addr, 1024, port_out, &kind, &err, srv.error, sizeof srv.error)); /* bursts wait */
    pp_fd_create_end();
    return fd;
}

/* Answers a connection libmicrohttpd does not get with a 503, and closes it. */
static void answer_busy(int fd, const char *why)
{
    pp_heads_answer(fd, "503 Service Unavailable", why);
    pp_fd_close(fd);
}

/* A connection whose request head is in (heads.h): to libmicrohttpd, or a
 * 503 at once when it has its fill of connections or cannot take this one
 * (out of memory: it closes the descriptor it was given, so a copy is kept
 * to answer on). */
static void hand_to_mhd(void *arg, int fd, const struct sockaddr_storage *ss, socklen_t sl)
{
    static int64_t dropped_ns;
    (void)arg;
    if (atomic_fetch_add(&srv.mhd_live, 1) >= srv.mhd_cap) {
        atomic_fetch_sub(&srv.mhd_live, 1);
        pp_auth_refused(503, NULL);
        answer_busy(fd, "too many connections to the profiler; try later");
        return;
    }
    int spare = pp_fd_dup(fd);
    if (MHD_add_connection(srv.daemon, fd, (const struct sockaddr *)ss, sl) == MHD_YES) {
        if (spare >= 0)
            pp_fd_close(spare);
        return;
    }
    int err = errno;
    atomic_fetch_sub(&srv.mhd_live, 1); /* MHD closed fd */
    pp_auth_refused(503, NULL);
    if (spare >= 0)
        answer_busy(spare, "the profiler could not take the connection (out of memory?); try later");
    int64_t now = pp_now_ns(CLOCK_MONOTONIC);
    if (!dropped_ns || now - dropped_ns > 60000000000LL) /* once a minute */
        fprintf(stderr, "libpprof: libmicrohttpd could not take a connection (%s); answered 503\n", strerror(err));
    dropped_ns = now;
}

/* How many connections the server may hold: a quarter of the descriptors
 * the process may open, at most 320 (the host's own come first); a fifth
 * of them for libmicrohttpd, the rest waiting for their request heads. */
static int connection_budget(void)
{
    struct rlimit rl;
    int budget = 320;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < (rlim_t)budget)
        budget = rl.rlim_cur / 4 < 10 ? 10 : (int)(rl.rlim_cur / 4);
    return budget;
}

/* The built-in server accepts on a thread of its own and hands each
 * connection to libmicrohttpd: MHD's accept loop spins on EMFILE when it
 * has no connection to close (accept.h). */
static void *acceptor_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-accept");
    pp_accept_state st = {0};
    int next_deadline = -1;
    for (;;) {
        struct pollfd p[3] = {{srv.wake[0], POLLIN, 0}, {srv.listen_fd, pp_accept_events(&st), 0},
                              {pp_heads_fd(srv.heads), POLLIN, 0}};
        if (poll(p, 3, pp_accept_timeout(&st, next_deadline)) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break;
        for (int i = 0; i < 64 && (p[1].revents & POLLIN); i++) { /* a burst at a time */
            struct sockaddr_storage ss;
            socklen_t sl = sizeof ss;
            int fd = pp_accept_one(&st, srv.listen_fd, 1, &ss, &sl);
            if (fd < 0)
                break;
            pp_heads_add(srv.heads, fd, &ss, sl);
        }
        next_deadline = pp_heads_run(srv.heads, hand_to_mhd, NULL);
    }
    return NULL;
}

/* Ends the accept thread (server lock held). */
static void acceptor_stop(void)
{
    if (write(srv.wake[1], "x", 1) == 1)
        pthread_join(srv.acceptor, NULL);
    pp_fd_close(srv.wake[0]);
    pp_fd_close(srv.wake[1]);
    srv.wake[0] = srv.wake[1] = -1;
}

/* What this server started with, kept across fork (the fork handler
 * leaves it): a member of its tree that takes the hub's place when this
 * process has gone serves the same, at the port it had bound (tree.c). */
static pprof_server_config taken;
static char taken_addr[320];
static char *taken_strs[5];

static const char *keep_str(int i, const char *s)
{
    free(taken_strs[i]);
    taken_strs[i] = s ? strdup(s) : NULL;
    return taken_strs[i];
}

static void keep_for_takeover(const pprof_server_config *c, const char *addr, int port)
{
    const char *colon = strrchr(addr, ':');
    if (strncmp(addr, "unix:", 5) != 0 && colon && strcmp(colon, ":0") == 0)
        snprintf(taken_addr, sizeof taken_addr, "%.*s:%d", (int)(colon - addr), addr, port);
    else
        snprintf(taken_addr, sizeof taken_addr, "%s", addr);
    taken = *c;
    taken.addr = taken_addr;
    taken.prefix = keep_str(0, c->prefix);
    taken.token_file = keep_str(1, c->token_file);
    taken.tls_cert_file = keep_str(2, c->tls_cert_file);
    taken.tls_key_file = keep_str(3, c->tls_key_file);
    taken.tls_client_ca_file = keep_str(4, c->tls_client_ca_file);
}

/* The takeover hook: serves where the old hub served, trying for 2 s
 * while its socket may still be closing. On the member's agent thread. */
static int serve_taken_over(void)
{
    int rc = PPROF_EADDR;
    for (int i = 0; i < 40 && rc == PPROF_EADDR; i++)
        if ((rc = pprof_server_start(&taken)) == PPROF_EADDR)
            nanosleep(&(struct timespec){0, 50000000}, NULL);
    const char *print = getenv("LIBPPROF_PRINT_ADDR");
    if (rc != 0)
        fprintf(stderr, "libpprof: pid %d could not take over the endpoint %s: %s\n", (int)getpid(), taken.addr,
                pprof_last_error());
    else if (print && !strcmp(print, "1"))
        fprintf(stderr, "libpprof: serving %s (pid %d, in place of the process that served it)\n", taken.addr,
                (int)getpid());
    return rc;
}

/* The host exits: stop serving before its destructors run. */
static void stop_at_exit(void)
{
    pprof_server_stop();
}

/* Thread-safe (serialized by the server lock). */
int pprof_server_start(const pprof_server_config *cfg)
{
    pthread_once(&srv_once, srv_init);
    pthread_mutex_lock(&srv.mu);
    if (srv.running) {
        pthread_mutex_unlock(&srv.mu);
        return pp_fail(PPROF_EBUSY);
    }
    srv.error[0] = '\0';
    pprof_server_config c = cfg ? *cfg : (pprof_server_config){0};
    const char *addr = c.addr;
    if (!addr || !*addr) {
        addr = getenv("LIBPPROF_ADDR");
        if (!addr || !*addr)
            addr = "127.0.0.1:6060";
    }
    int rc = PPROF_EADDR;
    size_t pl = c.prefix ? strlen(c.prefix) : 0;
    if (c.prefix && (pl == 0 || c.prefix[0] != '/' || c.prefix[pl - 1] != '/')) {
        snprintf(srv.error, sizeof srv.error, "prefix must start and end with '/'");
        rc = PPROF_EINVAL;
        goto out;
    }
    if (strcmp(addr, "off") == 0) {
        snprintf(srv.error, sizeof srv.error, "serving is turned off (LIBPPROF_ADDR=off)");
        goto out;
    }
    char *prefix = NULL;
    if (c.prefix && !(prefix = strdup(c.prefix))) {
        rc = PPROF_ENOMEM;
        goto out;
    }
    oom_response(); /* made while memory is there */
    pp_access access;
    pp_access_resolve(&c, &access);
    char *token_file = NULL;
    if (pp_auth_load(&access, srv.error, sizeof srv.error) != 0 ||
        (access.token_file && !(token_file = strdup(access.token_file)))) {
        free(prefix);
        rc = srv.error[0] ? PPROF_EINVAL : PPROF_ENOMEM;
        goto out;
    }
    if (pp_tls_load(&c, &srv.tls, srv.error, sizeof srv.error) != 0 ||
        (srv.tls.cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES &&
         snprintf(srv.error, sizeof srv.error, "this libmicrohttpd was built without TLS"))) {
        pp_tls_free(&srv.tls);
        free(prefix);
        free(token_file);
        rc = PPROF_EINVAL;
        goto out;
    }
    int port = 0;
    int fd = open_listener(addr, &port);
    if (fd < 0) {
        pp_tls_free(&srv.tls);
        free(prefix);
        free(token_file);
        goto out;
    }
    if (!token_file && !srv.tls.client_ca && !access.auth_none && !pp_listen_is_loopback(fd)) {
        snprintf(srv.error, sizeof srv.error,
                 "%s is not a loopback address and no token or client CA is set: set LIBPPROF_TOKEN_FILE "
                 "or LIBPPROF_TLS_CLIENT_CA, or LIBPPROF_AUTH=none to serve anyone who reaches it",
                 addr);
        pp_fd_close(fd);
        pp_tls_free(&srv.tls);
        free(prefix);
        free(token_file);
        goto out;
    }
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET |
                         MHD_USE_ITC;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, srv.tls.cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, srv.tls.key},
        {srv.tls.client_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, srv.tls.client_ca},
        {MHD_OPTION_END, 0, NULL},
    };
    if (srv.tls.cert)
        flags |= MHD_USE_TLS;
    else
        tls_options[0].option = MHD_OPTION_END;
    atomic_store(&need_client_cert, srv.tls.client_ca != NULL);
    c.addr = NULL;
    c.prefix = prefix;
    c.token_file = token_file;
    srv.cfg = c;
    atomic_store(&srv.stopping, 0);
    atomic_store(&srv.parked, 0);
    sigset_t old;
    pp_block_host_signals(&old); /* the MHD thread inherits the mask */
    pprof_labels *caller_set = pp_own_labels_begin(); /* and the label set */
    pp_own_heap_enter(); /* and the own heap: the server's memory is the profiler's */
    int budget = connection_budget();
    srv.mhd_cap = budget / 5;
    atomic_store(&srv.mhd_live, 0);
    srv.heads = pp_heads_new(budget - srv.mhd_cap, srv.tls.cert != NULL);
    struct MHD_Daemon *d = !srv.heads ? NULL : MHD_start_daemon(
        flags, 0, NULL, NULL, srv_access, NULL,
        MHD_OPTION_URI_LOG_CALLBACK, srv_uri_log, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, srv_completed, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, srv_connection, NULL,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)PP_HEAD_SECONDS,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(srv.mhd_cap + 8), /* ours: hand_to_mhd */
        MHD_OPTION_ARRAY, tls_options,
        MHD_OPTION_END);
    srv.daemon = d;
    srv.listen_fd = fd;
    int started = d && pp_fd_pipe(srv.wake) == 0;
    if (started && pthread_create(&srv.acceptor, NULL, acceptor_main, NULL) != 0) {
        pp_fd_close(srv.wake[0]);
        pp_fd_close(srv.wake[1]);
        started = 0;
    }
    pp_own_heap_leave();
    pp_own_labels_end(caller_set);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!started) {
        snprintf(srv.error, sizeof srv.error, "cannot start the HTTP daemon");
        if (d) {
            pp_own_heap_enter();
            MHD_stop_daemon(d);
            pp_own_heap_leave();
        }
        pp_heads_free(srv.heads);
        srv.heads = NULL;
        pp_tls_free(&srv.tls);
        srv.daemon = NULL;
        srv.listen_fd = -1;
        srv.wake[0] = srv.wake[1] = -1;
        pp_fd_close(fd);
        free(prefix);
        free(token_file);
        srv.cfg.token_file = NULL;
        rc = PPROF_ESYS;
        goto out;
    }
    srv.port = port;
    srv.prefix = prefix;
    srv.unix_path = strncmp(addr, "unix:", 5) == 0 ? strdup(addr + 5) : NULL;
    srv.running = 1;
    pp_shutdown_hook_add(stop_at_exit);
    if (cfg != &taken) /* a takeover keeps what it took over */
        keep_for_takeover(&c, addr, port);
    pp_tree_set_takeover(serve_taken_over);
    rc = 0;
    if (!c.no_tree && pp_tree_start() != 0) /* the server runs on; its tree is not joined */
        fprintf(stderr, "libpprof: %s; forked children are not profiled through this endpoint\n",
                pprof_last_error());
out:
    pthread_mutex_unlock(&srv.mu);
    if (rc)
        return srv.error[0] ? pp_error_detail(rc, "%s", srv.error) : pp_fail(rc);
    return 0;
}

/* Thread-safe. Must not be called from a request's own callbacks. */
int pprof_server_stop(void)
{
    pthread_once(&srv_once, srv_init);
    pthread_mutex_lock(&srv.mu);
    if (!srv.running) {
        pthread_mutex_unlock(&srv.mu);
        return pp_fail(PPROF_ESTATE);
    }
    atomic_store(&srv.stopping, 1);
    acceptor_stop();
    /* End pending profiles and wait until MHD has every parked connection
     * back: stopping MHD with suspended connections is not allowed. A
     * request being handled right now may park one more, hence the loop. */
    int64_t give_up = pp_now_ns(CLOCK_MONOTONIC) + 5000000000LL;
    int settled = 0;
    for (;;) {
        pp_call_cancel_owner(srv.daemon);
        if (atomic_load(&srv.parked) <= 0 && atomic_load(&srv.handling) <= 0) {
            settled = 1;
            break;
        }
        if (pp_now_ns(CLOCK_MONOTONIC) > give_up)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
    }
    /* MHD aborts the process when stopped with a parked connection: if one
     * never came back, leave the daemon be (it gets no new connections). */
    if (settled) {
        pp_own_heap_enter(); /* its closes are the profiler's (base/fds.h) */
        MHD_stop_daemon(srv.daemon);
        pp_own_heap_leave();
    }
    pp_heads_free(srv.heads); /* the accept thread has ended */
    srv.heads = NULL;
    if (settled)
        pp_tls_free(&srv.tls); /* else the daemon that holds it lives on */
    pp_fd_close(srv.listen_fd);
    if (srv.unix_path)
        unlink(srv.unix_path);
    free(srv.unix_path);
    srv.unix_path = NULL;
    free(srv.prefix);
    free((char *)srv.cfg.token_file);
    srv.cfg.token_file = NULL;
    srv.prefix = NULL;
    srv.daemon = NULL;
    srv.listen_fd = -1;
    srv.port = 0;
    srv.running = 0;
    pthread_mutex_unlock(&srv.mu);
    return 0;
}

/* Thread-safe. */
int pprof_server_port(void)
{
    pthread_mutex_lock(&srv.mu);
    int port = srv.running ? srv.port : PPROF_ESTATE;
    pthread_mutex_unlock(&srv.mu);
    return port < 0 ? pp_fail(port) : port;
}
