/* partial_no_memalign.c: a wrapper library with malloc, calloc, realloc
 * and free but none of the memalign family, preloaded after libpprof by
 * test_partial_alloc.sh. */
#include <stddef.h>

extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n)
{
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}
