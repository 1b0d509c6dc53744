/* own_labels.h: the label set that marks the profiler's own work, for
 * the parts that may not include labels/ (own_labels.c).
 *
 * labels/ makes the set {PP_OWN_KEY: PP_OWN_VALUE} (names.h) once and
 * registers how to enter and leave it here, from a constructor, so that
 * base/ calls no other folder and the server's threads and requests wear
 * the same set as the core's own threads. Before anything is registered,
 * begin returns NULL and end does nothing.
 */
#ifndef PP_OWN_LABELS_H
#define PP_OWN_LABELS_H
#include "pprof.h"

typedef struct pp_own_labels_ops {
    pprof_labels *(*begin)(void);      /* makes the set current; returns the one it replaced */
    void (*end)(pprof_labels *prev);   /* puts prev back */
} pp_own_labels_ops;
void pp_own_labels_register(const pp_own_labels_ops *ops);
/* Makes the calling thread's current set the profiler's own and returns
 * the set it replaced, for pp_own_labels_end (a thread that only works for
 * the profiler unrefs it and never ends). Threads created meanwhile
 * inherit the set. Thread-safe. */
pprof_labels *pp_own_labels_begin(void);
void pp_own_labels_end(pprof_labels *prev);
#endif
