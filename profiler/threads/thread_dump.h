/* thread_dump.h: the stacks of all live threads now (thread_dump.c). */
#ifndef PP_THREAD_DUMP_H
#define PP_THREAD_DUMP_H
#include "pprof.h"
#include "labels/labels.h"
#include <signal.h>
#include <stdint.h>

#define PP_DUMP_FRAMES 64

enum pp_dump_how {
    PP_DUMP_SIGNAL = 1,  /* interrupted by a signal: the exact stack */
    PP_DUMP_SYSCALL,     /* waiting in the kernel: walked from /proc, no signal */
    PP_DUMP_NO_ANSWER,   /* did not answer the signal in time (blocks it?) */
    PP_DUMP_TIME_LIMIT,  /* the dump's time ran out before this thread */
};

typedef struct pp_thread_stack {
    int tid;
    int own;                 /* one of the profiler's own threads: named, not walked (npcs 0) */
    int how;                 /* enum pp_dump_how */
    int syscall;             /* the system call it waits in, -1 if none */
    char state;              /* R, S, D, ... from /proc */
    uint64_t sp, pc;         /* PP_DUMP_SYSCALL: where /proc shows it waiting */
    char name[16];
    int npcs;
    uint64_t pcs[PP_DUMP_FRAMES + 1]; /* leaf first; pseudo-PCs for the cases above */
    pprof_label *labels;     /* copied (malloc), NULL when none */
    size_t nlabels;
    pp_trace_snap trace;     /* PP_DUMP_SYSCALL: its span, copied (on = 0 when none or not asked for) */
} pp_thread_stack;

/* Takes every thread's stack (the profiler's own threads are listed with
 * their names only, own set, and are not walked): at most ~100 ms per
 * thread that must answer a signal and ~1 s in all. One dump at a time (others wait). Returns 0
 * or PPROF_ENOMEM/PPROF_ESYS; free with pp_thread_dump_free. */
int pp_thread_dump(pp_thread_stack **out, size_t *n);
void pp_thread_dump_free(pp_thread_stack *t, size_t n);
/* One thread, if it waits in the kernel: walked from the pc and stack
 * pointer /proc shows, with no signal, into *t (tid, how, syscall, sp,
 * pc, stack; its labels copied from `slot`, the thread's label slot, and
 * its span into t->trace from `trace_slot`, its trace-context slot, by
 * pp_trace_capture's rules; none when NULL), as a dump walks it. Returns
 * 1, 2 when the thread left that wait while its labels and span were read
 * (both are dropped then), or 0 when the thread runs (or is gone) and *t
 * is left as it was. Free t->labels with pp_thread_stack_free_labels.
 * Thread-safe; not for signal handlers. */
int pp_thread_walk_waiting(int tid, pp_thread_stack *t, void *const *slot, void *const *trace_slot);
/* Where thread `tid` waits, from /proc/self/task/<tid>/syscall: 1 with the
 * system call's number, user stack pointer and pc, or 0 when it runs, is
 * ready to run or is gone. Thread-safe; not for signal handlers. */
int pp_thread_syscall(int tid, int *nr, uint64_t *sp, uint64_t *pc);
/* The CPU thread `tid` runs on, or whose queue it waits in (field 39 of
 * /proc/self/task/<tid>/stat), or -1. Thread-safe; not for signal handlers. */
int pp_thread_cpu(int tid);
/* syscalls.c: the name of system call `nr` ("epoll_wait", "futex", ...)
 * among those a thread may wait in, or NULL. Thread-safe. */
const char *pp_syscall_name(int nr);
/* Frees t->labels (copied by a dump or pp_thread_walk_waiting) and clears them. */
void pp_thread_stack_free_labels(pp_thread_stack *t);
/* fork handler (lifecycle.c): the child has no dump running. */
void pp_thread_dump_fork_child(void);
#endif
