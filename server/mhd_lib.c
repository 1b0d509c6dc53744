/* mhd_lib.c: loads libmicrohttpd and gnutls when something first serves
 * (see mhd_lib.h). Their sonames are the ones the build found
 * (PP_MHD_SONAME, PP_GNUTLS_SONAME, from CMakeLists.txt). */
#define _GNU_SOURCE
#define PP_MHD_LIB_C
#include "mhd_lib.h"
#include "base/base.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#ifndef PP_MHD_SONAME
#define PP_MHD_SONAME "libmicrohttpd.so.12"
#endif
#ifndef PP_GNUTLS_SONAME
#define PP_GNUTLS_SONAME "libgnutls.so.30"
#endif

pp_mhd_api pp_mhd;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failed[320]; /* "" when loaded */

static void *open_lib(const char *soname)
{
    pp_own_heap_enter(); /* the loader's allocations are the profiler's */
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    pp_own_heap_leave();
    if (!h)
        snprintf(failed, sizeof failed, "cannot load %s: %s", soname, dlerror());
    else
        pp_own_object_add(soname);
    return h;
}

static void *find(void *lib, const char *name)
{
    void *f = lib ? dlsym(lib, name) : NULL;
    if (lib && !f && !failed[0])
        snprintf(failed, sizeof failed, "no %s in the loaded libraries", name);
    return f;
}

static void load(void)
{
    void *mhd = open_lib(PP_MHD_SONAME);
    void *tls = mhd ? open_lib(PP_GNUTLS_SONAME) : NULL; /* libmicrohttpd's own */
#define PP_MHD_FIND(f) pp_mhd.f = (__typeof__(pp_mhd.f))find(mhd, #f);
#define PP_GNUTLS_FIND(f) pp_mhd.f = (__typeof__(pp_mhd.f))find(tls, #f);
    PP_MHD_FUNCTIONS(PP_MHD_FIND)
    PP_GNUTLS_FUNCTIONS(PP_GNUTLS_FIND)
#undef PP_MHD_FIND
#undef PP_GNUTLS_FIND
}

int pp_mhd_load(void)
{
    pthread_once(&once, load);
    return failed[0] ? pp_error_detail(PPROF_ESYS, "%s", failed) : 0;
}
