/* lifecycle.c: start-up, fork and exit of the profiler core.
 *
 * The constructor prepares everything that must not happen later inside a
 * signal handler (the unwind table registrations, the thread-exit key) and
 * reads the environment. Fork handlers take every
 * profiler lock around fork with the profiling signal blocked (frequent
 * signals can make fork restart forever) and reset the child, whose timers
 * did not survive. pp_fork_pending is raised before the first lock is
 * taken and lowered after the last is released: while it is up, hooks in
 * other threads never wait for a profiler lock (lock.h), since those
 * threads may hold a mutex that another library's prepare handler, run
 * after ours, waits for. At exit, profiling stops and the shutdown hooks
 * (process.h: the server's stop) run before the host's own destructors
 * and atexit handlers: exit() is wrapped, and so is
 * __libc_start_main, whose wrapped main stops everything when main returns
 * (libc then calls exit internally, where no wrapper sees it).
 */
#define _GNU_SOURCE
#include "hooks.h"
#include "recorder/recorder.h"
#include "cpu/cpu.h"
#include "signals/signals.h"
#include "contention/contention.h"
#include "base/base.h"
#include "heap/heap.h"
#include "memory/memory.h"
#include "model/model.h"
#include "labels/labels.h"
#include "otel/otel.h"
#include "threads/threads.h"
#include "unwind/unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Profiling stops: each thread's CPU time since its last sample is
 * weighed first (a window still open, a tree's member answering as it
 * exits, has it: it was 5 to 13 ms a process for postfix's services),
 * then the timers are deleted. */
static void stop_cpu(void)
{
    pp_cpu_flush();
    pp_cpu_disable();
}

/* Profiling stops first, then the shutdown hooks run (the server's stop). */
static void shutdown_all(void)
{
    pp_shutdown_run(stop_cpu);
}

/* The process is about to narrow what its threads may do (a seccomp
 * filter or strict mode: the calling thread, and every thread with
 * SECCOMP_FILTER_FLAG_TSYNC, is killed by a system call the filter does
 * not list). Before the filter is in place, profiling stops as at exit: the
 * CPU timers are deleted, heap sampling ends, a member's calls in flight
 * answer with what they hold and it leaves its tree saying why (the
 * tree's index shows it), a serving process stops serving. From then on
 * the profiling signal's handler makes no system call (signals/dispatch.c).
 * A call that then fails leaves profiling stopped. */
void pp_sandbox_enter(const char *why)
{
    if (pp_sandboxed())
        return;
    pp_narrow_run(); /* a member not yet connected connects, to say why it leaves */
    pp_sandbox_set(why);
    pp_collector_release();
    pp_heap_stop_sampling();
    shutdown_all();
}

/* Lock order: collector, CPU thread registry, contention tables, label
 * cap, thread registry, heap, own heap, signal dispatcher. The tables
 * that hooks write (contention, label cap, heap) are never waited for
 * while pp_fork_pending is up; the others are taken by thread start and
 * exit, the collector and the API, none of which runs the program's code
 * while waiting. The unwinder's object list is not held at all
 * (unwind.c). */
static void fork_prepare(void)
{
    atomic_fetch_add(&pp_fork_pending, 1);
    pp_collector_fork_prepare();
    pp_cpu_fork_prepare();
    pp_contention_fork_prepare();
    pp_labels_cap_fork_prepare();
    pp_threads_fork_prepare();
    pp_heap_fork_prepare();
    pp_memory_fork_prepare();
    pp_model_fork_prepare();
    pp_own_heap_fork_prepare();
    pp_signal_fork_prepare();
}

static void fork_parent(void)
{
    pp_signal_fork_parent();
    pp_own_heap_fork_parent();
    pp_model_fork_parent();
    pp_memory_fork_parent();
    pp_heap_fork_parent();
    pp_threads_fork_parent();
    pp_labels_cap_fork_parent();
    pp_contention_fork_parent();
    pp_cpu_fork_parent();
    pp_collector_fork_parent();
    atomic_fetch_sub(&pp_fork_pending, 1);
}

static void fork_child(void)
{
    pp_fd_fork_child(); /* first: no handler may meet the parent's descriptors */
    pp_own_heap_fork_child();
    pp_heap_fork_child();
    pp_heap_sample_fork_child(); /* after the table's: its guard is down */
    pp_memory_fork_child();
    pp_model_fork_child();
    pp_threads_fork_child();
    pp_labels_cap_fork_child();
    pp_contention_fork_child();
    pp_thread_dump_fork_child();
    pp_signal_fork_child();
    pp_cpu_fork_child();
    pp_unwind_fork_child();
    pp_collector_fork_child();
    pp_otel_fork_child();
    atomic_store(&pp_fork_pending, 0);
    pp_history_fork_child(); /* last: it may start a thread */
}

__attribute__((constructor(101))) static void pp_init(void)
{
    pp_mark_start();
    pp_env_init();
    pp_otel_init();
    int signo = pp_env_int("LIBPPROF_SIGNAL", PP_DEFAULT_SIGNAL, 1, SIGRTMAX);
    if (signo != PP_DEFAULT_SIGNAL && pprof_cpu_set_signal(signo) != 0)
        pp_say("libpprof: ignoring LIBPPROF_SIGNAL=%d: %s; using %d (SIGSTKFLT)\n", signo, pprof_last_error(),
               PP_DEFAULT_SIGNAL);
    pp_thread_hooks_init();
    pp_fd_hooks_init();
    pp_make_hooks_init();
    pp_signal_hooks_init();
    pp_signal_hooks_open_inherited();
    pp_wait_hooks_init();
    pp_sock_hooks_init();
    pp_syscall_hook_init();
    pp_mmap_hooks_init();
    pp_limit_hooks_init();
    pp_mlock_hooks_init();
    pp_threads_init();
    pp_threads_register_main();
    pp_unwind_init();
    pp_labels_cap_init();
    pp_own_heap_init();
    pp_heap_init();
    pp_contention_init();
    pp_cpu_track_thread(); /* the main thread's state, from the own heap */
    pp_atfork(fork_prepare, fork_parent, fork_child);
    pp_no_threads_hook_add(pp_collector_keep);
    pp_history_init();
}

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static main_fn host_main;

/* Runs the host's main; its own frame is left out of every stack. */
PP_HIDDEN_FRAME static int main_with_exit_hook(int argc, char **argv, char **envp)
{
    atexit(shutdown_all); /* for exits this file does not see */
    int status = host_main(argc, argv, envp);
    shutdown_all(); /* main returned: before any atexit handler runs */
    return status;
}

typedef void (*exit_fn)(int);

/* exit() from the host: stop first, then the atexit handlers run. */
__attribute__((visibility("default"), noreturn)) void exit(int status)
{
    static exit_fn real;
    if (!real)
        real = (exit_fn)pp_next_symbol("exit", NULL);
    shutdown_all();
    real(status);
    __builtin_unreachable();
}

/* glibc's entry from _start, declared by no header */
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end);
__attribute__((visibility("default"))) int __libc_start_main(main_fn main, int argc, char **argv,
                                                             void (*init)(void), void (*fini)(void),
                                                             void (*rtld_fini)(void), void *stack_end)
{
    start_main_fn real = (start_main_fn)pp_next_symbol("__libc_start_main", NULL);
    host_main = main;
    return real(main_with_exit_hook, argc, argv, init, fini, rtld_fini, stack_end);
}
