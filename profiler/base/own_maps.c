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

#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SLOTS 512

static _Atomic uintptr_t lo_of[SLOTS], hi_of[SLOTS];
static const char *_Atomic what_of[SLOTS];

/* async-signal-safe */
void *pp_map(size_t bytes, int prot, int flags, const char *what)
{
    long r = syscall(SYS_mmap, NULL, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (r == -1)
        return NULL;
    uintptr_t a = (uintptr_t)r;
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
