/* route.h: routing of one request to its endpoint (route.c).
 *
 * pprof_http_handle (pprof.h) is the entry of every transport: the
 * built-in daemon, the MHD adapter, a host's own server, the tree's
 * member agent. Routing checks the prefix and the method, parses the
 * query for the endpoints that take one (query.h) and calls the
 * endpoint's function from the table (handlers.c). A hub's requests
 * first go through the tree's front, registered here.
 */
#ifndef PP_ROUTE_H
#define PP_ROUTE_H

#include "pprof.h"

/* Routes one request in this process (what pprof_http_handle does for a
 * process that answers for itself alone). Same contract as
 * pprof_http_handle. Thread-safe. */
int pp_route(const pprof_server_config *cfg, const pprof_http_request *req, pprof_http_done done, void *ctx,
             pprof_http_call **call);

/* The process tree's parameters, pid=N and tree=0|1, are taken out of
 * every query before the endpoints see it. A front, when one is set (the
 * tree's, tree_merge.c), then gets each request with them: pid 0 for
 * none, whole 0 for tree=0; it answers for the tree, or calls pp_route.
 * Without a front, this process answers alone. */
typedef int (*pp_route_front_fn)(const pprof_server_config *cfg, const pprof_http_request *req, int pid, int whole,
                                 pprof_http_done done, void *ctx, pprof_http_call **call);
void pp_route_set_front(pp_route_front_fn front);

#endif /* PP_ROUTE_H */
