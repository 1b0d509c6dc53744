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
#include <sys/types.h>

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

/* Whether the program has locked its future mappings (mlockall with
 * MCL_FUTURE; interpose/mlock_hooks.c sets and clears it). The kernel
 * then locks, and faults in, every mapping made, the profiler's too:
 * pp_map, pp_own_mmap and pp_own_stack_unlock keep the profiler's memory
 * out of it. async-signal-safe */
int pp_future_locked(void);
void pp_future_locked_set(int on);
/* mmap for the profiler: while the program's future mappings are locked,
 * the mapping is made without access (which the kernel does not fault
 * in), unlocked, then given `prot`; MAP_POPULATE then populates it after.
 * As mmap otherwise. `map` is the mmap to call (the next definition, or
 * NULL for the system call). async-signal-safe */
void *pp_own_mmap(void *(*map)(void *, size_t, int, int, int, off_t), void *addr, size_t len, int prot, int flags,
                  int fd, off_t off);
/* Said on each thread of the profiler's as it starts (threads/'s
 * trampoline; under dlopen no mlockall override binds): while the program's
 * future mappings are locked, unlocks the thread's stack (which the C
 * library mapped and the kernel faulted in whole) and gives back the
 * pages below the part in use. Not async-signal-safe (pthread_getattr_np). */
void pp_own_stack_unlock(void);
#endif
