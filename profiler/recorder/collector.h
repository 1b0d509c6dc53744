/* collector.h: the thread that moves samples from the ring to recorders. */
#ifndef PP_COLLECTOR_H
#define PP_COLLECTOR_H
#include "base/base.h"
#include "recorder.h"

/* The collector lock guards the set of running CPU recorders and their
 * windows. Never taken in a signal handler. */
void pp_collector_lock(void);
void pp_collector_unlock(void);
/* Moves every published sample into the running recorders (lock held). */
void pp_collector_drain_locked(void);
/* Adds a recorder to the running set, starting the collector thread if
 * needed (lock held). Returns 0 or a PPROF_E* code. */
int pp_collector_attach_locked(pprof_recorder *r);
/* Removes it after a final drain; returns how many remain (lock held). */
int pp_collector_detach_locked(pprof_recorder *r);
#endif
