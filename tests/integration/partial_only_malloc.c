/* partial_only_malloc.c: a wrapper library that defines malloc alone (and
 * hands out glibc's blocks), preloaded after libpprof by
 * test_partial_alloc.sh. */
#include <stddef.h>

extern void *__libc_malloc(size_t);

void *malloc(size_t n)
{
    return __libc_malloc(n);
}
