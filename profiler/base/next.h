/* next.h: the one next-symbol resolver of the library's overrides (next.c).
 *
 * Every function libpprof overrides (malloc and its family, the C++
 * operators, pthread locks and waits, pthread_create, dlclose, exit,
 * __libc_start_main) forwards to the definition that follows libpprof's
 * own in the lookup order: glibc's, or another preloaded allocator's.
 */
#ifndef PP_NEXT_H
#define PP_NEXT_H

/* The next definition of `name` after libpprof's (dlsym RTLD_NEXT), in
 * symbol version `version` when not NULL (dlvsym); NULL when there is none.
 * Not malloc-safe by itself (the loader may allocate): the heap hooks call
 * it with their guard up or from their bootstrap buffer. */
void *pp_next_symbol(const char *name, const char *version);
/* The next definition of a pthread_cond_* function in the C library's
 * current version: x86-64's GLIBC_2.3.2 (its 2.2.5 is the old condition
 * variable), arm64's GLIBC_2.17, else the default. The same rule as
 * pp_next_symbol for malloc-safety. */
void *pp_next_cond_symbol(const char *name);
/* The next definitions of the functions a file overrides, from one list:
 * with `#define NEXT(X) X(recv) X(accept)`, NEXT(PP_NEXT_DECL) declares
 * static pointers real_recv and real_accept of those functions' types,
 * and NEXT(PP_NEXT_RESOLVE) in the file's init function fills them
 * (pp_next_symbol's rule for malloc-safety). */
#define PP_NEXT_DECL(name) static __typeof__(&name) real_##name;
#define PP_NEXT_RESOLVE(name) real_##name = (__typeof__(&name))pp_next_symbol(#name, NULL);

#include <pthread.h>
#include <stdint.h>
#include <time.h>
/* pthread_cond_wait and pthread_cond_timedwait for the profiler's own
 * code: the C library's current versions. libpprof defines both (the lock
 * hooks), so when it is loaded with dlopen, where no override binds, its
 * own unversioned calls bound to glibc's oldest versions (the condition
 * variables of glibc 2.2.5), which do not work on a condition that
 * pthread_cond_init made: the server's scheduler spun through a window.
 * Linked or preloaded, the profiler's own waits skip the lock hooks, as
 * their samples were left out anyway. Sanitizer builds call the functions
 * themselves, which their runtime intercepts. Thread-safe. */
int pp_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int pp_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs);
/* pp_cond_timedwait until abs_ns (nanoseconds on the condition's clock,
 * as pp_now_ns counts them, not negative). Thread-safe. */
int pp_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t abs_ns);
#endif
