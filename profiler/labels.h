/* labels.h: thread-current label sets, as the samplers see them (labels.c). */
#ifndef PP_LABELS_H
#define PP_LABELS_H
#include <stddef.h>
#include "pprof.h"

/* The calling thread's current label set with a reference taken, or NULL.
 * async-signal-safe */
const void *pp_labels_current_ref(void);
/* Drops a reference taken by pp_labels_current_ref (may free: never call
 * from a signal handler). */
void pp_labels_unref(const void *set);
/* The pairs of a set, sorted by key. */
size_t pp_labels_pairs(const void *set, const pprof_label **out);
/* Makes `set` (a reference the caller gives away, or NULL) the calling
 * thread's current set: a new thread adopting its creator's set. */
void pp_labels_adopt(pprof_labels *set);
/* Drops the calling thread's set at thread exit. */
void pp_labels_thread_exit(void);
#endif
