/* thread_hooks.c: pthread_create and dlclose, interposed.
 *
 * pthread_create starts every new thread through threads/'s trampoline
 * (timer, labels, registry, creation stack); when the start cannot be
 * allocated the thread is created as asked, unprofiled until the
 * collector's rescan finds it. dlclose is bracketed so that no stack walk
 * reads an object while it is unmapped (unwind/).
 */
#define _GNU_SOURCE
#include "hooks.h"
#include "threads/threads.h"
#include "unwind/unwind.h"
#include "base/base.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#define API __attribute__((visibility("default")))

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*dlclose_fn)(void *);

static create_fn real_create;
static dlclose_fn real_dlclose;

#ifdef PPROF_NO_HOOKS
/* A sanitizer's own pthread_create. clang links its sanitizer runtimes into
 * the executable, where this definition shadows theirs and the next one
 * is glibc's: the sanitizer would not know the threads (LeakSanitizer then
 * missed what only their stacks hold). */
extern int __interceptor_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
    __attribute__((weak));
#endif

void pp_thread_hooks_init(void)
{
#ifdef PPROF_NO_HOOKS
    if (!real_create && __interceptor_pthread_create)
        real_create = __interceptor_pthread_create;
#endif
    if (!real_create)
        real_create = (create_fn)pp_next_symbol("pthread_create", NULL);
    if (!real_dlclose)
        real_dlclose = (dlclose_fn)pp_next_symbol("dlclose", NULL);
}

API int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!real_create)
        pp_thread_hooks_init();
    create_fn real = real_create;
    void *start = pp_threads_start_new(fn, arg, (uint64_t)(uintptr_t)__builtin_return_address(0));
    if (!start)
        return real(t, attr, fn, arg);
    int rc = real(t, attr, pp_threads_trampoline, start);
    if (rc)
        pp_threads_start_free(start);
    return rc;
}

API int dlclose(void *handle)
{
    if (!real_dlclose)
        pp_thread_hooks_init();
    pp_unwind_loader_enter();
    int r = real_dlclose(handle);
    pp_unwind_loader_exit();
    return r;
}
