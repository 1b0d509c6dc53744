/* test_heap_delta.c: the arithmetic of heap windows, exactly, on synthetic
 * raw records (no hooks: this runs under the sanitizers too).
 * test-labels: quick
 *
 * Records are entered through the table API with fake stacks (addresses
 * no real sample has), and profiles are built from snapshots of the counts
 * as recorders build them. Checked: consecutive windows add up to the
 * whole; in-use values are the live heap at the window's end, never a
 * difference; a record is dropped only when every value is zero; values
 * are unsampled per record with Go's scale; raw keeps the counts; the
 * optional in-use change; labels and the numeric `bytes` label; unbiased
 * totals over many records of one sample each (truncating each record's
 * estimate, as Go does, loses half an object per record); the marks frees
 * read before the live table. Bytes are the
 * requested ones (LIBPPROF_HEAP_BYTES=requested), so the fake sizes are
 * the bytes; the allocator's bytes are test_heap_hooks' and test_heap's.
 */
#include "pprof.h"
#include "check.h"
#include "heap.h"
#include "labels.h"
#include "profile.h"

#include <math.h>
#include <string.h>

#define FAKE 0x7ead0000000ull /* fake call sites: no real stack has them */
#define RATE 1000

static char objects[64][4096] __attribute__((aligned(4096))); /* fake addresses */

/* pp_heap_map, which frees read before the live table: a granule stays
 * marked while any live object starts in it, its neighbour is not, and
 * granules 4 GiB apart share a mark. The addresses are never touched. */
#define GRANULE (1u << PP_GRANULE_SHIFT)
static char granules[4 * GRANULE] __attribute__((aligned(GRANULE)));

static void map_marks(void)
{
    char *a = granules, *b = granules + 64, *next = granules + GRANULE, *far = (char *)((uintptr_t)granules + (1ull << 32));
    uint64_t pcs[2] = {FAKE + 0x800, FAKE + 0x1000};
    CHECK(!pp_heap_maybe_sampled(a) && !pp_heap_maybe_sampled(next));
    CHECK(pp_heap_table_alloc(a, 8, pcs, 2, NULL) == 0);
    CHECK(pp_heap_table_alloc(b, 8, pcs, 2, NULL) == 0);
    CHECK(pp_heap_table_alloc(far, 8, pcs, 2, NULL) == 0);
    CHECK(pp_heap_maybe_sampled(a) && pp_heap_maybe_sampled(a + GRANULE - 1) && !pp_heap_maybe_sampled(next));
    char *order[3] = {a, far, b};
    for (int i = 0; i < 3; i++) {
        CHECK(pp_heap_maybe_sampled(a));
        uint32_t rec = pp_heap_table_take(order[i]);
        CHECK(rec != 0);
        pp_heap_table_count_free(rec);
    }
    CHECK(!pp_heap_maybe_sampled(a) && !pp_heap_maybe_sampled(b) && !pp_heap_maybe_sampled(far));
}

static void alloc_at(int obj, uint64_t site, size_t size, const pprof_labels *labels)
{
    uint64_t pcs[2] = {FAKE + site, FAKE + 0x1000};
    CHECK(pp_heap_table_alloc(objects[obj], size, pcs, 2, labels) == 0);
}

static void free_obj(int obj)
{
    uint32_t rec = pp_heap_table_take(objects[obj]);
    CHECK(rec != 0);
    pp_heap_table_count_free(rec);
}

/* The sample whose leaf is FAKE + site, with `size` bytes; NULL if none. */
static const pprof_sample *find(const pprof_profile *p, uint64_t site, size_t size)
{
    for (size_t i = 0; i < p->nsamples; i++)
        if (p->samples[i].locations[0]->address == FAKE + site && p->samples[i].nnum_labels == 1 &&
            p->samples[i].num_labels[0].value == (int64_t)size)
            return &p->samples[i];
    return NULL;
}

static size_t count_fake(const pprof_profile *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nsamples; i++) {
        uint64_t a = p->samples[i].locations[0]->address;
        n += a >= FAKE && a < FAKE + 0x1000;
    }
    return n;
}

/* Builds and finishes (symbolizes) a profile, as recorders do. */
static pprof_profile *build(const pp_heap_snap *base, const pp_heap_snap *now, int flags)
{
    pprof_profile *p = pp_heap_build(base, now, RATE, flags);
    CHECK(p && pp_profile_finish(p, PPROF_SYMBOLIZE_DEFAULT, NULL) == 0);
    return p;
}

static pp_heap_snap snap(void)
{
    pp_heap_snap s;
    CHECK(pp_heap_snap_take(&s) == 0);
    return s;
}

static double estimate(int64_t count, int64_t size, int bytes)
{
    double scale = 1.0 / (1.0 - exp(-(double)size / RATE));
    return bytes ? (double)count * (double)size * scale : (double)count * scale;
}

/* v is the estimate, give or take the one carried by rounding. */
static int near(int64_t v, int64_t count, int64_t size, int bytes)
{
    return fabs((double)v - estimate(count, size, bytes)) <= 1.0;
}

int main(void)
{
    pp_heap_bytes_requested = 1; /* LIBPPROF_HEAP_BYTES=requested */
    pprof_labels *web;
    pprof_label pair = {"handler", "/web"};
    CHECK(pprof_labels_new(&pair, 1, &web) == 0);
    const pprof_labels *kept = pp_labels_cumulative(web);

    pp_heap_snap s0 = snap();
    /* window 1: site 1 allocates 3 x 100 B, frees one; site 2 one 5000 B */
    alloc_at(0, 1, 100, NULL);
    alloc_at(1, 1, 100, NULL);
    alloc_at(2, 1, 100, NULL);
    free_obj(0);
    alloc_at(3, 2, 5000, kept);
    pp_heap_snap s1 = snap();
    /* window 2: site 1 allocates 1 more and frees 2; site 3 allocates and frees */
    alloc_at(4, 1, 100, NULL);
    free_obj(1);
    free_obj(2);
    alloc_at(5, 3, 64, NULL);
    free_obj(5);
    pp_heap_snap s2 = snap();
    /* window 3: nothing happens to the fake records */
    pp_heap_snap s3 = snap();

    pprof_profile *w1 = build(&s0, &s1, PP_HEAP_RAW);
    pprof_profile *w2 = build(&s1, &s2, PP_HEAP_RAW);
    pprof_profile *w3 = build(&s2, &s3, PP_HEAP_RAW | PP_HEAP_INUSE_CHANGE);
    pprof_profile *all = build(&s0, &s2, PP_HEAP_RAW);
    CHECK(w1 && w2 && w3 && all);

    /* window 1, raw counts: alloc = the window's, in-use = live at its end */
    const pprof_sample *a = find(w1, 1, 100), *b = find(w1, 2, 5000);
    CHECK(a && a->values[0] == 3 && a->values[1] == 300 && a->values[2] == 2 && a->values[3] == 200);
    CHECK(b && b->values[0] == 1 && b->values[1] == 5000 && b->values[2] == 1 && b->values[3] == 5000);
    CHECK(b && b->nlabels == 1 && !strcmp(b->labels[0].key, "handler") && !strcmp(b->labels[0].value, "/web"));
    CHECK(a && a->nlabels == 0 && !strcmp(a->num_labels[0].key, "bytes"));
    /* window 2: site 2 allocated nothing but is live: kept, alloc 0 */
    a = find(w2, 1, 100);
    b = find(w2, 2, 5000);
    const pprof_sample *c = find(w2, 3, 64);
    CHECK(a && a->values[0] == 1 && a->values[1] == 100 && a->values[2] == 1 && a->values[3] == 100);
    CHECK(b && b->values[0] == 0 && b->values[1] == 0 && b->values[2] == 1 && b->values[3] == 5000);
    CHECK(c && c->values[0] == 1 && c->values[2] == 0); /* allocated and freed in the window */
    /* consecutive windows add up to the whole, in-use is the end's */
    const pprof_sample *t = find(all, 1, 100);
    CHECK(t && t->values[0] == 4 && t->values[1] == 400 && t->values[2] == 1 && t->values[3] == 100);
    CHECK(find(w1, 1, 100)->values[0] + find(w2, 1, 100)->values[0] == t->values[0]);
    /* window 3: nothing allocated; live records stay, site 3 (all zero) is dropped */
    CHECK(count_fake(w3) == 2);
    a = find(w3, 1, 100);
    b = find(w3, 2, 5000);
    CHECK(a && a->values[0] == 0 && a->values[2] == 1 && a->values[3] == 100 && a->values[4] == 0);
    CHECK(b && b->values[2] == 1 && b->values[5] == 0);
    CHECK(!find(w3, 3, 64));
    /* in-use change over window 2: site 1 went from 2 live to 1 */
    pprof_profile *w2c = build(&s1, &s2, PP_HEAP_RAW | PP_HEAP_INUSE_CHANGE);
    a = find(w2c, 1, 100);
    CHECK(a && a->values[4] == -1 && a->values[5] == -100);

    /* unsampled values: Go's scale per record, alloc and in-use apart */
    pprof_profile *u = build(&s0, &s1, 0);
    a = find(u, 1, 100);
    CHECK(a && near(a->values[0], 3, 100, 0) && near(a->values[1], 3, 100, 1));
    CHECK(a && near(a->values[2], 2, 100, 0) && near(a->values[3], 2, 100, 1));
    CHECKF(a && a->values[1] > 3 * 100 * 10, "scale ~10.5 at size 100 and rate 1000");
    CHECK(u->period == RATE && !strcmp(u->period_type.type, "space") && !strcmp(u->types[3].type, "inuse_space"));
    CHECK(u->default_type == -1);
    pprof_profile *ua = build(&s0, &s1, PP_HEAP_ALLOCS);
    CHECK(ua && ua->default_type == 1 && !strcmp(ua->types[1].type, "alloc_space"));

    /* an address entered twice (its free was not seen) counts as freed */
    alloc_at(6, 4, 32, NULL);
    alloc_at(6, 4, 32, NULL);
    pp_heap_snap s4 = snap();
    pprof_profile *tw = build(NULL, &s4, PP_HEAP_RAW);
    a = find(tw, 4, 32);
    CHECK(a && a->values[0] == 2 && a->values[2] == 1);
    free_obj(6);
    CHECK(pp_heap_table_take(objects[6]) == 0); /* gone */

    /* unbiased totals: 3,000 records of one sample each, every size apart
     * (within one of the sum, and one more for a record of the test's own
     * sampled among them) */
    pp_heap_snap s5 = snap();
    double want_objects = 0, want_bytes = 0;
    for (int64_t size = 100; size < 3100; size++) {
        alloc_at(7, 5, (size_t)size, NULL);
        free_obj(7);
        want_objects += estimate(1, size, 0);
        want_bytes += estimate(1, size, 1);
    }
    pp_heap_snap s6 = snap();
    pprof_profile *many = build(&s5, &s6, 0);
    int64_t objects = 0, bytes = 0;
    for (size_t i = 0; many && i < many->nsamples; i++) {
        if (many->samples[i].locations[0]->address != FAKE + 5)
            continue; /* the test's own allocations, sampled meanwhile */
        objects += many->samples[i].values[0];
        bytes += many->samples[i].values[1];
    }
    CHECKF(fabs((double)objects - want_objects) <= 2 && fabs((double)bytes - want_bytes) <= 2,
           "objects %lld (estimates add up to %.1f: %+.3f%%), bytes %lld (%.1f)", (long long)objects, want_objects,
           100 * ((double)objects / want_objects - 1), (long long)bytes, want_bytes);

    /* the encoders: the text format too */
    pprof_buffer buf = {0};
    CHECK(pprof_profile_write(w1, PPROF_FORMAT_TEXT, pprof_writer_buffer(&buf)) == 0);
    CHECK(buf.len > 20 && !memcmp(buf.data, "heap profile: ", 14));
    CHECK(buf.data && strstr(buf.data, "@ heap/2000\n"));
    CHECK(buf.data && strstr(buf.data, "# labels: {\"handler\":\"/web\"}"));
    pprof_buffer_free(&buf);
    CHECK(pprof_profile_write(w1, PPROF_FORMAT_PROTO, pprof_writer_buffer(&buf)) == 0);
    pprof_buffer_free(&buf);

    pprof_profile *profiles[] = {w1, w2, w3, all, w2c, u, ua, tw, many};
    for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++)
        pprof_profile_free(profiles[i]);
    pp_heap_snap *snaps[] = {&s0, &s1, &s2, &s3, &s4, &s5, &s6};
    for (size_t i = 0; i < sizeof snaps / sizeof *snaps; i++)
        pp_heap_snap_free(snaps[i]);
    pprof_labels_unref(web);
    map_marks();
    return check_summary("test_heap_delta");
}
