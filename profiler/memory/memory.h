/* memory.h: the interface of memory/, where the resident set is.
 *
 * The mmap family's hooks (interpose/mmap_hooks.c) enter every anonymous
 * private mapping the program makes in a table of regions (regions.c),
 * with the stack that made it, or as the allocator's when the next
 * allocator's own code made it. A memory profile (memory_profile.c)
 * reads /proc/self/smaps (smaps.c) and shares out each mapping's resident
 * bytes among what holds them: live heap objects and the allocator's free
 * memory (the heap profile and the allocator's statistics,
 * alloc_stats.c), the program's own mappings, thread stacks, mapped
 * files, shared memory, the profiler itself, and what none of them
 * claims. Its samples add up to the process's Rss.
 *
 * Invariants: the hooks are malloc-safe (the table lives in the
 * profiler's own mappings and its lock never waits for a fork); building
 * a profile allocates only from the profiler's own heap.
 */
#ifndef PP_MEMORY_H
#define PP_MEMORY_H
#include "pprof.h"
#include <stddef.h>
#include <stdint.h>

/* --- the regions the hooks saw (regions.c) --- */
enum {
    PP_REGION_PROGRAM = 1,   /* mapped by the program: rec is its stack */
    PP_REGION_ALLOCATOR = 2, /* mapped by the next allocator's code */
    PP_REGION_OWN = 3,       /* mapped by a thread at the profiler's work */
};
typedef struct pp_region {
    uintptr_t lo, hi;
    uint32_t rec; /* PP_REGION_PROGRAM: the record of its stack and labels */
    uint32_t cls;
} pp_region;

/* The hooks' calls, after the real call succeeded. `caller` is the
 * return address into the code that called mmap. malloc-safe */
void pp_memory_mapped(void *p, size_t len, int flags, uint64_t caller);
void pp_memory_unmapped(void *p, size_t len);
void pp_memory_remapped(void *old, size_t old_len, void *p, size_t len);
/* Copies the regions, in address order (at most max); returns how many
 * there are. Takes the table's lock. */
size_t pp_regions_copy(pp_region *out, size_t max);
/* The stack and labels of a PP_REGION_PROGRAM record. */
const uint64_t *pp_regions_stack(uint32_t rec, size_t *n, const pprof_labels **labels);
/* Mappings the hooks could not enter (the table was full or held by a
 * fork). */
uint64_t pp_regions_lost(void);
void pp_memory_fork_prepare(void);
void pp_memory_fork_parent(void);
void pp_memory_fork_child(void);

/* --- the memory profile (memory_profile.c) --- */
/* The resident set now into *out: one sample type (resident_space,
 * bytes), its samples under named root frames; unfinished (model/).
 * Returns 0 or a PPROF_E* code (recorded). */
int pp_memory_build(pprof_profile **out);
#endif
