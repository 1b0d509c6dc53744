/* arena.c: bump allocation for strings and arrays freed together: a
 * profile's (model/), the symbolizer's caches and snapshots (symbolize/).
 *
 * Pieces come from chunks that are released together: the first of 2 KiB,
 * each next twice the one before up to 64 KiB (a piece larger than that
 * gets a chunk of its own size), so an arena holds little more than it
 * was asked for when small (a history keeps hundreds of small profiles)
 * and makes few calls to malloc when large.
 * Not thread-safe: one owner per arena. Never used from signal handlers or
 * malloc hooks (chunks come from malloc).
 */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_FIRST (2 * 1024)
#define CHUNK_MAX (64 * 1024)

struct pp_arena_chunk {
    struct pp_arena_chunk *next;
    size_t used, size;
    max_align_t data[];
};

pp_arena *pp_arena_new(void)
{
    return calloc(1, sizeof(pp_arena));
}

void *pp_arena_alloc_aligned(pp_arena *a, size_t size, size_t align)
{
    struct pp_arena_chunk *c = a->head;
    size_t off = c ? (c->used + align - 1) & ~(align - 1) : 0;
    if (!c || off > c->size || c->size - off < size) {
        size_t n = !c ? CHUNK_FIRST : c->size < CHUNK_MAX / 2 ? 2 * c->size : CHUNK_MAX;
        if (n < size)
            n = size;
        c = malloc(sizeof(struct pp_arena_chunk) + n);
        if (!c)
            return NULL;
        c->size = n;
        a->bytes += sizeof(struct pp_arena_chunk) + n;
        c->next = a->head;
        a->head = c;
        off = 0;
    }
    void *p = (char *)c->data + off;
    c->used = off + size;
    return memset(p, 0, size);
}

void *pp_arena_alloc(pp_arena *a, size_t size)
{
    return pp_arena_alloc_aligned(a, size, 16);
}

const char *pp_arena_strdup(pp_arena *a, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *d = pp_arena_alloc_aligned(a, n, 1);
    return d ? memcpy(d, s, n) : NULL;
}

void pp_arena_release(pp_arena *a)
{
    for (struct pp_arena_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    a->head = NULL;
    a->bytes = 0;
}

void pp_arena_free(pp_arena *a)
{
    if (!a)
        return;
    pp_arena_release(a);
    free(a);
}
