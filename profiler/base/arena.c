/* arena.c: bump allocation for a profile's strings and arrays.
 *
 * A profile is built once and freed whole, so its many small pieces come
 * from chunks that are released together. Not thread-safe: one builder owns
 * an arena. Never used from signal handlers.
 */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN (64 * 1024)

struct chunk {
    struct chunk *next;
    size_t used, size;
    max_align_t data[];
};

struct pp_arena {
    struct chunk *head;
};

pp_arena *pp_arena_new(void)
{
    return calloc(1, sizeof(pp_arena));
}

void *pp_arena_alloc(pp_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    struct chunk *c = a->head;
    if (!c || c->size - c->used < size) {
        size_t n = size > CHUNK_MIN ? size : CHUNK_MIN;
        c = malloc(sizeof(struct chunk) + n);
        if (!c)
            return NULL;
        c->size = n;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    return memset(p, 0, size);
}

const char *pp_arena_strdup(pp_arena *a, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *d = pp_arena_alloc(a, n);
    return d ? memcpy(d, s, n) : NULL;
}

void pp_arena_free(pp_arena *a)
{
    if (!a)
        return;
    for (struct chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}
