/* pprof_mhd.h: mounting libpprof's endpoints on a service's own
 * libmicrohttpd daemon.
 *
 * A service that already runs libmicrohttpd serves /debug/pprof/ from its
 * own daemon instead of starting libpprof's (pprof_server_start): its
 * access handler passes every URL for which pprof_http_serves (pprof.h)
 * says yes to pprof_mhd_handle.
 * The rest of the API is in pprof.h.
 */
#ifndef PPROF_MHD_H
#define PPROF_MHD_H

#include "pprof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adapter for a service's own libmicrohttpd daemon, in any of its modes.
 * Call it from the daemon's access handler for every URL
 * pprof_http_serves(cfg, url) accepts (under the prefix, and the prefix
 * without its slash, which answers 301), passing the handler's arguments
 * through; it returns an MHD_Result. A long profile suspends its
 * connection and resumes it when done (the daemon must be started with
 * MHD_ALLOW_SUSPEND_RESUME), or, on a daemon with
 * MHD_USE_THREAD_PER_CONNECTION (which cannot suspend one), waits on that
 * connection's own thread. On a daemon with neither, a request that would
 * wait is answered 501 at once, with a line saying so. Thread-safe:
 * libmicrohttpd calls it from its threads, one call at a time per
 * connection. */
struct MHD_Connection;
PPROF_API int pprof_mhd_handle(const pprof_server_config *cfg, struct MHD_Connection *connection,
                               const char *url, const char *method,
                               const char *upload_data, size_t *upload_data_size,
                               void **con_cls);
/* Companion for MHD_OPTION_NOTIFY_COMPLETED: frees per-request state and
 * cancels a profile whose connection closed. Pass `con_cls` through.
 * Thread-safe, from any of the daemon's threads, once per connection;
 * when a library thread is handing the request its answer at that moment,
 * it waits for that to end. */
PPROF_API void pprof_mhd_completed(void **con_cls);
/* Ends the profiles still pending on `daemon` and hands their connections
 * back to it. libmicrohttpd refuses to stop a daemon with suspended
 * connections: call this right before MHD_stop_daemon (after
 * MHD_quiesce_daemon, so that no new request starts). Thread-safe. */
struct MHD_Daemon;
PPROF_API void pprof_mhd_release(struct MHD_Daemon *daemon);

#ifdef __cplusplus
}
#endif
#endif /* PPROF_MHD_H */
