/* process.h: process-wide state of the core (process.c).
 *
 * A fork in progress (pp_fork_pending, read by lock.h's hook locks) and
 * what runs when the host exits: profiling stops, then each shutdown hook
 * runs once, in the order added, before the host's own destructors and
 * atexit handlers (lifecycle.c calls pp_shutdown_run from its exit
 * wrappers). The server adds its stop here, so the core never calls into
 * the server.
 */
#ifndef PP_PROCESS_H
#define PP_PROCESS_H

/* Adds a hook; adding the same function again does nothing. At most 8
 * hooks; returns 0, or -1 when full. Thread-safe. */
int pp_shutdown_hook_add(void (*fn)(void));
/* The first time it is called: marks the process as exiting, runs
 * `first` (profiling stops), then the hooks; later calls do nothing.
 * Thread-safe. */
void pp_shutdown_run(void (*first)(void));
/* Whether the process is exiting (pp_shutdown_run has begun): nothing new
 * starts. Thread-safe. */
int pp_shutting_down(void);
#endif
