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
#include "query.h"
#include "reply.h"
#include "request.h"
#include "route.h"
#include "sched.h"

/* The built-in server's connections in libmicrohttpd, and the most it
 * may have (0 when it never ran). server.c */
void pp_server_connections(int *live, int *cap);

/* Largest request body the MHD adapter accepts (symbol POSTs); beyond: 413. */
#define PP_MAX_BODY (1u << 20)

/* Writes p into r as o asks (else gzipped protobuf with `disposition`, or
 * fmt's text): the body and its Content-Type, or the error (400 for a
 * sample_index the profile does not have). Frees p. */
void pp_write_profile(pp_reply *r, pprof_profile *p, const pp_output *o, pprof_format fmt, const char *what,
                      const char *disposition);

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


int pp_h_ui(pp_req *q);

#endif /* PP_HTTP_INTERNAL_H */
