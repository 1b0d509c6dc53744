/* version.c: the library's version at run time (pprof_version). */
#include "pprof.h"

/* async-signal-safe */
const char *pprof_version(void)
{
    return PPROF_VERSION_STRING;
}
