/* merge_check.h: the check of one decoded pprof_merge input (merge_check.c). */
#ifndef PP_MERGE_CHECK_H
#define PP_MERGE_CHECK_H
#include "proto/profile.pb-c.h"

#include <stdint.h>

/* The largest mapping, function and location id of a profile. */
typedef struct pp_merge_tops {
    uint64_t mapping, function, location;
} pp_merge_tops;

/* 0 when p's ids and references hold together (then *tops is set), else
 * PPROF_EINVAL with a detail saying what does not, or PPROF_ENOMEM. */
int pp_merge_check(const Perftools__Profiles__Profile *p, pp_merge_tops *tops);
#endif
