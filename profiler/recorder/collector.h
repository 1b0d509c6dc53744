/* collector.h: the thread that moves samples from the ring to CPU
 * recorders' windows (private to recorder/). */
#ifndef PP_COLLECTOR_H
#define PP_COLLECTOR_H
#include "base/base.h"
#include "recorder.h"

/* A running CPU recorder's open window as the collector fills it: each
 * sample adds (its periods, their CPU time at the sample's rate). */
typedef struct pp_cpu_window {
    int hz;                 /* the rate the recorder asked for: the sampler runs at the highest */
    int hz_min, hz_max;     /* the rates its samples were taken at (0: none yet) */
    int64_t ns, at_exit_ns; /* its CPU time, and that of threads counted at their exit (PP_PC_AT_EXIT) */
    int64_t period_ns;      /* of hz */
    int trace_id;           /* samples under a trace context carry trace_id */
    int units;              /* samples in a unit of work carry PP_UNIT_KEY (the history's) */
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
/* The highest rate the running recorders asked for, 0 when none runs
 * (lock held): the sampler's rate. */
int pp_collector_rate_locked(void);
/* Removes it after a final drain; returns how many remain (lock held). */
int pp_collector_detach_locked(pp_cpu_window *w);
#endif
