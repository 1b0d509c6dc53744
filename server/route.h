/* route.h: routing of one request to its endpoint (route.c).
 *
 * pprof_http_handle (pprof.h) is the entry of every transport: the
 * built-in daemon, the MHD adapter, a host's own server, the tree's
 * member agent. Routing checks the prefix and the method, parses the
 * query for the endpoints that take one (query.h) and calls the
 * endpoint's function from the table (handlers.c).
 */
#ifndef PP_ROUTE_H
#define PP_ROUTE_H

#include "pprof.h"

/* Routes one request in this process (what pprof_http_handle does for a
 * process that answers for itself alone). Same contract as
 * pprof_http_handle. Thread-safe. */
int pp_route(const pprof_server_config *cfg, const pprof_http_request *req, pprof_http_done done, void *ctx,
             pprof_http_call **call);

#endif /* PP_ROUTE_H */
