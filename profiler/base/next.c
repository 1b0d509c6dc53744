/* next.c: the next-symbol resolver (next.h). RTLD_NEXT looks after the
 * object that holds this code, which is the object holding every override:
 * libpprof.so, or the program that links libpprof statically. */
#define _GNU_SOURCE
#include "next.h"

#include <dlfcn.h>

void *pp_next_symbol(const char *name, const char *version)
{
    return version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
}
