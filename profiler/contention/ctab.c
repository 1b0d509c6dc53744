/* ctab.c: cumulative tables of contention records, for the mutex and
 * block profiles.
 *
 * Records are keyed by (stack, labels) and hold the events and delay
 * recorded so far, already scaled as Go scales them (contention.c). They
 * are appended to one mmap'd reservation and never move, so a record's
 * stack can be read without the lock; only the two counters change.
 * Record ids are offsets in 16-byte units. Nothing here calls malloc: the
 * lock hooks run inside allocators (jemalloc takes pthread mutexes).
 */
#define _GNU_SOURCE
#include "ctab.h"
#include "base/base.h"
#include "labels/labels.h"
#include "model/model.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STORE_MAX (256ull << 20)

static size_t rec_bytes(size_t nframes) /* malloc-safe */
{
    return (sizeof(pp_crec) + nframes * sizeof(uint64_t) + 15) & ~(size_t)15;
}

/* malloc-safe */
const pp_crec *pp_ctab_rec(const pp_ctab *t, uint32_t id)
{
    return (const pp_crec *)(t->store + (size_t)id * 16);
}

/* malloc-safe */
void pp_ctab_add(pp_ctab *t, const uint64_t *pcs, size_t npcs, const pprof_labels *labels, int64_t count,
                 int64_t delay_ns)
{
    uint64_t h = 0x84222325cbf29ce4ull ^ npcs ^ (uint64_t)(uintptr_t)labels;
    for (size_t i = 0; i < npcs; i++)
        h = (h ^ pcs[i]) * 0x100000001b3ull, h ^= h >> 29;
    if (!pp_mutex_lock_hook(&t->lock)) {
        atomic_fetch_add_explicit(&t->lost, 1, memory_order_relaxed);
        return;
    }
    if (!t->store) {
        void *p = mmap(NULL, STORE_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            goto out;
        t->store = p;
        t->used = 16; /* id 0 is none */
    }
    uint32_t *b = &t->buckets[h & (PP_CTAB_BUCKETS - 1)];
    for (uint32_t id = *b; id; id = pp_ctab_rec(t, id)->next) {
        pp_crec *r = (pp_crec *)pp_ctab_rec(t, id);
        if (r->hash == h && r->labels == labels && r->nframes == npcs && !memcmp(r->pcs, pcs, npcs * 8)) {
            r->count += count;
            r->delay_ns += delay_ns;
            goto out;
        }
    }
    size_t bytes = rec_bytes(npcs);
    if (t->used + bytes > STORE_MAX)
        goto out;
    uint32_t id = (uint32_t)(t->used / 16);
    pp_crec *r = (pp_crec *)(t->store + t->used);
    r->nframes = (uint32_t)npcs;
    r->hash = h;
    r->labels = labels;
    r->count = count;
    r->delay_ns = delay_ns;
    memcpy(r->pcs, pcs, npcs * 8);
    r->next = *b;
    *b = id;
    t->used += bytes;
    t->last = id;
    t->nrecords++;
out:
    pp_mutex_unlock(&t->lock);
}

int pp_ctab_snap(pp_ctab *t, pp_ccount **out, size_t *n)
{
    for (;;) {
        pp_mutex_lock(&t->lock);
        size_t want = (size_t)t->nrecords;
        pp_mutex_unlock(&t->lock);
        pp_ccount *c = malloc((want + 1) * sizeof *c);
        if (!c)
            return pp_fail(PPROF_ENOMEM);
        pp_mutex_lock(&t->lock);
        if (t->nrecords > want) {
            pp_mutex_unlock(&t->lock);
            free(c);
            continue;
        }
        size_t k = 0;
        if (t->nrecords)
            for (uint32_t id = 1;; id += (uint32_t)(rec_bytes(pp_ctab_rec(t, id)->nframes) / 16)) {
                const pp_crec *r = pp_ctab_rec(t, id);
                c[k++] = (pp_ccount){id, r->count, r->delay_ns};
                if (id == t->last)
                    break;
            }
        pp_mutex_unlock(&t->lock);
        *out = c;
        *n = k;
        return 0;
    }
}

pprof_profile *pp_ctab_build(const pp_ctab *t, const pp_ccount *base, size_t nbase, const pp_ccount *now,
                             size_t nnow)
{
    static const pprof_value_type types[] = {{"contentions", "count"}, {"delay", "nanoseconds"}};
    pprof_profile *p = pp_profile_new(types, 2, types[0], 1);
    if (!p)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < nnow; i++) {
        int64_t c0 = 0, d0 = 0;
        while (base && j < nbase && base[j].rec < now[i].rec)
            j++;
        if (base && j < nbase && base[j].rec == now[i].rec)
            c0 = base[j].count, d0 = base[j].delay_ns;
        int64_t v[2] = {now[i].count - c0, now[i].delay_ns - d0};
        if (!v[0] && !v[1])
            continue;
        const pp_crec *r = pp_ctab_rec(t, now[i].rec);
        const pprof_label *pairs = NULL;
        size_t np = r->labels ? pp_labels_pairs(r->labels, &pairs) : 0;
        if (pp_profile_append(p, r->pcs, r->nframes, v, pairs, np, NULL, 0)) {
            pprof_profile_free(p);
            return NULL;
        }
    }
    return p;
}

void pp_ctab_fork_prepare(pp_ctab *t) { pp_mutex_lock(&t->lock); }
void pp_ctab_fork_parent(pp_ctab *t) { pp_mutex_unlock(&t->lock); }
void pp_ctab_fork_child(pp_ctab *t) { t->lock = (pp_mutex)PP_MUTEX_INIT; }
