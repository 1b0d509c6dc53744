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
#include "endpoints.h"
#include "pprof.h"
#include "query.h"
#include "reply.h"
#include "request.h"
#include "route.h"
#include "sched.h"
#include "tree.h"

/* ---------------------------------------------------------- process tree
 * (tree.c) */

/* Handles a request for the tree: fans it out to the members, runs it
 * here with `local`, and merges (or, with ?pid=N, forwards) the answers.
 * Without members, or for requests that do not merge, just `local`. */
int pp_tree_handle(const pprof_server_config *cfg, const pprof_http_request *req, pprof_http_done done, void *ctx,
                   pprof_http_call **call,
                   int (*local)(const pprof_server_config *, const pprof_http_request *, pprof_http_done, void *,
                                pprof_http_call **));


#endif /* PP_HTTP_INTERNAL_H */
