/* heap_guard.c: the two pieces of heap/ state that every other heap file
 * reads and that call nothing: the calling thread's sampling countdown
 * with its re-entry guard, and the granule map a free consults (heap.h).
 * Kept here, below the sampler and the tables, so heap/'s files call one
 * way.
 */
#include "heap.h"

#include <stdatomic.h>

__thread int64_t pp_heap_left;
__thread int pp_heap_guarded;
_Atomic uint8_t pp_heap_map[1u << (32 - PP_GRANULE_SHIFT - 2)];

/* malloc-safe */
void pp_heap_guard_enter(int64_t *saved)
{
    saved[0] = pp_heap_left;
    saved[1] = pp_heap_guarded;
    pp_heap_guarded = 1;
    pp_heap_left = PP_HEAP_NOT_STARTED;
}

/* malloc-safe */
void pp_heap_guard_leave(const int64_t *saved)
{
    pp_heap_left = saved[0];
    pp_heap_guarded = (int)saved[1];
}

/* malloc-safe */
void pp_heap_map_own(uintptr_t from, size_t len)
{
    for (uintptr_t a = from & ~(uintptr_t)((1u << PP_GRANULE_SHIFT) - 1); a < from + len; a += 1u << PP_GRANULE_SHIFT)
        pp_heap_map_set(pp_granule((const void *)a), PP_MAP_OWN, 1);
}
