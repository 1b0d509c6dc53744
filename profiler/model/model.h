/* model.h: the interface of model/, the in-memory profile.
 *
 * A pprof_profile is built by appending raw samples (program counters,
 * values, labels) to an unfinished profile, then finished: addresses are
 * symbolized (symbolize/) into locations, functions and mappings with ids
 * 1..N. Recorders (recorder/) and the profile kinds build profiles;
 * encoders (proto/) read them only through this interface and pprof.h's
 * accessors. The builder's calls are in profile.h.
 */
#ifndef PP_MODEL_H
#define PP_MODEL_H
#include "profile.h"
#endif
