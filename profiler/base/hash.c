/* hash.c: the hash-table index and the uint64-keyed table (see hash.h). */
#include "hash.h"
#include "arena.h"

#include <stdlib.h>
#include <string.h>

int pp_reserve(void *arrp, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c <= n)
        c *= 2;
    void *a = realloc(*(void **)arrp, c * size);
    if (!a)
        return -1;
    *(void **)arrp = a;
    *cap = c;
    return 0;
}

size_t pp_upper_bound(const void *arr, size_t n, size_t size, size_t off, uint64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t k;
        memcpy(&k, (const char *)arr + mid * size + off, sizeof k);
        if (k <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int grow(pp_index *ix)
{
    size_t nslots = ix->slot ? (ix->mask + 1) * 2 : 256;
    if (nslots / 2 > UINT32_MAX)
        return -1;
    uint32_t *slot = calloc(nslots, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < ix->n; i++) {
        size_t j = ix->hash[i] & (nslots - 1);
        while (slot[j])
            j = (j + 1) & (nslots - 1);
        slot[j] = (uint32_t)(i + 1);
    }
    free(ix->slot);
    ix->slot = slot;
    ix->mask = nslots - 1;
    return 0;
}

uint32_t pp_index_add(pp_index *ix, uint64_t h)
{
    if (pp_reserve(&ix->hash, &ix->cap, ix->n, sizeof *ix->hash) < 0)
        return 0;
    if ((!ix->slot || (ix->n + 1) * 2 > ix->mask + 1) && grow(ix) < 0)
        return 0;
    size_t j = (uint32_t)h & ix->mask;
    while (ix->slot[j])
        j = (j + 1) & ix->mask;
    ix->hash[ix->n] = (uint32_t)h;
    ix->slot[j] = (uint32_t)++ix->n;
    return (uint32_t)ix->n;
}

void pp_index_free(pp_index *ix)
{
    free(ix->slot);
    free(ix->hash);
    *ix = (pp_index){0};
}

void *pp_table_find(const pp_table *t, uint64_t key)
{
    PP_INDEX_PROBE(&t->ix, pp_hash_u64(key), j) {
        unsigned char *e = pp_table_at(t, t->ix.slot[j] - 1);
        uint64_t k;
        memcpy(&k, e, sizeof k);
        if (k == key)
            return e;
    }
    return NULL;
}

void *pp_table_add(pp_table *t, uint64_t key)
{
    if (pp_reserve(&t->e, &t->cap, t->ix.n, t->size) < 0)
        return NULL;
    uint32_t id = pp_index_add(&t->ix, pp_hash_u64(key));
    if (!id)
        return NULL;
    unsigned char *e = pp_table_at(t, id - 1);
    memset(e, 0, t->size);
    memcpy(e, &key, sizeof key);
    return e;
}

void pp_table_free(pp_table *t)
{
    free(t->e);
    t->e = NULL;
    t->cap = 0;
    pp_index_free(&t->ix);
}

/* The id of s under hash h, or -1. */
static int64_t strtab_probe(const pp_strtab *t, const char *s, uint64_t h)
{
    PP_INDEX_PROBE(&t->ix, h, j)
        if (strcmp(t->strs[t->ix.slot[j] - 1], s) == 0)
            return t->ix.slot[j] - 1;
    return -1;
}

int64_t pp_strtab_find(const pp_strtab *t, const char *s)
{
    if (!s)
        s = "";
    return strtab_probe(t, s, pp_hash_str(s));
}

int64_t pp_strtab_id(pp_strtab *t, const char *s, struct pp_arena *copy)
{
    if (!s)
        s = "";
    uint64_t h = pp_hash_str(s);
    int64_t found = strtab_probe(t, s, h);
    if (found >= 0)
        return found;
    if (pp_reserve(&t->strs, &t->cap, t->ix.n, sizeof *t->strs) < 0)
        return -1;
    const char *d = copy ? pp_arena_strdup(copy, s) : s;
    uint32_t id = d ? pp_index_add(&t->ix, h) : 0;
    if (!id)
        return -1;
    t->strs[id - 1] = d;
    return id - 1;
}

void pp_strtab_free(pp_strtab *t)
{
    free(t->strs);
    pp_index_free(&t->ix);
    *t = (pp_strtab){0};
}
