/* alloc_stats.h: what the allocator says it holds (alloc_stats.c). */
#ifndef PP_ALLOC_STATS_H
#define PP_ALLOC_STATS_H
#include <stdint.h>

typedef struct pp_alloc_stats {
    const char *name;   /* "glibc malloc", "jemalloc", "tcmalloc", or the object's file name */
    int known;          /* the counts below were read */
    uint64_t allocated; /* bytes in live objects, as the allocator counts them */
    uint64_t resident;  /* bytes it holds resident (0: it does not say) */
    uint64_t mapped;    /* bytes it has mapped */
    char text[256];     /* its statistics, one line for a comment */
} pp_alloc_stats;

/* Reads the next allocator's own statistics (glibc's mallinfo2,
 * jemalloc's mallctl, tcmalloc's MallocExtension), looked up at run time.
 */
void pp_alloc_stats_read(pp_alloc_stats *s);
#endif
