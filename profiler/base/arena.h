/* arena.h: bump allocator freed all at once (see arena.c). */
#ifndef PP_ARENA_H
#define PP_ARENA_H
#include <stddef.h>

typedef struct pp_arena pp_arena;

pp_arena *pp_arena_new(void);
/* Zeroed, 16-byte aligned memory, or NULL. */
void *pp_arena_alloc(pp_arena *a, size_t size);
/* A copy of s ("" for NULL), or NULL when out of memory. */
const char *pp_arena_strdup(pp_arena *a, const char *s);
void pp_arena_free(pp_arena *a);
#endif
