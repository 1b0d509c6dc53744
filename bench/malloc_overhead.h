/* malloc_overhead.h: what the driver (malloc_overhead.c) and the worker
 * (malloc_overhead_worker.c) of the heap-hook benchmark share. */
#ifndef PP_BENCH_MALLOC_OVERHEAD_H
#define PP_BENCH_MALLOC_OVERHEAD_H
#include "bench.h"

#define RING 4096            /* live objects per thread */
#define CAP_MS 60000         /* safety cap on any timed loop */
#define SAMPLED_PAIRS 200000
#define SAMPLED_DEPTH 10

/* One run: argv is malloc_overhead's, argv[1] "worker". Its exit status. */
int mo_worker(int argc, char **argv);
#endif
