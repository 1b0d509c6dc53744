/* thread_dump.h: the stacks of all live threads now (thread_dump.c). */
#ifndef PP_THREAD_DUMP_H
#define PP_THREAD_DUMP_H
#include "pprof.h"
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
    int how;                 /* enum pp_dump_how */
    int syscall;             /* the system call it waits in, -1 if none */
    char state;              /* R, S, D, ... from /proc */
    char name[16];
    int npcs;
    uint64_t pcs[PP_DUMP_FRAMES + 1]; /* leaf first; pseudo-PCs for the cases above */
    pprof_label *labels;     /* copied (malloc), NULL when none */
    size_t nlabels;
} pp_thread_stack;

/* Takes every thread's stack: at most ~100 ms per thread that must answer
 * a signal and ~1 s in all. One dump at a time (others wait). Returns 0
 * or PPROF_ENOMEM/PPROF_ESYS; free with pp_thread_dump_free. */
int pp_thread_dump(pp_thread_stack **out, size_t *n);
void pp_thread_dump_free(pp_thread_stack *t, size_t n);
/* fork handler (lifecycle.c): the child has no dump running. */
void pp_thread_dump_fork_child(void);
#endif
