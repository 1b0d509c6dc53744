/* allocator_ext_hooks.c: the allocators' own entry points that programs call
 * directly, where a sampled object would otherwise show: jemalloc's
 * sallocx, sdallocx, dallocx, rallocx and xallocx, tcmalloc's
 * tc_malloc_size, tc_free and tc_free_sized, and malloc_size.
 *
 * A sampled object is an ordinary block of the next allocator
 * (heap_hooks.c), so the size queries pass through; a free or move must
 * take it out of the live table, and a sampled object is never resized in
 * place (its record keeps its size). Everything else passes through.
 * jemalloc's mallocx (BIND 9 allocates everything through it) and
 * rallocx's new block are sampled as malloc and realloc are, the block
 * made with the program's flags; tcmalloc's tc_malloc family is not
 * (docs/heap.md lists what is not covered). Each function exists only to be found before the allocator's
 * own; a program whose allocator lacks it never calls it. malloc-safe
 * throughout.
 */
#ifndef PPROF_NO_HOOKS /* sanitizer builds: their runtime owns malloc */
#define _GNU_SOURCE
#include "heap/heap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))

/* malloc-safe */
static int ready(void)
{
    return pp_next_ready() || pp_next_resolve();
}

/* The size p was sampled with, 0 when p is not a sampled object.
 * malloc-safe */
static size_t sampled_size(const void *p)
{
    if (pp_own_owns(p)) /* the own heap's: through free and realloc too */
        return pp_own_usable(p);
    if (!p || !pp_heap_maybe_sampled(p) || !pp_heap_table_maybe_live(p) || !ready())
        return 0;
    return pp_heap_table_size(p);
}

/* What the size queries answer: `own` is the allocator's query, NULL when
 * it has none. malloc-safe */
static size_t usable(const void *p, size_t (*own)(const void *))
{
    if (!p || pp_boot_owns(p))
        return p ? pp_boot_size(p) : 0;
    if (pp_own_owns(p))
        return pp_own_usable(p);
    if (!ready())
        return 0;
    return own ? own(p) : pp_next.usable_size((void *)p);
}

/* The extensions defined here, as jemalloc's, tcmalloc's and Darwin's
 * headers declare them (none is installed with the C library). */
size_t sallocx(const void *p, int flags);
size_t malloc_size(void *p);
size_t tc_malloc_size(void *p);
void sdallocx(void *p, size_t size, int flags);
void dallocx(void *p, int flags);
void tc_free(void *p);
void tc_free_sized(void *p, size_t size);
void *mallocx(size_t size, int flags);
void *rallocx(void *p, size_t size, int flags);
size_t xallocx(void *p, size_t size, size_t extra, int flags);

/* jemalloc's sallocx ignores its flags. malloc-safe */
static size_t je_salloc(const void *p)
{
    return pp_next_x.sallocx(p, 0);
}

/* malloc-safe */
API size_t sallocx(const void *p, int flags)
{
    (void)flags;
    return usable(p, pp_next_x.sallocx ? je_salloc : NULL);
}

/* malloc-safe */
API size_t malloc_size(void *p)
{
    return usable(p, (size_t(*)(const void *))pp_next_x.malloc_size);
}

/* malloc-safe */
API size_t tc_malloc_size(void *p)
{
    return usable(p, (size_t(*)(const void *))pp_next_x.tc_malloc_size);
}

/* A sized or flagged free: a sampled object goes through free (the table,
 * then the block's own free, which needs no size). malloc-safe */
API void sdallocx(void *p, size_t size, int flags)
{
    if (sampled_size(p) || !pp_next_x.sdallocx)
        free(p);
    else
        pp_next_x.sdallocx(p, size, flags);
}

/* malloc-safe */
API void dallocx(void *p, int flags)
{
    if (sampled_size(p) || !pp_next_x.dallocx)
        free(p);
    else
        pp_next_x.dallocx(p, flags);
}

/* malloc-safe */
API void tc_free(void *p)
{
    if (sampled_size(p) || !pp_next_x.tc_free)
        free(p);
    else
        pp_next_x.tc_free(p);
}

/* malloc-safe */
API void tc_free_sized(void *p, size_t size)
{
    if (sampled_size(p) || !pp_next_x.tc_free_sized)
        free(p);
    else
        pp_next_x.tc_free_sized(p, size);
}

/* Whether this allocation of n bytes on a program's thread is to be
 * sampled. malloc-safe */
static int take_sample(size_t n)
{
    return !pp_own_depth && pp_heap_take_sample(n);
}

/* A block of the next allocator's mallocx, sampled as malloc is.
 * malloc-safe */
API void *mallocx(size_t size, int flags)
{
    if (!ready() || !pp_next_x.mallocx) {
        errno = ENOMEM; /* no allocator with mallocx: the program's call cannot be served */
        return NULL;
    }
    void *p = pp_next_x.mallocx(size, flags);
    if (p && take_sample(size))
        pp_heap_sampled(p, size, CALLER);
    return p;
}

/* Moving a sampled object, or into one: a new block with the same flags,
 * the bytes copied, the old one freed (through the table when sampled).
 * malloc-safe */
API void *rallocx(void *p, size_t size, int flags)
{
    size_t old = sampled_size(p);
    if (pp_own_owns(p) || !pp_next_x.rallocx)
        return realloc(p, size);
    int sample = take_sample(size);
    if ((!old && !sample) || !pp_next_x.mallocx)
        return pp_next_x.rallocx(p, size, flags);
    if (!old)
        old = pp_next.usable_size(p);
    void *q = pp_next_x.mallocx(size, flags);
    if (!q)
        return NULL;
    if (sample)
        pp_heap_sampled(q, size, CALLER);
    memcpy(q, p, old < size ? old : size);
    free(p);
    return q;
}

/* In place: a sampled object keeps its size as the program sees it.
 * malloc-safe */
API size_t xallocx(void *p, size_t size, size_t extra, int flags)
{
    size_t old = sampled_size(p);
    if (pp_own_owns(p))
        return old;
    if (old || !pp_next_x.xallocx)
        return pp_next.usable_size(p);
    return pp_next_x.xallocx(p, size, extra, flags);
}
#endif
