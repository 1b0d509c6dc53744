/* http_internal.h: declarations shared by the files of server/.
 *
 *   http.c      pprof_http_handle: routing, query parsing, limits, error
 *               answers, the reply builder, and the scheduler thread that
 *               completes long requests (profiles of N seconds)
 *   handlers.c  the endpoint table: one small function per endpoint
 *   server.c    the libmicrohttpd daemon and the MHD adapter
 *   preload.c   the environment entry point
 *
 * A request flows: transport -> pprof_http_handle (http.c) -> an endpoint
 * function (handlers.c) -> pp_reply_send, which calls the transport's done
 * callback; or, for windowed profiles, pp_call_defer, after which the
 * scheduler thread calls done when the window ends.
 *
 * Everything here uses only include/pprof.h and libc, and of profiler/ only
 * error.h (a failing call records its code for pprof_last_error) and
 * process.h (the server stops when the host exits).
 */
#ifndef PP_HTTP_INTERNAL_H
#define PP_HTTP_INTERNAL_H

#include <signal.h>
#include <stdarg.h>

#include "base/base.h"
#include "pprof.h"

/* The built-in server's connections in libmicrohttpd, and the most it
 * may have (0 when it never ran). server.c */
void pp_server_connections(int *live, int *cap);

#define PP_DEFAULT_PREFIX "/debug/pprof/"
#define PP_DEFAULT_MAX_SECONDS 600
#define PP_DEFAULT_MAX_CONCURRENT 16
#define PP_DEFAULT_SECONDS 30
/* Largest request body the MHD adapter accepts (symbol POSTs); beyond: 413. */
#define PP_MAX_BODY (1u << 20)

/* ------------------------------------------------------------- requests */

/* The parameters we understand; everything else in a query is ignored. */
/* How a profile is written: ?format=proto|folded, and for folded
 * &sample_index= (a sample type's name or index) and &labels=1. */
typedef struct pp_output {
    int format;             /* 0: the endpoint's own (gzipped protobuf or text) */
    int labels;
    char sample_index[64];  /* "": the profile's default */
} pp_output;
#define PP_OUT_PROTO 1
#define PP_OUT_FOLDED 2

typedef struct pp_query {
    int has_seconds, seconds; /* validated: 1..max_seconds */
    pp_output out;
    int has_debug, debug;
    int has_gc, gc;
    pprof_symbolize symbolize; /* symbolize=full|functions|none; DEFAULT when absent */
} pp_query;

/* One request inside pprof_http_handle. */
typedef struct pp_req {
    pprof_server_config cfg; /* with the defaults filled in */
    const pprof_http_request *req;
    const char *name;        /* the path under the prefix */
    pp_query q;              /* parsed for endpoints with PP_EP_QUERY */
    pprof_http_done done;
    void *ctx;
    pprof_http_call **call;  /* may be NULL */
} pp_req;

/* --------------------------------------------------------------- replies */

/* A response under construction. Header values must outlive the reply
 * (string literals). */
typedef struct pp_reply {
    pprof_http_response resp;
    int failed;              /* an allocation failed: send a bare 500 */
} pp_reply;

/* Starts a reply with `status` and the header every response carries
 * (X-Content-Type-Options: nosniff). */
void pp_reply_init(pp_reply *r, int status);
void pp_reply_header(pp_reply *r, const char *name, const char *value);
void pp_reply_write(pp_reply *r, const void *data, size_t len);
void pp_reply_printf(pp_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A writer that appends to the reply's body (for pprof_profile_write). */
pprof_writer pp_reply_writer(pp_reply *r);
/* Turns `r` into an error answer: status, text/plain, X-Go-Pprof: 1 and
 * the formatted message as one line ending in "\n". */
void pp_reply_set_error(pp_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pp_reply_set_errorv(pp_reply *r, int status, const char *fmt, va_list ap);
/* Hands the reply to done(ctx, ...) and frees its body. */
void pp_reply_deliver(pp_reply *r, pprof_http_done done, void *ctx);
/* The same for the request's own done callback. Returns 0. */
int pp_reply_send(pp_req *q, pp_reply *r);
/* Builds and sends an error answer. Returns 0. */
int pp_reply_error(pp_req *q, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Why a call failed with rc: the calling thread's last failure, or rc's
 * own text when the failing call left none. */
const char *pp_why(int rc);

/* -------------------------------------------------------- deferred calls */

/* Builds the reply of a deferred call when its window ends: stops `rec`
 * and writes its profile, or an error. Runs on the scheduler thread. */
typedef void (*pp_finish_fn)(pprof_recorder *rec, const void *arg, const pp_output *o, pp_reply *out);

/* Writes p into r as o asks (else gzipped protobuf with `disposition`, or
 * fmt's text): the body and its Content-Type, or the error (400 for a
 * sample_index the profile does not have). Frees p. */
void pp_write_profile(pp_reply *r, pprof_profile *p, const pp_output *o, pprof_format fmt, const char *what,
                      const char *disposition);

/* Reserves one of cfg.max_concurrent places for a deferred call. Returns 0
 * or PPROF_ELIMIT. Every successful reserve is followed by exactly one
 * pp_call_unreserve or a successful pp_call_defer. */
int pp_call_reserve(const pp_req *q);
void pp_call_unreserve(void);
/* Completes the request `seconds` from now with finish(rec, arg, reply) on
 * the scheduler thread. Takes over the reservation and, on success, `rec`
 * (freed when the call ends). Returns 0 or PPROF_ENOMEM/PPROF_ESYS (then
 * the reservation is released and `rec` still belongs to the caller). */
int pp_call_defer(pp_req *q, pprof_recorder *rec, int seconds, pp_finish_fn finish, const void *arg);

/* Peer watching for transports that park a connection while a call is
 * pending (a suspended MHD connection is not polled): the scheduler checks
 * `fd` every ~250 ms and, when the peer has closed it, cancels the call and
 * runs closed(arg) on the scheduler thread instead of done. `owner` groups
 * calls for pp_http_cancel_owner. Returns 0, or PPROF_ESTATE when the call
 * is no longer pending (done is running or has run). The caller must know
 * the call is still alive (done has not finished). */
int pp_http_watch(pprof_http_call *call, int fd, void (*closed)(void *arg), void *arg,
                  const void *owner);
/* Cancels every pending call of `owner`, running each one's closed hook,
 * and waits for owned calls whose done or closed callback is running. */
void pp_http_cancel_owner(const void *owner);
/* Finishes every pending call now, on the calling thread, each with what
 * its window holds so far (a process tree's member that is exiting), then
 * waits up to wait_ns for calls other threads are finishing. */
void pp_http_finish_all_now(int64_t wait_ns);

/* ---------------------------------------------------------- process tree
 * (tree.c) */

/* Makes this process the hub of its tree (unless LIBPPROF_TREE=0): a Unix
 * socket its forked children join. Returns 0 or PPROF_ESYS. */
int pp_tree_start(void);
/* Sets what a member that takes the hub's place calls to serve the
 * endpoint where the old hub served (server.c); 0 or a PPROF_E* code. */
void pp_tree_set_takeover(int (*serve)(void));
/* A process started by exec with the preload inherited: joins the hub
 * among its ancestors (up to 16 up), if there is one. 0 when it joined
 * (it then serves nothing itself), -1 when not. */
int pp_tree_join_ancestor(void);
/* Handles a request for the tree: fans it out to the members, runs it
 * here with `local`, and merges (or, with ?pid=N, forwards) the answers.
 * Without members, or for requests that do not merge, just `local`. */
int pp_tree_handle(const pprof_server_config *cfg, const pprof_http_request *req, pprof_http_done done, void *ctx,
                   pprof_http_call **call,
                   int (*local)(const pprof_server_config *, const pprof_http_request *, pprof_http_done, void *,
                                pprof_http_call **));
/* The index's row about the tree (nothing when this process is no hub). */
void pp_tree_write_index(pp_reply *r);

/* Blocks the asynchronous signals a host handles itself (SIGINT, SIGTERM,
 * ...) in the calling thread, saving the old mask: threads created while
 * they are blocked inherit the mask and leave those signals to the host. */
void pp_block_host_signals(sigset_t *old);

/* ------------------------------------------------------------- endpoints */

/* Starts `rec` (a windowed recorder, taken over) and answers with its
 * profile `seconds` from now (capped at max_seconds), or an error naming
 * `what` ("CPU", "heap"). Returns 0. (handlers.c) */
int pp_serve_window(pp_req *q, pprof_recorder *rec, int seconds, const char *what, const char *disposition);
/* Writes `p` as the reply in `fmt` (protobuf with `disposition`, or text)
 * and frees it; an error names `what`. Returns 0. (handlers.c) */
int pp_send_profile(pp_req *q, pprof_profile *p, pprof_format fmt, const char *what, const char *disposition);
/* Answers with `rec` (taken over): with seconds=N a window of it (see
 * pp_serve_window), else its state now (write_to) in `fmt`. Returns 0. */
int pp_serve_recorder(pp_req *q, pprof_recorder *rec, pprof_format fmt, const char *what, const char *disposition,
                      const char *delta_disposition);
/* godeltaprof's stateful endpoints: *state (made by `make` on the first
 * call, a recorder whose first window starts at process start) is
 * snapshotted, so each call answers the change since the previous one.
 * One lock serves every state. Returns 0. */
int pp_serve_delta(pp_req *q, pprof_recorder **state, int (*make)(pprof_recorder **out), const char *what,
                   const char *disposition);
/* handlers_heap.c */
int pp_h_heap(pp_req *q);
int pp_h_allocs(pp_req *q);
int pp_h_delta_heap(pp_req *q);
/* handlers_threads.c */
int pp_h_goroutine(pp_req *q);
int pp_h_threadcreate(pp_req *q);
int pp_h_custom(pp_req *q);
/* handlers_contention.c */
int pp_h_mutex(pp_req *q);
int pp_h_block(pp_req *q);
int pp_h_delta_mutex(pp_req *q);
int pp_h_delta_block(pp_req *q);

typedef int (*pp_handler_fn)(pp_req *q);

enum {
    PP_EP_POST = 1,  /* POST is allowed besides GET and HEAD */
    PP_EP_QUERY = 2, /* parse seconds/debug/gc from the query first */
    PP_EP_PROFILE = 4, /* answers a profile: listed in the flame-graph page */
};

typedef struct pp_endpoint {
    const char *name;   /* path under the prefix; "" is the index */
    const char *href;   /* link on the index page, NULL: not listed */
    const char *desc;   /* one line of HTML-safe text for the index page */
    unsigned flags;
    pp_handler_fn fn;
} pp_endpoint;

/* The endpoint named `name` (exact match), or NULL. */
const pp_endpoint *pp_endpoint_find(const char *name);

/* Whether `name` answers a profile (an endpoint flagged PP_EP_PROFILE or a
 * custom profile); calls each(name, arg) for every one when `each` is set. */
int pp_profile_names(const char *name, void (*each)(const char *name, void *arg), void *arg);

/* One {{NAME}} placeholder of a page and what writes it. */
typedef struct pp_slot {
    const char *name;
    void (*write)(pp_reply *r, const pp_req *q);
} pp_slot;

/* Writes the page text[0..len) with its placeholders filled in; unknown
 * ones are written as they are. */
void pp_write_template(pp_reply *r, const unsigned char *text, size_t len, const pp_slot *slots, size_t nslots,
                       const pp_req *q);
void pp_write_html_escaped(pp_reply *r, const char *s);
/* The {{PREFIX}} slot: the request's prefix, HTML-escaped. */
void pp_write_prefix(pp_reply *r, const pp_req *q);

/* A decimal integer within +-INT32_MAX filling s[0..n): 0 and *v, or -1. */
int pp_parse_int(const char *s, size_t n, long long *v);

int pp_h_ui(pp_req *q);

#endif /* PP_HTTP_INTERNAL_H */
