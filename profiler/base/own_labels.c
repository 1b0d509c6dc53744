/* own_labels.c: the profiler's own label set, as labels/ registers it
 * (see own_labels.h). */
#include "own_labels.h"

#include <stdatomic.h>
#include <stddef.h>

static const pp_own_labels_ops *_Atomic own_labels;

void pp_own_labels_register(const pp_own_labels_ops *ops)
{
    atomic_store(&own_labels, ops);
}

pprof_labels *pp_own_labels_begin(void)
{
    const pp_own_labels_ops *o = atomic_load(&own_labels);
    return o ? o->begin() : NULL;
}

void pp_own_labels_end(pprof_labels *prev)
{
    const pp_own_labels_ops *o = atomic_load(&own_labels);
    if (o)
        o->end(prev);
}
