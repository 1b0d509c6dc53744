/* malloc_forward.c: the floor of interposing malloc, for
 * bench/malloc_overhead's "forward-only" configuration. A preloaded
 * library whose malloc, free, calloc and realloc only forward to glibc's,
 * each through a function pointer, as libpprof's hooks do on their fast
 * paths, without the countdown, the map of sampled objects or sampling.
 * The rest of the malloc family is glibc's own (the same allocator).
 * glibc only: its __libc_* entry points need no lookup.
 */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

/* Not static: the compiler must load them, as libpprof loads its own. */
#define HIDDEN __attribute__((visibility("hidden")))
HIDDEN void *(*fwd_malloc)(size_t) = __libc_malloc;
HIDDEN void (*fwd_free)(void *) = __libc_free;
HIDDEN void *(*fwd_calloc)(size_t, size_t) = __libc_calloc;
HIDDEN void *(*fwd_realloc)(void *, size_t) = __libc_realloc;

void *malloc(size_t n) { return fwd_malloc(n); }
void free(void *p) { fwd_free(p); }
void *calloc(size_t n, size_t size) { return fwd_calloc(n, size); }
void *realloc(void *p, size_t n) { return fwd_realloc(p, n); }
