/* claims.h: who holds which addresses, and their share of each mapping's
 * resident bytes (claims.c). */
#ifndef PP_CLAIMS_H
#define PP_CLAIMS_H
#include "smaps.h"
#include <stddef.h>
#include <stdint.h>

/* The roots of the memory profile, in the order the profile lists them. */
enum {
    PP_ROOT_HEAP,   /* live heap objects */
    PP_ROOT_FREE,   /* the allocator's memory not in live objects */
    PP_ROOT_MMAP,   /* mapped by the program */
    PP_ROOT_STACKS, /* thread stacks */
    PP_ROOT_FILES,  /* mapped files */
    PP_ROOT_SHARED, /* shared memory */
    PP_ROOT_OWN,    /* libpprof */
    PP_ROOT_NONE,   /* what nothing claims */
    PP_ROOTS
};

/* A range of addresses and what holds it; a lower prio wins where claims
 * overlap. */
typedef struct pp_claim {
    uintptr_t lo, hi;
    int prio;
    int root;
    uint64_t leaf;  /* the leaf frame (a named frame), 0 for PP_ROOT_MMAP */
    uint32_t rec;   /* PP_ROOT_MMAP: the region's record */
    double bytes;   /* its resident bytes, once counted */
    uintptr_t top;  /* the highest hi of the claims up to this one (sorted) */
} pp_claim;

typedef struct pp_claims {
    pp_claim *c;
    size_t n, cap;
    size_t sorted;  /* the first `sorted` claims are in order, with top set */
} pp_claims;

/* Adds a claim; 0 or -1 when out of memory. */
int pp_claims_add(pp_claims *cs, uintptr_t lo, uintptr_t hi, int prio, int root, uint64_t leaf, uint32_t rec);
/* Sorts the claims by address (and reads the page size). */
void pp_claims_sort(pp_claims *cs);
/* Claims, for the allocator (as `root` with `leaf`, at `prio`), the parts
 * of the anonymous mapping v that no claim holds and that hold a live
 * sampled object (live: sorted addresses) or, over glibc, a glibc arena's
 * heap or chunks glibc mapped. The claims must be sorted; they are not
 * after this. 0 or -1 when out of memory. */
int pp_claims_find_allocator(pp_claims *cs, const pp_vma *v, const uintptr_t *live, size_t nlive, int glibc,
                             int prio, int root, uint64_t leaf);
/* Shares out v's Rss among the claims that overlap it (sorted, by
 * address), by the pages the kernel says are resident in each, the lower
 * prio first where they overlap; returns the bytes no claim holds. */
double pp_claims_count(pp_claims *cs, const pp_vma *v);
void pp_claims_free(pp_claims *cs);
#endif
