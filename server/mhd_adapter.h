/* mhd_adapter.h: what the built-in daemon (daemon.c) uses of the
 * libmicrohttpd adapter (mhd_adapter.c) besides pprof_mhd.h.
 *
 * The built-in daemon runs the adapter on a libmicrohttpd daemon of its
 * own: it makes each request's state from MHD's URI log callback (so the
 * raw query is kept), counts the connections the adapter parks, and asks
 * for client certificates when it has a client CA.
 */
#ifndef PP_MHD_ADAPTER_H
#define PP_MHD_ADAPTER_H

#include "mhd_lib.h" /* libmicrohttpd, loaded when first needed */

/* Largest request body the adapter accepts (symbol POSTs); beyond: 413. */
#define PP_MAX_BODY (1u << 20)

typedef struct pp_mhd_req pp_mhd_req;

/* A request's state, made before its access check: `query` the raw query
 * (NULL: none), `parked` the daemon's count of suspended connections (its
 * connections close after one request). NULL when out of memory. */
pp_mhd_req *pp_mhd_req_new(const char *query, _Atomic int *parked);
/* Whether the adapter has not looked at the request yet. */
int pp_mhd_req_fresh(const pp_mhd_req *st);
/* Makes the shared out-of-memory answer now, while memory is there. */
void pp_mhd_prepare(void);
/* Queues the shared out-of-memory answer (503). */
enum MHD_Result pp_mhd_queue_oom(struct MHD_Connection *c);
/* Whether every request on a built-in daemon's connection needs a client
 * certificate the daemon's client CA verifies (tls.h). Thread-safe. */
void pp_mhd_require_client_cert(int on);

#endif /* PP_MHD_ADAPTER_H */
