/* daemon.c: the built-in HTTP server (pprof_server_start, _stop, _port).
 *
 * The server creates its listening socket itself (close-on-exec, so a bind
 * failure is reported as PPROF_EADDR) and accepts on a thread of its own:
 * each connection waits in heads.c until its request head is in, then
 * goes to libmicrohttpd, which runs the adapter (mhd_adapter.c) with one
 * internal polling thread. The raw query is captured with MHD's URI log
 * callback (MHD decodes query arguments itself). MHD must not be stopped
 * with suspended connections, so pprof_server_stop first ends the pending
 * calls of its daemon and waits until MHD has taken the parked connections
 * back. A forked child does not serve: it forgets the socket and the
 * daemon, whose thread exists only in the parent.
 *
 * Every descriptor the server keeps is the profiler's (base/fds.h): made
 * with pp_fd_*, closed with pp_fd_close, libmicrohttpd's own closes inside
 * the own heap; a program that puts a descriptor of its own on one of
 * those numbers stops the server first (srv_fd_taken).
 *
 * The process tree (tree.h) is started with the server; a member that
 * takes the hub's place serves what this server served, through the
 * takeover hook registered here. The index shows the connections through
 * a row registered here.
 */
#define _GNU_SOURCE
#include "accept.h"
#include "auth.h"
#include "base/base.h"
#include "endpoints.h"
#include "heads.h"
#include "listen.h"
#include "mhd_adapter.h"
#include "pprof_mhd.h"
#include "sched.h"
#include "tls.h"
#include "tree.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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
    char error[PP_DETAIL_MAX]; /* why the last start failed: any reason whole (base/error.h) */
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1, .wake = {-1, -1}};

static pthread_once_t srv_once = PTHREAD_ONCE_INIT;

/* The child of a fork must not serve on the parent's socket, and the MHD
 * thread does not exist in it: close the socket, forget the daemon. */
static void srv_after_fork_child(void)
{
    pthread_mutex_init(&srv.mu, NULL); /* its descriptors are closed already (base/fds.h) */
    pp_heads_forget(srv.heads);        /* the parent's holder: its memory, none of its numbers */
    srv.heads = NULL;
    srv.wake[0] = srv.wake[1] = -1;
    srv.running = 0;
    srv.daemon = NULL;
    srv.listen_fd = -1;
    srv.port = 0;
    srv.prefix = NULL;
    srv.unix_path = NULL; /* the parent's: it removes it */
    pp_tls_free(&srv.tls);
    atomic_store(&srv.mhd_live, 0);
    atomic_store(&srv.stopping, 0);
    atomic_store(&srv.parked, 0);
}

/* The program puts a descriptor of its own on a number the server holds
 * (dup2 or dup3 onto it): serving stops first, so that nothing of the
 * server uses the number after the program's call (base/fds.h). */
static void srv_fd_taken(int fd)
{
    pp_say("libpprof: the program reuses descriptor %d, which the profiler's server held; serving stops\n", fd);
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
    pp_atfork(NULL, NULL, srv_after_fork_child);
    pp_index_row_add(write_index_row);
    pp_fd_on_taken(srv_fd_taken);
}

static void *srv_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    pp_own_thread_started(); /* libmicrohttpd's thread is the profiler's (dlopen: base/process.h) */
    const char *qm = strchr(uri, '?');
    return pp_mhd_req_new(qm ? qm + 1 : NULL, &srv.parked);
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
        r = atomic_load(&srv.stopping) ? MHD_NO : pp_mhd_queue_oom(c);
    else if (!atomic_load(&srv.stopping) || !pp_mhd_req_fresh(st))
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
        pp_say("libpprof: libmicrohttpd could not take a connection (%s); answered 503\n", strerror(err));
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
    pp_own_thread_started();
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
 * process has gone serves the same, at the port it had bound (tree_member.c). */
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
 * while its socket may still be closing. On the member's agent thread.
 * The same endpoint at the same address: no new "serving" line, only one
 * when it cannot be taken over. */
static int serve_taken_over(void)
{
    int rc = PPROF_EADDR;
    for (int i = 0; i < 40 && rc == PPROF_EADDR; i++)
        if ((rc = pprof_server_start(&taken)) == PPROF_EADDR)
            nanosleep(&(struct timespec){0, 50000000}, NULL);
    if (rc != 0)
        pp_say("libpprof: pid %d could not take over the endpoint %s: %s\n", (int)getpid(), taken.addr,
               pprof_last_error());
    return rc;
}

void pp_server_offer_takeover(const pprof_server_config *cfg)
{
    pthread_once(&srv_once, srv_init);
    pthread_mutex_lock(&srv.mu);
    if (!srv.running) {
        keep_for_takeover(cfg, cfg->addr, 0);
        pp_tree_offer_takeover(serve_taken_over);
    }
    pthread_mutex_unlock(&srv.mu);
}

/* The host exits: stop serving before its destructors run. */
static void stop_at_exit(void)
{
    const char *why = pp_sandboxed();
    pthread_mutex_lock(&srv.mu);
    int running = srv.running;
    pthread_mutex_unlock(&srv.mu);
    if (why && running) /* the process lives on: say why its endpoint goes */
        pp_say("libpprof: pid %d %s: profiling stops in it, and it serves the endpoint no more (a process of its "
               "tree takes it over, if it has one)\n",
               (int)getpid(), why);
    pprof_server_stop();
}

/* What a start has made so far, undone by start_undo when a later step
 * fails. */
typedef struct start {
    pprof_server_config cfg;   /* the caller's; then as the daemon keeps it */
    const char *addr;          /* where to serve */
    char *prefix, *token_file; /* our copies */
    pp_access access;
    int tls_loaded;            /* srv.tls is this start's */
    int fd, port;              /* the listening socket, -1 until made */
} start;

static void start_undo(start *s)
{
    if (s->fd >= 0)
        pp_fd_close(s->fd);
    if (s->tls_loaded)
        pp_tls_free(&srv.tls);
    free(s->prefix);
    free(s->token_file);
}

/* The address and prefix: cfg's, else the environment's, else the
 * defaults. 0 or a PPROF_E* code (with srv.error). */
static int start_config(const pprof_server_config *cfg, start *s)
{
    s->cfg = cfg ? *cfg : (pprof_server_config){0};
    s->addr = s->cfg.addr;
    if (!s->addr || !*s->addr) {
        s->addr = getenv("LIBPPROF_ADDR");
        if (!s->addr || !*s->addr)
            s->addr = "127.0.0.1:6060";
    }
    const char *p = s->cfg.prefix;
    size_t pl = p ? strlen(p) : 0;
    if (p && (pl == 0 || p[0] != '/' || p[pl - 1] != '/')) {
        snprintf(srv.error, sizeof srv.error, "prefix must start and end with '/'");
        return PPROF_EINVAL;
    }
    if (strcmp(s->addr, "off") == 0) {
        snprintf(srv.error, sizeof srv.error, "serving is turned off (LIBPPROF_ADDR=off)");
        return PPROF_EADDR;
    }
    if (p && !(s->prefix = strdup(p)))
        return PPROF_ENOMEM;
    return 0;
}

/* Who may use the endpoint: the token and the TLS files, read now (auth.h,
 * tls.h). 0 or a PPROF_E* code (with srv.error). */
static int start_access(start *s)
{
    pp_mhd_prepare(); /* the out-of-memory answer, made while memory is there */
    pp_access_resolve(&s->cfg, &s->access);
    if (pp_auth_load(&s->access, srv.error, sizeof srv.error) != 0 ||
        (s->access.token_file && !(s->token_file = strdup(s->access.token_file))))
        return srv.error[0] ? PPROF_EINVAL : PPROF_ENOMEM;
    s->tls_loaded = 1;
    if (pp_tls_load(&s->cfg, &srv.tls, srv.error, sizeof srv.error) != 0 ||
        (srv.tls.cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES &&
         snprintf(srv.error, sizeof srv.error, "this libmicrohttpd was built without TLS")))
        return PPROF_EINVAL;
    return 0;
}

/* The listening socket; an address other than loopback only with a token,
 * a client CA or auth_none. 0 or PPROF_EADDR (with srv.error). */
static int start_listener(start *s)
{
    s->fd = open_listener(s->addr, &s->port);
    if (s->fd < 0)
        return PPROF_EADDR;
    if (!s->token_file && !srv.tls.client_ca && !s->access.auth_none && !pp_listen_is_loopback(s->fd)) {
        char e[PP_ELIDE_MAX];
        snprintf(srv.error, sizeof srv.error,
                 "%s is not a loopback address and no token or client CA is set: set LIBPPROF_TOKEN_FILE "
                 "or LIBPPROF_TLS_CLIENT_CA, or LIBPPROF_AUTH=none to serve anyone who reaches it",
                 pp_elide(s->addr, e));
        return PPROF_EADDR;
    }
    return 0;
}

/* libmicrohttpd, and the thread that accepts for it. Its threads leave the
 * host's signals to the host, wear the profiler's own label set and use
 * its own heap. 0 or PPROF_ESYS (with srv.error). */
static int start_daemon(start *s)
{
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
    pp_mhd_require_client_cert(srv.tls.client_ca != NULL);
    s->cfg.addr = NULL;
    s->cfg.prefix = s->prefix;
    s->cfg.token_file = s->token_file;
    srv.cfg = s->cfg;
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
    srv.listen_fd = s->fd;
    int started = d && pp_fd_pipe(srv.wake) == 0;
    if (started && pthread_create(&srv.acceptor, NULL, acceptor_main, NULL) != 0) {
        pp_fd_close(srv.wake[0]);
        pp_fd_close(srv.wake[1]);
        started = 0;
    }
    pp_own_heap_leave();
    pp_own_labels_end(caller_set);
    pp_sigmask_exact(SIG_SETMASK, &old, NULL);
    if (started)
        return 0;
    snprintf(srv.error, sizeof srv.error, "cannot start the HTTP daemon");
    if (d) {
        pp_own_heap_enter();
        MHD_stop_daemon(d);
        pp_own_heap_leave();
    }
    pp_heads_free(srv.heads);
    srv.heads = NULL;
    srv.daemon = NULL;
    srv.listen_fd = -1;
    srv.wake[0] = srv.wake[1] = -1;
    srv.cfg.token_file = NULL;
    return PPROF_ESYS;
}

/* The daemon runs: what stop and a takeover need, and the process tree. */
static void start_serving(const pprof_server_config *cfg, start *s)
{
    srv.port = s->port;
    srv.prefix = s->prefix;
    srv.unix_path = strncmp(s->addr, "unix:", 5) == 0 ? strdup(s->addr + 5) : NULL;
    srv.running = 1;
    pp_shutdown_hook_add(stop_at_exit);
    if (cfg != &taken) /* a takeover keeps what it took over */
        keep_for_takeover(&s->cfg, s->addr, s->port);
    pp_tree_set_takeover(serve_taken_over);
    if (!s->cfg.no_tree && pp_tree_start() != 0) /* the server runs on; its tree is not joined */
        pp_say("libpprof: %s; forked children are not profiled through this endpoint\n", pprof_last_error());
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
    if (pp_mhd_load() != 0) { /* its reason recorded */
        pthread_mutex_unlock(&srv.mu);
        return PPROF_ESYS;
    }
    srv.error[0] = '\0';
    start s = {.fd = -1};
    int rc = start_config(cfg, &s);
    if (rc == 0)
        rc = start_access(&s);
    if (rc == 0)
        rc = start_listener(&s);
    if (rc == 0)
        rc = start_daemon(&s);
    if (rc == 0)
        start_serving(cfg, &s);
    else
        start_undo(&s);
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
