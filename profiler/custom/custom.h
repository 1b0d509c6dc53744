/* custom.h: the interface of custom/, programs' own profiles.
 *
 * pprof_custom_* (custom.c): a registered profile counts entries keyed by
 * pointer, each with the stack and labels of the call that added it; a
 * recorder reads the entries as counts per (stack, labels). Profiles live
 * as long as the process. Not for signal handlers or malloc hooks.
 */
#ifndef PP_CUSTOM_H
#define PP_CUSTOM_H
#include "pprof.h"
/* Adds one sample per entry (count 1, merged by stack and labels). */
int pp_custom_add_to(pprof_custom *c, pprof_profile *p);
#endif
