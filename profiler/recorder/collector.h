/* collector.h: the thread that moves samples from the ring to CPU
 * recorders' windows (private to recorder/). */
#ifndef PP_COLLECTOR_H
#define PP_COLLECTOR_H
#include "base/base.h"
#include "recorder.h"

/* A running CPU recorder's open window as the collector fills it: each
 * sample adds (1 + overrun, that times period_ns). */
typedef struct pp_cpu_window {
    int64_t period_ns;
    int trace_id;           /* samples under a trace context carry trace_id */
    pprof_profile *profile; /* unfinished; replaced under the collector lock */
} pp_cpu_window;

/* The collector lock guards the set of running CPU windows and their
 * profiles. Never taken in a signal handler. */
void pp_collector_lock(void);
void pp_collector_unlock(void);
/* Moves every published sample into the running recorders (lock held);
 * returns how many came from threads other than the collector. */
size_t pp_collector_drain_locked(void);
/* Adds a recorder to the running set, starting the collector thread if
 * needed (lock held). Returns 0 or a PPROF_E* code. */
int pp_collector_attach_locked(pp_cpu_window *w);
/* Removes it after a final drain; returns how many remain (lock held). */
int pp_collector_detach_locked(pp_cpu_window *w);
#endif
