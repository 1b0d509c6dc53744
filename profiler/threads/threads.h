/* threads.h: the interface of threads/, threads and their stacks.
 *
 * With interpose/'s pthread_create wrapper, every new thread arms its CPU timer,
 * takes its creator's labels and is entered in a registry with the stack
 * that created it (threadcreate); a thread-exit key undoes it.
 * thread_dump.c takes every live thread's stack for the goroutine/threads
 * profiles: threads waiting in the kernel are walked from /proc without a
 * signal, running ones answer a queued profiling signal (a user of the
 * signal dispatcher, signals/).
 *
 * Invariants: the registry is fixed-size and never allocates; a dump never
 * interrupts a thread that waits in the kernel.
 */
#ifndef PP_THREADS_H
#define PP_THREADS_H
#include <stddef.h>
#include <stdint.h>

#define PP_CREATE_FRAMES 32
#define PP_MAX_REGISTERED 8192

/* A live thread as the registry knows it. */
typedef struct pp_thread_entry {
    int tid;                          /* 0: free slot */
    int ncreate;                      /* 0: not created through pthread_create */
    int own;                          /* started by the profiler's own work */
    void *const *labels_slot;         /* the thread's current-labels TLS slot */
    void *const *trace_slot;          /* its current-trace-context TLS slot */
    uintptr_t stack_lo, stack_hi;     /* its stack (0, 0: not known) */
    uint64_t create[PP_CREATE_FRAMES + 1]; /* the creating call's stack, call sites; a cut one
                                           * ends in a pseudo-frame (model.h) */
} pp_thread_entry;

/* Creates the thread-exit key. Idempotent; not for signal handlers. */
void pp_threads_init(void);
/* Registers the calling (main) thread, which has no creation stack. */
void pp_threads_register_main(void);
/* A copy of the registered threads (malloc'd; *n receives their number),
 * or NULL when out of memory. */
pp_thread_entry *pp_threads_copy(size_t *n);
/* The registered threads' ids, label slots and trace-context slots (any
 * array may be NULL), at most max; returns their number. No allocation;
 * takes the registry's lock. Thread-safe; not for signal handlers. */
int pp_threads_list(int *tids, void *const **slots, void *const **trace_slots, int max);
/* The ids of the profiler's own registered threads, at most max; returns
 * their number. Same rules as pp_threads_list. */
int pp_threads_list_own(int *tids, int max);
/* The bytes of address space the stacks of the profiler's own threads
 * take: its live threads', or, in a forked child, those its parent's left
 * mapped (the C library keeps them for the next threads), whichever is
 * more. Same rules as pp_threads_list. */
size_t pp_threads_own_stack_bytes(void);
/* The stacks of the profiler's own live threads, each with its guard page
 * below it, at most max: [lo[i], hi[i]). Returns their number. Waits (a
 * second at most) for those being started to note their stacks. Same
 * rules as pp_threads_list. */
int pp_threads_own_stacks(uintptr_t *lo, uintptr_t *hi, int max);
/* Gives every thread of the profiler's own the calling thread's
 * capabilities and securebits as they are now (creds.c): called after the
 * program changed them (capset, prctl) and before its setuid, setgid and
 * setgroups family calls, which the C library makes in every thread,
 * aborting the process when one thread's result differs. Waits a second
 * at most; returns how many of the profiler's threads did not answer or
 * could not match. Thread-safe; not for signal handlers. */
int pp_threads_creds_match(void);
/* Threads of the profiler's own being started (+1 before the clone, -1
 * once registered or not created): a match waits for them. Thread-safe. */
void pp_threads_creds_starting(int delta);
/* A thread of the profiler's own, registered: after any match in
 * progress, takes the capabilities of the program's thread that made the
 * last change, as they are now (its creator's were copied at its clone).
 * Not for signal handlers. */
void pp_threads_creds_join(void);
void pp_threads_creds_fork_child(void);
/* A new thread's start (the creator's labels, the creating call's stack
 * from the call site of `caller`, fn and arg), made by the creating thread
 * for pp_threads_trampoline; NULL when out of memory. */
void *pp_threads_start_new(void *(*fn)(void *), void *arg, uint64_t caller);
/* Runs a start made by pp_threads_start_new in the new thread: registers
 * it, arms its timer, adopts the labels, then calls fn(arg). */
void *pp_threads_trampoline(void *start);
/* Frees a start whose thread was not created. */
void pp_threads_start_free(void *start);
/* fork handlers (lifecycle.c) */
void pp_threads_fork_prepare(void);
void pp_threads_fork_parent(void);
void pp_threads_fork_child(void);

/* Thread dumps (thread_dump.c) are part of this folder's interface. */
#include "thread_dump.h"
#endif
