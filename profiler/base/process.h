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
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

/* Adds a hook; adding the same function again does nothing. At most 8
 * hooks; returns 0, or -1 when full. Thread-safe. */
int pp_shutdown_hook_add(void (*fn)(void));
/* Hooks run before the process narrows what it may do (a lower
 * RLIMIT_NOFILE, a seccomp sandbox: interpose/), while it still can: the
 * server's tree member connects to its hub now. Same rules as the
 * shutdown hooks; pp_narrow_run runs them every time. Thread-safe. */
int pp_narrow_hook_add(void (*fn)(void));
void pp_narrow_run(void);
/* Hooks run before the process forbids itself new threads (RLIMIT_NPROC
 * set to 0: interpose/limit_hooks.c): each starts now, and keeps, a
 * thread that the profiler would otherwise start when asked (the CPU
 * collector, the server's scheduler). Same rules as the shutdown hooks.
 * Thread-safe. */
int pp_no_threads_hook_add(void (*fn)(void));
void pp_no_threads_run(void);
/* The hook told when this process is about to exec: `why` is "" when the
 * program will load libpprof again, else a clause saying what it runs and
 * why it will run without; NULL when that exec failed and the process
 * goes on. The server's tree member tells its hub (interpose/
 * exec_hooks.c). One hook; pp_exec_note calls it, if set. Thread-safe. */
void pp_exec_hook_set(void (*fn)(const char *why));
void pp_exec_note(const char *why);
/* The first time it is called: marks the process as exiting, runs
 * `first` (profiling stops), then the hooks; later calls do nothing.
 * Thread-safe. */
void pp_shutdown_run(void (*first)(void));
/* Marks the profiler's start (its constructor, when heap sampling
 * begins); pp_start_ns gives it on the monotonic (0) or real-time (1)
 * clock, or now on that clock when it was never marked. Thread-safe. */
void pp_mark_start(void);
int64_t pp_start_ns(int realtime);
/* Initializes *c for waits with deadlines on CLOCK_MONOTONIC (as
 * pp_now_ns(CLOCK_MONOTONIC) counts them). */
void pp_cond_init_monotonic(pthread_cond_t *c);
/* Clock c now, in nanoseconds. async-signal-safe */
int64_t pp_now_ns(clockid_t c);
/* Thread tid's CPU clock, in the kernel's encoding (~tid << 3 | SCHED |
 * PERTHREAD). async-signal-safe */
static inline clockid_t pp_thread_cpu_clock(int tid)
{
    return (clockid_t)((~(unsigned)tid) << 3) | 6;
}
/* 1 if thread tid's CPU clock stands still between two reads in a row
 * (ready to run or waiting, not on a CPU), 0 if it moves or cannot be
 * read; *ns (when not NULL) gets the first read. Thread-safe. */
int pp_thread_off_cpu(int tid, uint64_t *ns);
/* The profiling signal by default: SIGSTKFLT, which the kernel never
 * raises on Linux and no program is known to use (SIGPROF belongs to
 * programs that time themselves: PHP's max_execution_time, Python's
 * signal.setitimer, gperftools). */
#define PP_DEFAULT_SIGNAL SIGSTKFLT
/* The profiling signal's number, kept here for signals/ (pprof_cpu_set_signal
 * sets it, fixed once the handler is installed; PP_DEFAULT_SIGNAL until
 * then) and for the masks of the profiler's threads. async-signal-safe */
int pp_profiling_signal(void);
void pp_profiling_signal_set(int sig);
/* The mask the profiler's own threads run with: every asynchronous signal
 * blocked (the host's signals stay the host's) but the profiling signal,
 * whose handler answers the profiler's own requests (samples, stacks,
 * credentials: threads/creds.c). Async-signal-safe. */
void pp_own_thread_mask(sigset_t *set);
/* Starts fn(arg) on a detached thread of the profiler's own (its
 * allocations come from the own heap) with pp_own_thread_mask's mask;
 * *t (when not NULL) gets the thread, which calls pp_own_thread_started
 * first. Returns 0 or PPROF_ESYS (recorded, with the reason). Thread-safe. */
int pp_spawn_detached(void *(*fn)(void *), void *arg, pthread_t *t);
/* Whether this process (or an ancestor it was forked from) was made by a
 * clone through syscall() (syscall_hook.c), which it then stays out of
 * the process tree for: the C library did not reset its list of threads
 * there, and a thread started in it (a member's agent) left a descriptor
 * that made vsftpd's next setgroups wait forever; from a new network or
 * PID namespace, the hub could not be reached anyway (an abstract socket
 * is per network namespace, a pid per PID namespace). async-signal-safe */
int pp_process_isolated(void);
void pp_process_isolated_set(void);
/* The libraries the profiler loaded with dlopen (libmicrohttpd, its TLS
 * library, libcurl), by soname: pp_own_object_add keeps `soname` (a
 * static string; at most 8), pp_own_object(i) gives the i-th or NULL.
 * mlockall leaves them, and what only they need, unlocked. Thread-safe. */
void pp_own_object_add(const char *soname);
const char *pp_own_object(int i);
/* Whether the process has capability `cap` (CAP_*) in its effective set;
 * 1 when it cannot be read (the kernel then decides). async-signal-safe */
int pp_capable(int cap);
/* Registers fork handlers with pthread_atfork and keeps them (at most 16;
 * 0 or -1), so that a fork the C library does not make (a clone through
 * syscall(): vsftpd's sessions) runs them too: pp_atfork_run(PP_FORK_PREPARE)
 * runs the prepare handlers, the last registered first, and
 * PP_FORK_PARENT or PP_FORK_CHILD the others in their order. Not for
 * signal handlers. */
enum { PP_FORK_PREPARE, PP_FORK_PARENT, PP_FORK_CHILD };
int pp_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
void pp_atfork_run(int stage);
/* Said by each thread of the profiler's at its start (and by the server's
 * libmicrohttpd thread at its first connection): the function that
 * threads/ sets (pp_own_thread_hook_set) registers it as the profiler's
 * when the pthread_create override did not (libpprof loaded with
 * dlopen), so that thread dumps leave it out. Thread-safe. */
void pp_own_thread_started(void);
void pp_own_thread_hook_set(void (*fn)(void));
/* pthread_sigmask exactly as asked: the interposed one (interpose/
 * signal_hooks.c) keeps the profiling signal open when a program blocks
 * signals wholesale, and passes calls made while pp_sigmask_exact_depth
 * is up through unchanged. Every mask change of the profiler's goes
 * through it (a restore of a saved mask too), so none depends on what the
 * override would make of it. Thread-safe; async-signal-safe. */
int pp_sigmask_exact(int how, const sigset_t *set, sigset_t *old);
extern __thread int pp_sigmask_exact_depth;
/* Whether the process is exiting (pp_shutdown_run has begun): nothing new
 * starts. Thread-safe. */
int pp_shutting_down(void);
/* The process has narrowed what its threads may do (a seccomp filter or
 * strict mode, interpose/lifecycle.c): from then on the profiling
 * signal's handler makes no system call, and profiling has stopped.
 * pp_sandbox_set keeps `why` (a static string) once; pp_sandboxed gives
 * it, or NULL. async-signal-safe */
void pp_sandbox_set(const char *why);
const char *pp_sandboxed(void);

/* The profiler's own heap (heap/own_heap.c registers it, so base/ calls no
 * other folder): between pp_own_heap_enter and the matching leave, the
 * calling thread's allocations are the profiler's own and come from it
 * (nested calls count). Without a registered heap they do nothing. */
typedef struct pp_own_heap_ops {
    void (*enter)(void);
    void (*leave)(void);
    int (*active)(void);
} pp_own_heap_ops;
void pp_own_heap_register(const pp_own_heap_ops *ops);
void pp_own_heap_enter(void);
void pp_own_heap_leave(void);
/* Whether the calling thread works for the profiler now (between
 * pp_own_heap_enter and leave, or all along on the profiler's threads):
 * the one flag the overrides read to tell the profiler's calls from the
 * program's. Its allocations come from the profiler's own heap, its closes
 * may close the profiler's descriptors (fds.h), and a thread it starts is
 * the profiler's (threads/). */
int pp_own_work(void);

/* The library's encoder of gzipped pprof, which proto/ registers when the
 * library loads: the core writes profiles to files through it (the
 * history's dumps) with no protobuf of its own. pp_write_gzip_profile
 * gives 0, the encoder's PPROF_E* code, or PPROF_ENOTSUP when none is
 * registered (a static link without the encoder). */
typedef int (*pp_gzip_encoder)(const struct pprof_profile *p, int fd);
void pp_gzip_encoder_register(pp_gzip_encoder fn);
int pp_write_gzip_profile(const struct pprof_profile *p, int fd);
#endif
