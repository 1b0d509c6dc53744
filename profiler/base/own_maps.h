/* own_maps.h: the profiler's own mappings, made and listed in one place
 * (own_maps.c).
 *
 * Every anonymous mapping the profiler makes for itself (record stores,
 * the live table, the own heap, rings) is made here with the raw system
 * call, so no mmap hook sees it, and is listed: the memory profile counts
 * these ranges as the profiler's own. The list is fixed-size and
 * lock-free.
 */
#ifndef PP_OWN_MAPS_H
#define PP_OWN_MAPS_H
#include <stddef.h>
#include <stdint.h>

/* An anonymous private mapping of `bytes` with `prot` and the extra mmap
 * flags `flags` (MAP_NORESERVE, MAP_POPULATE), listed as `what` (a static
 * string: what the memory profile calls it); NULL on failure (errno
 * set). async-signal-safe */
void *pp_map(size_t bytes, int prot, int flags, const char *what);
/* Unmaps [p, p + bytes), all or part of one mapping pp_map made, and
 * updates the list. async-signal-safe */
void pp_unmap(void *p, size_t bytes);
/* Copies the listed ranges (at most max) into lo[], hi[] and what[];
 * returns how many there are (which may exceed max). async-signal-safe */
size_t pp_own_maps(uintptr_t *lo, uintptr_t *hi, const char **what, size_t max);
/* The bytes of address space the listed mappings span. async-signal-safe */
size_t pp_own_maps_bytes(void);
#endif
