/* custom.h: custom profiles as the recorders see them (custom.c). */
#ifndef PP_CUSTOM_H
#define PP_CUSTOM_H
#include "pprof.h"
/* Adds one sample per entry (count 1, merged by stack and labels). */
int pp_custom_add_to(pprof_custom *c, pprof_profile *p);
#endif
