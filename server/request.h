/* request.h: a request as routing hands it to an endpoint.
 *
 * The type every layer below the transports knows: routing fills it
 * (route.c), endpoints answer it (handlers*.c) through reply.h, or defer
 * it to the scheduler (sched.h), which keeps what it needs of it.
 */
#ifndef PP_REQUEST_H
#define PP_REQUEST_H

#include "pprof.h"
#include "query.h"

#define PP_DEFAULT_PREFIX "/debug/pprof/"
#define PP_DEFAULT_MAX_SECONDS 600
#define PP_DEFAULT_MAX_CONCURRENT 16
#define PP_DEFAULT_SECONDS 30

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

#endif /* PP_REQUEST_H */
