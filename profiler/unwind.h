/* unwind.h: stack capture from a signal's ucontext (see unwind.c). */
#ifndef PP_UNWIND_H
#define PP_UNWIND_H
#include <stdint.h>

/* Records the loaded objects' unwind tables and the main thread's stack.
 * Call once, outside any signal handler. */
void pp_unwind_init(void);
/* Records the calling thread's stack bounds for the walk; call on each new
 * thread, outside any handler. */
void pp_unwind_thread_prepare(void);
/* Re-reads the object list if objects were loaded or unloaded (force:
 * always). Not async-signal-safe; takes the loader's lock. */
void pp_unwind_refresh(int force);
/* Keeps dlclose (through the wrapper) from unmapping any object until
 * pp_unwind_unpin_objects; returns 0, pinning nothing, while one is being
 * unloaded. For short reads of loaded objects' memory outside handlers. */
int pp_unwind_pin_objects(void);
void pp_unwind_unpin_objects(void);
/* Brackets an unmapping of objects (see unwind.c). */
void pp_unwind_loader_enter(void);
void pp_unwind_loader_exit(void);

/* Writes up to `max` addresses, leaf (the interrupted PC) first, then call
 * sites (return address - 1). Sets *truncated when the stack was deeper.
 * Returns the count (>= 1). async-signal-safe: no locks, no allocation,
 * never enters the dynamic loader. */
int pp_unwind_signal(void *ucontext, uint64_t *pcs, int max, int *truncated);
#endif
