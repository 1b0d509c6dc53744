/* labels.h: thread-current label sets, as the samplers see them. */
#ifndef PP_LABELS_H
#define PP_LABELS_H
#include <stddef.h>
#include "pprof.h"

/* The calling thread's current label set with a reference taken, or NULL.
 * async-signal-safe */
static inline const void *pp_labels_current_ref(void) { return NULL; }
/* Drops a reference taken by pp_labels_current_ref. */
static inline void pp_labels_unref(const void *set) { (void)set; }
/* The pairs of a set (sorted by key). */
static inline size_t pp_labels_pairs(const void *set, const pprof_label **out)
{
    (void)set;
    *out = NULL;
    return 0;
}
#endif
