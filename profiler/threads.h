/* threads.h: thread creation/exit tracking (see threads.c). */
#ifndef PP_THREADS_H
#define PP_THREADS_H
/* Creates the thread-exit key. Idempotent; not for signal handlers. */
void pp_threads_init(void);
#endif
