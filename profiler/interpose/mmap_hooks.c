/* mmap_hooks.c: mmap, mmap64, munmap and mremap, interposed for the
 * memory profile.
 *
 * Each forwards to the next definition (glibc's, or another preloaded
 * library's) and then tells memory/ what changed: an anonymous private
 * mapping enters its table of regions with the stack that made it (or as
 * the allocator's, when the next allocator's code made it), an unmapping
 * or a mapping over part of a region cuts it, a moved one keeps its
 * stack. Allocators map from inside malloc, holding their locks, so
 * everything here is malloc-safe and no hook ever calls dlsym (it may
 * allocate, and takes the loader's lock): the next definitions are found
 * by the constructor (pp_mmap_hooks_init), and until then the calls go
 * to the kernel directly. mprotect and madvise change no owner: the
 * profile reads residency from the kernel. While the program has its
 * future mappings locked (mlock_hooks.c), the profiler's own are made
 * unlocked (pp_own_mmap).
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "memory/memory.h"
#include "hooks.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS /* sanitizer builds: their runtimes own mmap */
#define API __attribute__((visibility("default")))
#define CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);

static struct {
    mmap_fn mmap;
    munmap_fn munmap;
    mremap_fn mremap;
} next;
static _Atomic int found; /* `next` is filled */

void pp_mmap_hooks_init(void)
{
    if (atomic_load(&found))
        return;
    next.mmap = (mmap_fn)pp_next_symbol("mmap", NULL);
    next.munmap = (munmap_fn)pp_next_symbol("munmap", NULL);
    next.mremap = (mremap_fn)pp_next_symbol("mremap", NULL);
    atomic_store_explicit(&found, next.mmap && next.munmap && next.mremap, memory_order_release);
}

/* 1 once the constructor found the next definitions. malloc-safe */
static int ready(void)
{
    return atomic_load_explicit(&found, memory_order_acquire);
}

/* malloc-safe */
static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, uint64_t caller)
{
    void *p;
    if (pp_future_locked() && pp_own_work()) /* the symbolizer's files: not locked in with the program's */
        p = pp_own_mmap(ready() ? next.mmap : NULL, addr, len, prot, flags, fd, off);
    else
        p = ready() ? next.mmap(addr, len, prot, flags, fd, off)
                    : (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED)
        pp_memory_mapped(p, len, flags, caller);
    return p;
}

/* malloc-safe */
API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return do_mmap(addr, len, prot, flags, fd, off, CALLER);
}

/* malloc-safe */
API void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return do_mmap(addr, len, prot, flags, fd, off, CALLER);
}

/* malloc-safe */
API int munmap(void *addr, size_t len)
{
    int rc = ready() ? next.munmap(addr, len) : (int)syscall(SYS_munmap, addr, len);
    if (rc == 0)
        pp_memory_unmapped(addr, len);
    return rc;
}

/* malloc-safe */
API void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    void *p = ready() ? next.mremap(old, old_len, len, flags, want)
                      : (void *)syscall(SYS_mremap, old, old_len, len, flags, want);
    if (p != MAP_FAILED)
        pp_memory_remapped(old, old_len, p, len);
    return p;
}
#else
void pp_mmap_hooks_init(void)
{
}
#endif
