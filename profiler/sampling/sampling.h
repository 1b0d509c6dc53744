/* sampling.h: the interface of sampling/, the CPU sampler.
 *
 * One signal handler per process (SIGPROF or LIBPPROF_SIGNAL) serves CPU
 * samples from per-thread CPU-clock timers, and passes queued signals to a
 * registered handler (thread dumps, threads/). A sample is captured in the
 * handler (bounded stack, the thread's label set) and written to a
 * lock-free ring (ring.h) that the collector (recorder/) drains. The calls
 * are in cpu.h.
 *
 * Invariants: the handler never allocates, takes no lock and saves errno;
 * timers are armed per thread and deleted before a thread's state is
 * freed; the profiling signal is blocked around fork.
 */
#ifndef PP_SAMPLING_H
#define PP_SAMPLING_H
#include "cpu.h"
#endif
