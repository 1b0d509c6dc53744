/* history.h: what the history's two files share (private to recorder/):
 * the series of slices (history.c keeps and cuts them) and the recorder
 * that reads them (history_recorder.c).
 *
 * Every field of a series is guarded by pp_history_mu but `what`, `file`,
 * `kind`, `make`, `cut`, `peek` and `end_values`, fixed at start-up.
 */
#ifndef PP_HISTORY_H
#define PP_HISTORY_H
#include "recorder.h"

#include <pthread.h>

#define PP_HISTORY_KINDS 5 /* pprof_history_kind: CPU, wall, allocs, mutex, block */

typedef struct pp_slice {
    pprof_profile *raw;   /* unsymbolized, its builder open; NULL: no samples */
    int64_t start, dur;   /* Unix ns, ns */
    size_t bytes;
} pp_slice;

/* One kind's slices and the recorder they are cut from. */
typedef struct pp_series {
    const char *what;     /* "CPU", "wall", "allocation", "mutex", "block" */
    const char *file;     /* a dump's name ends -FILE.pb.gz */
    pprof_history_kind kind;
    int (*make)(pprof_recorder **r);
    int (*cut)(pprof_recorder *r, pprof_profile **raw);
    int (*peek)(pprof_recorder *r, int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg), void *arg);
    /* Values (bit k: value k) that are a state, kept as its change over
     * each slice (the live heap's): a span gives the state at its end,
     * base plus every change before it. */
    uint32_t end_values;
    pprof_recorder *rec;  /* running; NULL: not kept */
    pprof_profile *base;  /* end_values: the states at the oldest slice's start (the dropped slices' sum), or NULL */
    pp_slice *ring;       /* pp_history_cap entries; n from head, oldest first */
    size_t head, n;
    uint64_t total, dropped;
    int64_t rate;         /* its recorder's rate: Hz, bytes, 1 in N, ns */
    char why_off[160];    /* why it is not kept, when it is not */
} pp_series;

extern pthread_mutex_t pp_history_mu;
extern pp_series pp_history_series[PP_HISTORY_KINDS]; /* by pprof_history_kind */
extern size_t pp_history_cap;
extern int64_t pp_history_keep_ns; /* 0: no history */

/* Slice i of k, oldest first (mu held). */
pp_slice *pp_history_at(pp_series *k, size_t i);
/* All that kind's series holds, symbolized, with `note` as a comment (a
 * dump's; history_recorder.c). 0 or a PPROF_E* code. */
int pp_history_write(pprof_history_kind kind, const char *note, pprof_profile **out);
#endif
