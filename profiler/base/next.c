/* next.c: the next-symbol resolver (next.h). RTLD_NEXT looks after the
 * object that holds this code, which is the object holding every override:
 * libpprof.so, or the program that links libpprof statically. */
#define _GNU_SOURCE
#include "next.h"

#include <dlfcn.h>
#include <stdatomic.h>

void *pp_next_symbol(const char *name, const char *version)
{
    return version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
}

void *pp_next_cond_symbol(const char *name)
{
    void *f = pp_next_symbol(name, "GLIBC_2.3.2");
    if (!f)
        f = pp_next_symbol(name, "GLIBC_2.17");
    return f ? f : pp_next_symbol(name, NULL);
}

#ifdef PPROF_NO_HOOKS
int pp_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    return pthread_cond_wait(c, m);
}

int pp_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
    return pthread_cond_timedwait(c, m, abs);
}
#else
typedef int (*cwait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*ctwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static _Atomic(cwait_fn) cwait;
static _Atomic(ctwait_fn) ctwait;

int pp_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    cwait_fn f = atomic_load(&cwait);
    if (!f)
        atomic_store(&cwait, f = (cwait_fn)pp_next_cond_symbol("pthread_cond_wait"));
    return f(c, m);
}

int pp_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
    ctwait_fn f = atomic_load(&ctwait);
    if (!f)
        atomic_store(&ctwait, f = (ctwait_fn)pp_next_cond_symbol("pthread_cond_timedwait"));
    return f(c, m, abs);
}
#endif

int pp_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t abs_ns)
{
    struct timespec ts = {.tv_sec = abs_ns / 1000000000, .tv_nsec = abs_ns % 1000000000};
    return pp_cond_timedwait(c, m, &ts);
}
