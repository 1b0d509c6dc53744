/* store.c: the malloc-safe record store (see store.h). */
#define _GNU_SOURCE
#include "store.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* malloc-safe */
static void *reserve(size_t bytes)
{
    return pp_map(bytes, PROT_READ | PROT_WRITE, MAP_NORESERVE, "stacks of heap, lock and mmap samples");
}

/* malloc-safe */
static size_t rec_bytes(size_t nframes)
{
    return (sizeof(pp_rec) + nframes * sizeof(uint64_t) + 15) & ~(size_t)15;
}

/* malloc-safe */
pp_rec *pp_store_rec(const pp_store *s, uint32_t id)
{
    PP_ASSERT(id != 0 && (size_t)id * 16 < s->max); /* store.h: 16-byte units, 0 is none */
    return (pp_rec *)(s->mem + (size_t)id * 16);
}

/* malloc-safe */
static uint64_t key_hash(const uint64_t *pcs, size_t n, const void *labels, uint64_t key)
{
    uint64_t h = 0x84222325cbf29ce4ull ^ n ^ (key << 17) ^ (uint64_t)(uintptr_t)labels;
    for (size_t i = 0; i < n; i++)
        h = (h ^ pcs[i]) * 0x100000001b3ull, h ^= h >> 29;
    return h;
}

/* malloc-safe */
uint32_t pp_store_find_locked(pp_store *s, const uint64_t *pcs, size_t n, const pprof_labels *labels,
                              uint64_t key)
{
    PP_ASSERT(pp_mutex_held(&s->lock));
    if (!s->mem) {
        PP_ASSERT(s->nbuckets && !(s->nbuckets & (s->nbuckets - 1))); /* a power of two */
        char *mem = reserve(s->max);
        uint32_t *b = reserve((size_t)s->nbuckets * sizeof *b);
        if (!mem || !b) {
            if (mem)
                pp_unmap(mem, s->max);
            if (b)
                pp_unmap(b, (size_t)s->nbuckets * sizeof *b);
            return 0;
        }
        s->mem = mem;
        s->buckets = b;
    }
    uint64_t h = key_hash(pcs, n, labels, key);
    uint32_t *b = &s->buckets[h & (s->nbuckets - 1)];
    for (uint32_t id = *b; id; id = pp_store_rec(s, id)->next) {
        pp_rec *r = pp_store_rec(s, id);
        if (r->hash == h && r->key == key && r->labels == labels && r->nframes == n &&
            memcmp(r->pcs, pcs, n * sizeof *pcs) == 0)
            return id;
    }
    size_t bytes = rec_bytes(n);
    if (s->used + bytes > s->max || (s->used + bytes) / 16 > UINT32_MAX)
        return 0;
    uint32_t id = (uint32_t)(s->used / 16);
    pp_rec *r = pp_store_rec(s, id);
    r->nframes = (uint32_t)n;
    r->seq = (uint32_t)atomic_load(&s->nrecords);
    r->hash = h;
    r->key = key;
    r->labels = labels;
    r->c[0] = r->c[1] = 0;
    memcpy(r->pcs, pcs, n * sizeof *pcs);
    r->next = *b;
    *b = id;
    s->used += bytes;
    s->last = id;
    atomic_fetch_add(&s->nrecords, 1);
    return id;
}

/* malloc-safe */
void pp_store_add(pp_store *s, const uint64_t *pcs, size_t n, const pprof_labels *labels, uint64_t key,
                  int64_t c0, int64_t c1)
{
    if (!pp_mutex_lock_hook(&s->lock)) {
        atomic_fetch_add_explicit(&s->lost, 1, memory_order_relaxed);
        return;
    }
    uint32_t id = pp_store_find_locked(s, pcs, n, labels, key);
    if (id) {
        pp_rec *r = pp_store_rec(s, id);
        r->c[0] += c0;
        r->c[1] += c1;
    } else {
        atomic_fetch_add_explicit(&s->lost, 1, memory_order_relaxed);
    }
    pp_mutex_unlock(&s->lock);
}

int pp_store_snap_take(pp_store *s, pp_store_snap *out)
{
    out->c = NULL;
    out->n = 0;
    for (;;) {
        size_t cap = (size_t)atomic_load(&s->nrecords) + 64;
        pp_store_count *c = malloc(cap * sizeof *c);
        if (!c)
            return pp_fail(PPROF_ENOMEM);
        pp_mutex_lock(&s->lock);
        size_t n = (size_t)atomic_load(&s->nrecords);
        if (n > cap) { /* records were added meanwhile */
            pp_mutex_unlock(&s->lock);
            free(c);
            continue;
        }
        size_t k = 0;
        if (n)
            for (uint32_t id = 1;; id += (uint32_t)(rec_bytes(pp_store_rec(s, id)->nframes) / 16)) {
                const pp_rec *r = pp_store_rec(s, id);
                PP_ASSERT(k < n); /* records never move nor go away: n counts them all */
                c[k++] = (pp_store_count){id, {r->c[0], r->c[1]}};
                if (id == s->last)
                    break;
            }
        pp_mutex_unlock(&s->lock);
        out->c = c;
        out->n = k;
        return 0;
    }
}

void pp_store_snap_free(pp_store_snap *snap)
{
    free(snap->c);
    snap->c = NULL;
    snap->n = 0;
}

const pp_store_count *pp_store_base(const pp_store_snap *base, size_t *cursor, uint32_t rec)
{
    if (!base)
        return NULL;
    while (*cursor < base->n && base->c[*cursor].rec < rec)
        (*cursor)++;
    return *cursor < base->n && base->c[*cursor].rec == rec ? &base->c[*cursor] : NULL;
}

void pp_store_fork_prepare(pp_store *s) { pp_mutex_lock(&s->lock); }
void pp_store_fork_parent(pp_store *s) { pp_mutex_unlock(&s->lock); }
void pp_store_fork_child(pp_store *s) { s->lock = (pp_mutex)PP_MUTEX_INIT; }
