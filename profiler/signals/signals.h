/* signals.h: the interface of signals/, the process's profiling signal.
 *
 * One handler per process, on SIGPROF or the signal configured
 * (pprof_cpu_set_signal, LIBPPROF_SIGNAL), dispatches every delivery to
 * the user that claims it, as gperftools' profile handler does: the CPU
 * timers' ticks, a window end's and a catch-up's queued signals (cpu/),
 * the thread dumps' queued requests (threads/), and any sampler to come.
 * A user claims deliveries by their kind (a timer's, a queue's sent by
 * this process, the kernel's setitimer fallback) and the value they carry;
 * a delivery no user takes goes to the handler the host had installed
 * (dispatch.c). After a user took one, a wait it broke is entered again
 * (restart.c).
 *
 * Invariants: the handler never allocates, takes no lock and saves errno;
 * other signals but faults wait while it runs; a host that installs its
 * own handler through sigaction or signal gets it recorded behind ours
 * (pp_signal_host_action); one installed some other way (a raw system
 * call) is put behind ours again (pp_signal_reclaim).
 */
#ifndef PP_SIGNALS_H
#define PP_SIGNALS_H
#include <signal.h>
#include <stdint.h>

/* The kinds of delivery a user claims (a mask). */
enum {
    PP_SIG_TIMER = 1,  /* a POSIX timer's (SI_TIMER) */
    PP_SIG_QUEUED = 2, /* sent with pp_signal_queue by this process (SI_QUEUE) */
    PP_SIG_KERNEL = 4, /* the kernel's (SI_KERNEL: the setitimer fallback) */
};

/* Takes a delivery: returns 1 when it was the user's, 0 to let the next
 * user or the host's handler have it. async-signal-safe, like every
 * function that implements it. */
typedef int (*pp_signal_fn)(int sig, siginfo_t *si, void *uc);

/* Registers fn for deliveries of the kinds in `kinds` whose value
 * (si_value.sival_int) is `value` (any value for PP_SIG_KERNEL, which
 * carries none). Registering the same fn again does nothing. At most 8
 * users; returns 0 or PPROF_ELIMIT. Thread-safe. */
int pp_signal_register(int kinds, int value, pp_signal_fn fn);
/* Installs the handler (idempotent; the host's becomes the one that
 * deliveries no user takes go to). Returns 0 or a PPROF_E* code.
 * Thread-safe. */
int pp_signal_install(void);
/* Finds the C library's sigaction (the constructor calls it; so does
 * pp_signal_install). Not async-signal-safe (dlsym). */
void pp_signal_resolve(void);
/* The host's sigaction on the profiling signal once the handler is
 * installed (signal_hooks.c): `act` (when not NULL) becomes the host's
 * action, which deliveries no user takes go to, while libpprof's handler
 * stays; *old (when not NULL) gets the host's previous action, never
 * libpprof's. Returns 0, or -1 when the handler is not installed (the
 * call is the kernel's then). async-signal-safe */
int pp_signal_host_action(const struct sigaction *act, struct sigaction *old);
/* Puts the handler back if the host replaced it since, chaining to the
 * host's from then on. Thread-safe. */
void pp_signal_reclaim(void);
/* Around the program's exec (interpose/exec_hooks.c): a profiling signal
 * still pending at the exec (a dump's or a wall sample's sent an instant
 * before, a CPU timer's) would reach the new program with the default
 * action, which ends it (sshd's session child died so, a few times in a
 * thousand logins under dumps). exec_begin ignores the signal, which
 * discards the pending ones, and the new program starts with it ignored
 * (one that loads libpprof installs the handler again); exec_failed puts
 * the handler back. Thread-safe. */
void pp_signal_exec_begin(void);
void pp_signal_exec_failed(void);
/* Handlers put back so far. Thread-safe. */
uint64_t pp_signal_reclaimed(void);
/* The profiling signal's number. async-signal-safe */
int pp_signal_number(void);
/* Sends thread tid of this process the profiling signal, carrying
 * `value`: 0, or -1 with errno (ESRCH: the thread is gone). Thread-safe.
 * The kernel keeps one pending standard signal of a number per thread:
 * when the profiling signal is one (pp_signal_drops), a request sent
 * while one is pending (the thread's CPU timer signal waiting for it to
 * run) is dropped though 0 is returned, and a requester that waits for
 * an answer sends it again. A real-time one is queued every time. */
int pp_signal_queue(int tid, int value);
/* 1 when pp_signal_queue may drop a request (a standard signal), 0 for a
 * real-time one. async-signal-safe */
int pp_signal_drops(void);
/* Blocks the profiling signal in the calling thread; *old gets the mask
 * (when not NULL). Thread-safe. */
void pp_signal_block(sigset_t *old);
/* fork hooks (lifecycle.c): the dispatcher's lock is held across fork,
 * taken last (no other lock is taken under it). */
void pp_signal_fork_prepare(void);
void pp_signal_fork_parent(void);
void pp_signal_fork_child(void);
/* If the profiling signal `sig` interrupted a wait (restart.c), and no
 * signal of the program's with a handler is pending for the thread: inside
 * a wait libpprof wraps (pp_wait_depth > 0, interpose/wait_hooks.c) it
 * sets pp_wait_broken and leaves the EINTR to the wrapper, which enters
 * the wait again with the time that remains; otherwise it points the
 * interrupted context back at the wait, entered again with the same
 * arguments. The dispatcher calls it last, after a user took the
 * delivery. async-signal-safe */
void pp_signal_restart_wait(void *ucontext, int sig);
/* The calling thread's wrapped waits in progress (nested when a handler
 * of the program's waits), and whether the profiling signal broke the
 * innermost one since its wrapper last entered it (initial-exec TLS: the
 * handler reads them). */
extern __thread int pp_wait_depth, pp_wait_broken;
#endif
