/* contention.h: the interface of contention/, the mutex and block samplers.
 *
 * The lock hooks (interpose/lock_hooks.c) report each contended
 * acquisition and each wait; contention.c samples them as Go does and adds
 * the kept ones, scaled, to two record stores keyed by (stack, labels)
 * (store/). Recorders snapshot the stores and diff windows.
 *
 * Invariants: recording is malloc-safe (lock hooks run inside allocators)
 * and never waits for a fork; with both profiles off a hook costs one load.
 */
#ifndef PP_CONTENTION_H
#define PP_CONTENTION_H
#include "store/store.h"
#include <stdatomic.h>
#include <stdint.h>

/* Counters: events and delay (ns), scaled when recorded. */
extern pp_store pp_mutex_tab, pp_block_tab;
/* Non-zero while either profile samples: the hooks' only check when off. */
extern _Atomic int pp_contention_on;

enum { PP_WAIT_LOCK = 1, PP_WAIT_OTHER = 2 };
/* A wait of `ns` that ended in the hooked function whose caller's return
 * address is `caller`: lock acquisitions feed both profiles, other waits
 * (condition variables, semaphores, joins) the block profile. malloc-safe */
void pp_contention_event(int64_t ns, int kind, uint64_t caller);
int64_t pp_contention_now(void);
/* The rates in force (0: off). */
int pp_mutex_fraction(void);
int64_t pp_block_rate(void);
/* Start-up (environment) and fork handlers (lifecycle.c). */
void pp_contention_init(void);
void pp_contention_fork_prepare(void);
void pp_contention_fork_parent(void);
void pp_contention_fork_child(void);
/* A recorder joins (rate 0) or sets the rate; leave undoes a set when the
 * last recorder that needed it stops. kind: 0 mutex, 1 block. */
int pp_contention_join(int kind, int64_t rate, int *turned_on);
void pp_contention_leave(int kind, int turned_on);
/* The profile of now - base (base NULL: totals) of one store, records with
 * all-zero differences dropped; unfinished. NULL when out of memory. */
pprof_profile *pp_contention_build(const pp_store *t, const pp_store_snap *base, const pp_store_snap *now);
#endif
