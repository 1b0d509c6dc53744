/* endpoints.h: the endpoints under the prefix, and what they share.
 *
 *   handlers.c          the table, the one list of endpoints (routing,
 *                       the index, the flame-graph page and the process
 *                       tree read it), and the small endpoints: profile,
 *                       cmdline, symbol, trace
 *   handlers_heap.c, handlers_threads.c, handlers_contention.c,
 *   handlers_wall.c
 *                       the profile kinds' endpoints
 *   handlers_ui.c       the flame-graph page
 *   index.c             the index page, with the rows other parts of the
 *                       server register (pp_index_row_add)
 *   serve.c             answering with a profile: now, as a window the
 *                       scheduler ends, or as a godeltaprof delta
 *   page.c              the web/ pages' templates
 *
 * Routing (route.c) calls an endpoint's function through the table; the
 * endpoints answer through reply.h or defer to the scheduler (sched.h).
 * They call nothing above them: rows the transports and the tree add to
 * the index, and the hub's maps a member passes on, are registered
 * (scripts/check_layout.sh holds them to this header, request.h,
 * reply.h, query.h, sched.h and auth.h).
 */
#ifndef PP_ENDPOINTS_H
#define PP_ENDPOINTS_H

#include <stddef.h>

#include "pprof.h"
#include "reply.h"
#include "request.h"

/* --------------------------------------------------------------- table */

typedef int (*pp_handler_fn)(pp_req *q);

enum {
    PP_EP_POST = 1,    /* POST is allowed besides GET and HEAD */
    PP_EP_QUERY = 2,   /* parse seconds/debug/gc from the query first */
    PP_EP_PROFILE = 4, /* answers a profile: listed in the flame-graph page */
    PP_EP_MERGE = 8,   /* a hub merges its members' answers into its own */
    PP_EP_PAST = 16,   /* answers last=, from= and until= from the history */
};

typedef struct pp_endpoint {
    const char *name;   /* path under the prefix; "" is the index */
    const char *href;   /* link on the index page, NULL: not listed */
    const char *desc;   /* one line of HTML-safe text for the index page */
    unsigned flags;
    pp_handler_fn fn;
} pp_endpoint;

/* The endpoint named `name` (exact match; a custom profile's name gives
 * the custom endpoint), or NULL. */
const pp_endpoint *pp_endpoint_find(const char *name);
/* The table, in index order; *n gets its length. */
const pp_endpoint *pp_endpoints(size_t *n);
/* Whether a hub merges its members' answers for `name`: an endpoint
 * flagged PP_EP_MERGE, a custom profile, or a name that no endpoint has
 * and none reserves (a member may have a custom profile of that name). */
int pp_endpoint_merges(const char *name);
/* Whether `name` answers a profile (an endpoint flagged PP_EP_PROFILE or a
 * custom profile); calls each(name, arg) for every one when `each` is set. */
int pp_profile_names(const char *name, void (*each)(const char *name, void *arg), void *arg);

/* The endpoints' functions, for the table: the index page (index.c), the
 * flame-graph page (handlers_ui.c) and the profile kinds'. */
int pp_h_index(pp_req *q);
int pp_h_ui(pp_req *q);
int pp_h_heap(pp_req *q);         /* handlers_heap.c */
int pp_h_allocs(pp_req *q);
int pp_h_delta_heap(pp_req *q);
int pp_h_memory(pp_req *q);
int pp_h_goroutine(pp_req *q);    /* handlers_threads.c */
int pp_h_threadcreate(pp_req *q);
int pp_h_custom(pp_req *q);
int pp_h_mutex(pp_req *q);        /* handlers_contention.c */
int pp_h_block(pp_req *q);
int pp_h_delta_mutex(pp_req *q);
int pp_h_delta_block(pp_req *q);
int pp_h_wall(pp_req *q);         /* handlers_wall.c */
int pp_h_fgprof(pp_req *q);

/* --------------------------------------------------------------- index */

/* Adds a row to the index page's table of the profiler's state, written
 * by write(r) after the rows of the core's counters, in the order added.
 * Adding the same function again does nothing; at most 8. Returns 0, or
 * -1 when full. Thread-safe. */
int pp_index_row_add(void (*write)(pp_reply *r));
/* The hub's executable maps, for a member asked with hub_names=1 (a
 * malloc'd copy, or NULL): the tree registers its provider when it starts
 * (tree_member.c), so that the endpoints call nothing above them. */
void pp_serve_hub_maps_provider(char *(*maps)(void));

/* ------------------------------------------------------------- serving */

/* Writes p into r as o asks (else gzipped protobuf with `disposition`, or
 * fmt's text): the body and its Content-Type, or the error (400 for a
 * sample_index the profile does not have). Frees p. */
void pp_write_profile(pp_reply *r, pprof_profile *p, const pp_output *o, pprof_format fmt, const char *what,
                      const char *disposition);
/* Starts `rec` (a windowed recorder, taken over) and answers with its
 * profile `seconds` from now (capped at max_seconds), or an error naming
 * `what` ("CPU", "heap"). Returns 0. */
int pp_serve_window(pp_req *q, pprof_recorder *rec, int seconds, const char *what, const char *disposition);
/* A profile of the past (last=, from=, until=, min_span_ms=) from the
 * history of `kind` (handlers.c). Returns 0. */
int pp_serve_past(pp_req *q, pprof_history_kind kind);
/* The endpoint that answers each pprof_history_kind from the history
 * ("profile", "wall", "allocs", "mutex", "block"). */
#define PP_HISTORY_KINDS 5
extern const char *const pp_history_endpoints[PP_HISTORY_KINDS];
/* Writes `p` as the reply in `fmt` (protobuf with `disposition`, or text)
 * and frees it; an error names `what`. Returns 0. */
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

/* --------------------------------------------------------------- pages */

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

#endif /* PP_ENDPOINTS_H */
