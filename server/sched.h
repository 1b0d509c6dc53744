/* sched.h: deferred calls and the scheduler thread that ends them
 * (sched.c).
 *
 * An endpoint that answers with a window of N seconds (profile?seconds=N)
 * reserves a place, starts its recorder and defers the request here; the
 * scheduler builds the answer when the window ends and hands it to the
 * request's done callback. Transports that park a connection meanwhile
 * register its socket, so that a client that leaves ends its profile
 * early. Below the endpoints: it calls nothing of server/ but reply.c.
 */
#ifndef PP_SCHED_H
#define PP_SCHED_H

#include <signal.h>
#include <stdint.h>

#include "reply.h"
#include "request.h"

/* Builds the reply of a deferred call when its window ends: stops `rec`
 * and writes its profile, or an error. Runs on a scheduler thread. */
typedef void (*pp_finish_fn)(pprof_recorder *rec, const void *arg, const pp_output *o, pp_reply *out);

/* Reserves one of cfg.max_concurrent places for a deferred call. Returns 0
 * or PPROF_ELIMIT. Every successful reserve is followed by exactly one
 * pp_call_unreserve or a successful pp_call_defer. */
int pp_call_reserve(const pp_req *q);
/* Starts the scheduler thread now (it stays), for a process about to
 * forbid new threads (base/process.h: no-threads hooks); its due calls
 * then finish on it. Thread-safe. */
void pp_call_keep_thread(void);
/* The scheduler thread ends once no call is left (a process entering a
 * sandbox, where no thread of libpprof's may stay behind); a later call
 * starts it again. Thread-safe. */
void pp_call_release_thread(void);
void pp_call_unreserve(void);
/* Completes the request `seconds` from now (q's window_ms when shorter)
 * with finish(rec, arg, reply) on the scheduler thread. Takes over the reservation and, on success, `rec`
 * (freed when the call ends). Returns 0 or PPROF_ENOMEM/PPROF_ESYS (then
 * the reservation is released and `rec` still belongs to the caller). */
int pp_call_defer(pp_req *q, pprof_recorder *rec, int seconds, pp_finish_fn finish, const void *arg);

/* Peer watching for transports that park a connection while a call is
 * pending (a suspended MHD connection is not polled): the scheduler checks
 * `fd` every ~250 ms and, when the peer has closed it, cancels the call and
 * runs closed(arg) on the scheduler thread instead of done. `owner` groups
 * calls for pp_call_cancel_owner. Returns 0, or PPROF_ESTATE when the call
 * is no longer pending (done is running or has run). The caller must know
 * the call is still alive (done has not finished). */
int pp_call_watch(pprof_http_call *call, int fd, void (*closed)(void *arg), void *arg, const void *owner);
/* Cancels every pending call of `owner`, running each one's closed hook,
 * and waits for owned calls whose done or closed callback is running. */
void pp_call_cancel_owner(const void *owner);
/* Finishes every pending call now, on the calling thread, each with what
 * its window holds so far (a process tree's member that is exiting), then
 * waits up to wait_ns for calls other threads are finishing. */
void pp_call_finish_all_now(int64_t wait_ns);

/* Blocks the asynchronous signals a host handles itself (SIGINT, SIGTERM,
 * ...) in the calling thread, saving the old mask: threads created while
 * they are blocked inherit the mask and leave those signals to the host
 * (the scheduler's, the built-in server's). */
void pp_block_host_signals(sigset_t *old);

#endif /* PP_SCHED_H */
