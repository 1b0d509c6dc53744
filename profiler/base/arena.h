/* arena.h: bump allocator freed all at once (see arena.c). */
#ifndef PP_ARENA_H
#define PP_ARENA_H
#include <stddef.h>

/* Embeddable: a zeroed pp_arena is empty and ready. */
typedef struct pp_arena {
    struct pp_arena_chunk *head;
    size_t bytes;          /* malloc'd by its chunks */
} pp_arena;

pp_arena *pp_arena_new(void);
/* Zeroed, 16-byte aligned memory, or NULL. */
void *pp_arena_alloc(pp_arena *a, size_t size);
/* Zeroed memory aligned to `align` (a power of two up to 16), or NULL. */
void *pp_arena_alloc_aligned(pp_arena *a, size_t size, size_t align);
/* A copy of s ("" for NULL), or NULL when out of memory. */
const char *pp_arena_strdup(pp_arena *a, const char *s);
/* Frees everything allocated from a; it stays usable, empty. */
void pp_arena_release(pp_arena *a);
/* Releases and frees an arena from pp_arena_new. */
void pp_arena_free(pp_arena *a);
#endif
