/* heap_profile.c: raw heap records -> heap and allocation profiles.
 *
 * A window is two copies of the records' counts (pp_heap_snap_take), taken
 * at its start and its end; the profile is computed from them before any
 * scaling, record by record:
 *   alloc  = allocations during the window (end - start)
 *   in-use = allocations - frees at the end: the live heap then, never a
 *            difference (Go's heap?seconds=N subtracts it, which is wrong)
 *   in-use change (optional) = in-use at the end - in-use at the start.
 * A record is dropped only when every value it would show is zero, so an
 * object allocated before the window and still live keeps its in-use
 * values. Each pair is then unsampled as Go does, per record: records are
 * keyed by the requested size, which is what the countdown counted, so
 * scale = 1 / (1 - e^(-requested/rate)) exactly, and the numeric label
 * `bytes` is that size.
 *
 * Bytes are counted as the allocator counts them: each object is the
 * block an unsampled request of its size gets (its usable size: a 204-byte
 * request is a 208-byte block in glibc, 224 in jemalloc), as Go's heap
 * profile (size classes) and jemalloc's own profiler do, so the totals
 * reconcile with the allocator's statistics. Objects are estimated with
 * the probability that their request was sampled and each weighs its
 * block, so the byte totals stay unbiased. LIBPPROF_HEAP_BYTES=requested
 * counts the requested bytes instead. Unlike Go, the estimates are not
 * truncated record by record (with many records of few samples that loses
 * half an object each: -2.4% of the objects in a churn of 10,000 sizes):
 * each value type carries its rounding remainder from record to record,
 * so every record is within one of its estimate and the profile's totals
 * within one of the sum of the estimates. Records are distinct (stack,
 * labels, size), so samples are appended without merging, their stacks
 * read in place (records never move).
 *
 * pprof_heap_stats_get is here too: it reads the sampler, the tables and
 * the profiler's own live heap, above all of them.
 */
#include "heap.h"
#include "labels/labels.h"
#include "model/model.h"

#include <math.h>
#include <string.h>

/* A value type's running sum of estimates and of what was written. */
typedef struct carry {
    double exact;
    int64_t out;
} carry;

/* The next record's value: its estimate x plus the remainder carried. */
static int64_t carried(carry *c, double x)
{
    c->exact += x;
    int64_t total = llround(c->exact);
    int64_t v = total - c->out;
    c->out = total;
    return v;
}

/* Go's scaleHeapSample: count objects requested with `size` bytes each,
 * sampled at `rate`, as estimated totals (objects, bytes of `block` each),
 * rounded through the carries c[0] and c[1]. */
static void unsample(int64_t count, uint64_t size, uint64_t block, int64_t rate, carry *c, int64_t *v)
{
    double scale = rate <= 1 ? 1.0 : 1.0 / (1.0 - exp(-(double)size / (double)rate));
    double objects = size ? (double)count * scale : 0;
    v[0] = carried(&c[0], objects);
    v[1] = carried(&c[1], objects * (double)block);
}

/* The bytes an object requested with `size` counts for. */
static uint64_t block_bytes(uint64_t size)
{
    if (size == 0 || pp_heap_bytes_requested || !pp_next_ready())
        return size;
    return pp_next_block_size(size);
}

int64_t pp_heap_own_inuse(int64_t rate)
{
    pp_heap_snap s;
    if (rate <= 0 || pp_heap_snap_take(&s) != 0)
        return 0;
    carry cr[2] = {{0, 0}};
    int64_t v[2], total = 0;
    for (size_t i = 0; i < s.n; i++) {
        const pp_rec *r = pp_heap_rec_get(s.c[i].rec);
        if (!pp_labels_is_own(r->labels))
            continue;
        unsample(s.c[i].c[0] - s.c[i].c[1], r->key, block_bytes(r->key), rate, cr, v);
        total += v[1];
    }
    pp_heap_snap_free(&s);
    return total;
}

int64_t pp_heap_inuse_each(const pp_heap_snap *now, int64_t rate, pp_heap_inuse_fn each, void *arg)
{
    carry cr[2] = {{0, 0}};
    int64_t v[2], total = 0;
    for (size_t i = 0; i < now->n; i++) {
        const pp_rec *r = pp_heap_rec_get(now->c[i].rec);
        int64_t live = now->c[i].c[0] - now->c[i].c[1];
        if (live <= 0 || pp_labels_is_own(r->labels))
            continue;
        unsample(live, r->key, block_bytes(r->key), rate, cr, v);
        if (v[1] && each) {
            each(r->pcs, r->nframes, r->labels, v[1], arg);
        }
        total += v[1];
    }
    return total;
}

static const pprof_value_type heap_types[] = {
    {"alloc_objects", "count"}, {"alloc_space", "bytes"},
    {"inuse_objects", "count"}, {"inuse_space", "bytes"},
    {"inuse_change_objects", "count"}, {"inuse_change_space", "bytes"},
};

/* The record's label pairs with `extra` (NULL: none) in key order, into
 * l (room for 65); returns their number. */
static size_t pairs_with(const pp_rec *r, const pprof_label *extra, pprof_label *l)
{
    const pprof_label *pairs = NULL;
    size_t np = r->labels ? pp_labels_pairs(r->labels, &pairs) : 0, n = 0, k = 0;
    for (; k < np && n < 64 && (!extra || strcmp(pairs[k].key, extra->key) < 0); k++)
        l[n++] = pairs[k];
    if (extra)
        l[n++] = *extra;
    for (; k < np && n < 65; k++)
        if (!extra || strcmp(pairs[k].key, extra->key))
            l[n++] = pairs[k];
    return n;
}

/* Appends the records of the window base..now to p (see pp_heap_build),
 * each sample with the label `extra` too. 0 or PPROF_ENOMEM. */
static int append_records(pprof_profile *p, const pp_heap_snap *base, const pp_heap_snap *now, int64_t rate,
                          int flags, const pprof_label *extra)
{
    int change = (flags & PP_HEAP_INUSE_CHANGE) != 0, only = (flags & PP_HEAP_INUSE_ONLY) != 0;
    size_t ntypes = only ? 2 : change ? 6 : 4, first = only ? 2 : 0;
    int64_t scale_rate = (flags & PP_HEAP_RAW) ? 1 : rate;
    size_t cursor = 0;
    carry cr[6] = {{0, 0}};
    for (size_t i = 0; i < now->n; i++) {
        const pp_store_count *c = &now->c[i], *b = pp_store_base(base, &cursor, c->rec);
        int64_t a0 = b ? b->c[0] : 0, f0 = b ? b->c[1] : 0;
        const pp_rec *r = pp_heap_rec_get(c->rec);
        int64_t alloc = c->c[0] - a0, inuse = c->c[0] - c->c[1];
        int64_t delta = inuse - (a0 - f0);
        int64_t v[6];
        uint64_t block = block_bytes(r->key);
        unsample(alloc, r->key, block, scale_rate, &cr[0], &v[0]);
        unsample(flags & PP_HEAP_INUSE_DELTA ? delta : inuse, r->key, block, scale_rate, &cr[2], &v[2]);
        if (change)
            unsample(delta, r->key, block, scale_rate, &cr[4], &v[4]);
        int any = 0;
        for (size_t k = first; k < first + ntypes; k++)
            any |= v[k] != 0;
        if (!any || pp_labels_is_own(r->labels))
            continue; /* the profiler's own allocations: pprof_heap_stats */
        pprof_label l[65];
        size_t nl = pairs_with(r, extra, l);
        pprof_num_label bytes = {"bytes", (int64_t)r->key, ""};
        if (pp_profile_append(p, r->pcs, r->nframes, v + first, l, nl, &bytes, 1) != 0)
            return PPROF_ENOMEM;
    }
    return 0;
}

/* Says in p why it is empty when no allocation ever reached the hooks
 * (checked after p's own allocations, which reach them when they bind). */
static pprof_profile *say_unhooked(pprof_profile *p)
{
    if (p && !pp_next_ready())
        pp_profile_add_comment(p, "no allocation has reached libpprof's malloc: it is not the program's here "
                                  "(libpprof loaded with dlopen, or a build without its hooks), so nothing is "
                                  "sampled; preload libpprof (LD_PRELOAD) or link it to profile allocations");
    return p;
}

pprof_profile *pp_heap_build(const pp_heap_snap *base, const pp_heap_snap *now, int64_t rate, int flags)
{
    int change = (flags & PP_HEAP_INUSE_CHANGE) != 0, only = (flags & PP_HEAP_INUSE_ONLY) != 0;
    size_t ntypes = only ? 2 : change ? 6 : 4, first = only ? 2 : 0;
    pprof_profile *p = pp_profile_new(heap_types + first, ntypes, (pprof_value_type){"space", "bytes"}, rate);
    if (!p)
        return NULL;
    p->default_type = only ? -1 : (flags & PP_HEAP_ALLOCS) ? 1 : change ? 3 : -1;
    if (append_records(p, base, now, rate, flags, NULL) != 0) {
        pprof_profile_free(p);
        return NULL;
    }
    return say_unhooked(p);
}

pprof_profile *pp_heap_build_labelled(const pp_heap_snap *const *snaps, const char *key, const char *const *values,
                                      size_t n, int64_t rate)
{
    pprof_profile *p = pp_profile_new(heap_types + 2, 2, (pprof_value_type){"space", "bytes"}, rate);
    for (size_t i = 0; p && i < n; i++) {
        pprof_label extra = {key, values[i]};
        if (append_records(p, NULL, snaps[i], rate, PP_HEAP_INUSE_ONLY, &extra) != 0) {
            pprof_profile_free(p);
            p = NULL;
        }
    }
    return say_unhooked(p);
}

/* Thread-safe. */
void pprof_heap_stats_get(pprof_heap_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out); /* reserved included */
    pp_heap_table_stats ts;
    pp_heap_table_stats_get(&ts);
    out->rate = pprof_heap_rate();
    pp_heap_sample_counts(&out->sampled, &out->unrecorded);
    out->records = ts.records;
    out->live_sampled = ts.live;
    out->table_bytes = ts.table_bytes;
    out->live_table_bytes = ts.live_bytes;
    out->frees_unseen = ts.deferred_lost;
    out->own_inuse_bytes = pp_heap_own_inuse(out->rate);
    pp_own_heap_stats(&out->own_heap_bytes, &out->own_heap_mapped, &out->own_heap_fallbacks);
}
