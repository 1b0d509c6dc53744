/* own_maps.c: the profiler's own anonymous mappings (see own_maps.h).
 *
 * A slot holds a range's start and end; it is claimed with one atomic
 * exchange of its start, so makers on any thread (inside malloc, in a
 * signal handler) need no lock. A free slot's end is 0 (cleared before
 * its start), and a claimed one's end is set after its start, so a
 * reader that sees an end at or below the start skips the slot. A range unmapped whole frees its slot; one
 * unmapped in part (a store trimming its tail) shrinks. Mappings past the
 * table's size are made but not listed (the memory profile then shows them
 * as not attributed).
 */
#define _GNU_SOURCE
#include "own_maps.h"

#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SLOTS 512

static _Atomic uintptr_t lo_of[SLOTS], hi_of[SLOTS];
static const char *_Atomic what_of[SLOTS];

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static _Atomic int future_locked;

/* async-signal-safe */
int pp_future_locked(void)
{
    return atomic_load_explicit(&future_locked, memory_order_relaxed);
}

/* async-signal-safe */
void pp_future_locked_set(int on)
{
    atomic_store(&future_locked, on);
}

/* async-signal-safe */
void *pp_own_mmap(void *(*map)(void *, size_t, int, int, int, off_t), void *addr, size_t len, int prot, int flags,
                  int fd, off_t off)
{
    int unlock = pp_future_locked() && !(flags & MAP_LOCKED);
    int first = unlock ? PROT_NONE : prot, populate = unlock ? flags & MAP_POPULATE : 0;
    void *p = map ? map(addr, len, first, flags & ~populate, fd, off)
                  : (void *)syscall(SYS_mmap, addr, len, first, flags & ~populate, fd, off);
    if (p == MAP_FAILED || !unlock)
        return p;
    syscall(SYS_munlock, p, len);
    if (prot != PROT_NONE && syscall(SYS_mprotect, p, len, prot) != 0) {
        int e = errno;
        syscall(SYS_munmap, p, len);
        errno = e;
        return MAP_FAILED;
    }
    if (populate)
        syscall(SYS_madvise, p, len, MADV_POPULATE_WRITE);
    return p;
}

/* Not async-signal-safe */
void pp_own_stack_unlock(void)
{
    if (!pp_future_locked())
        return;
    pthread_attr_t a;
    void *lo;
    size_t n;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &lo, &n) == 0) {
        syscall(SYS_munlock, lo, n);
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), here = (uintptr_t)__builtin_frame_address(0);
        uintptr_t keep = (here - 64 * 1024) & ~(page - 1); /* what runs now, and a margin */
        if (keep > (uintptr_t)lo)
            syscall(SYS_madvise, lo, keep - (uintptr_t)lo, MADV_DONTNEED);
    }
    pthread_attr_destroy(&a);
}

/* async-signal-safe */
void *pp_map(size_t bytes, int prot, int flags, const char *what)
{
    void *p = pp_own_mmap(NULL, NULL, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t empty = 0;
        if (atomic_compare_exchange_strong(&lo_of[i], &empty, a)) {
            atomic_store(&what_of[i], what);
            atomic_store(&hi_of[i], a + bytes);
            break;
        }
    }
    return (void *)a;
}

/* async-signal-safe */
void pp_unmap(void *p, size_t bytes)
{
    uintptr_t a = (uintptr_t)p, b = a + bytes;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t lo = atomic_load(&lo_of[i]), hi = atomic_load(&hi_of[i]);
        if (!lo || a >= hi || b <= lo)
            continue;
        if (a <= lo && b >= hi) { /* hi first: a reader never pairs a new start with an old end */
            atomic_store(&hi_of[i], 0);
            atomic_store(&lo_of[i], 0);
        }
        else if (b >= hi)
            atomic_store(&hi_of[i], a);
        else if (a <= lo)
            atomic_store(&lo_of[i], b);
        break;
    }
    syscall(SYS_munmap, p, bytes);
}

/* async-signal-safe */
size_t pp_own_maps(uintptr_t *lo, uintptr_t *hi, const char **what, size_t max)
{
    size_t n = 0;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t a = atomic_load(&lo_of[i]), b = atomic_load(&hi_of[i]);
        if (!a || b <= a)
            continue;
        if (n < max) {
            lo[n] = a;
            hi[n] = b;
            what[n] = atomic_load(&what_of[i]);
        }
        n++;
    }
    return n;
}

/* async-signal-safe */
size_t pp_own_maps_bytes(void)
{
    size_t sum = 0;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t a = atomic_load(&lo_of[i]), b = atomic_load(&hi_of[i]);
        if (a && b > a)
            sum += b - a;
    }
    return sum;
}
