/* smaps.h: /proc/self/smaps, read into mappings (smaps.c). */
#ifndef PP_SMAPS_H
#define PP_SMAPS_H
#include <stddef.h>
#include <stdint.h>

typedef struct pp_vma {
    uintptr_t lo, hi;
    char perms[5];     /* "rw-p" */
    uint64_t rss;      /* Rss, bytes */
    uint64_t anon;     /* Anonymous, bytes */
    const char *path;  /* "" for an anonymous mapping; "[heap]", "[stack]", a file */
} pp_vma;

typedef struct pp_vmas {
    pp_vma *v;
    size_t n, cap;
    char *names;       /* the paths, one after another */
    size_t names_len, names_cap;
} pp_vmas;

/* Reads the calling process's mappings. 0, or a PPROF_E* code (recorded).
 * Allocates with malloc (the caller chooses the heap). */
int pp_smaps_read(pp_vmas *out);
void pp_smaps_free(pp_vmas *m);
#endif
