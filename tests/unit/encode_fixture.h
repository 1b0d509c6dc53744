/* encode_fixture.h: the hand-built profile and the decoding helpers that
 * test_encode.c and test_encode_stream.c share (one test program each;
 * included once per program).
 *
 * make_profile gives pprof_profile structs over static arrays (no builder;
 * the model indexes their strings and functions, pp_model_index): two
 * sample types, four samples with labels, six locations (one with an
 * inlined call, one without a mapping), two mappings, two comments.
 */
#ifndef PP_TEST_ENCODE_FIXTURE_H
#define PP_TEST_ENCODE_FIXTURE_H
#include "pprof.h"
#include "model.h"
#include "proto/profile.pb-c.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ------------------------------------------------------------ the profile */

static pprof_value_type types[] = {
    { "samples", "count" },
    { "cpu", "nanoseconds" },
};

static const char *comments[] = { "made by test_encode", "second comment" };

static pprof_mapping mappings[] = {
    { .id = 1, .start = 0x400000, .limit = 0x500000, .offset = 0x1000,
      .path = "/usr/bin/app", .build_id = "0123456789abcdef",
      .has_functions = 1, .has_filenames = 1, .has_line_numbers = 1 },
    { .id = 2, .start = 0x7f0000000000, .limit = 0x7f0000100000, .offset = 0,
      .path = "/lib/x86_64-linux-gnu/libc.so.6", .build_id = "",
      .has_functions = 0, .has_filenames = 0, .has_line_numbers = 0 },
};

/* innermost first: inlined_helper was inlined into main */
static const pprof_line lines1[] = {
    { "inlined_helper", "_Z14inlined_helperv", "app.c", 10 },
    { "main", "main", "app.c", 42 },
};
static const pprof_line lines2[] = { { "main", "main", "app.c", 50 } };
static const pprof_line lines4[] = { { "[truncated]", "[truncated]", "", 0 } };
static const pprof_line lines5[] = { { "helper", "helper", "other.c", 7 } };
static const pprof_line lines6[] = { { "helper", "helper", "app.c", 8 } };

static pprof_location locations[] = {
    { .id = 1, .address = 0x401234, .mapping_id = 1, .nlines = 2, .lines = lines1 },
    { .id = 2, .address = 0x401100, .mapping_id = 1, .nlines = 1, .lines = lines2 },
    { .id = 3, .address = 0x7f0000001234, .mapping_id = 2, .nlines = 0, .lines = NULL },
    { .id = 4, .address = PP_PC_TRUNCATED, .mapping_id = 0, .nlines = 1, .lines = lines4 },
    { .id = 5, .address = 0x402000, .mapping_id = 1, .nlines = 1, .lines = lines5 },
    { .id = 6, .address = 0x402100, .mapping_id = 1, .nlines = 1, .lines = lines6 },
};

static const pprof_location *stack0[] = { &locations[0], &locations[1] };
static const pprof_location *stack1[] = { &locations[2], &locations[1] };
static const pprof_location *stack3[] = { &locations[3], &locations[4], &locations[5],
                                          &locations[1] };
static const int64_t values0[] = { 3, 30000000 };
static const int64_t values1[] = { 1, 10000000 };
static const int64_t values2[] = { 2, 20000000 };
static const int64_t values3[] = { 1, 10000000 };
static const pprof_label labels0[] = { { "handler", "/api" }, { "req", "42" } };
static const pprof_label labels2[] = { { "handler", "/other" } };

static pprof_sample samples[] = {
    { 2, values0, 2, stack0, 2, labels0, 0, NULL },
    { 2, values1, 2, stack1, 0, NULL, 0, NULL },
    { 2, values2, 2, stack0, 1, labels2, 0, NULL },
    { 2, values3, 4, stack3, 0, NULL, 0, NULL },
};

/* The default type (cpu), stacks merged, sorted. */
__attribute__((unused)) static const char *const folded_expected =
    "main;0x7f0000001234 10000000\n"
    "main;helper;helper;[truncated] 10000000\n"
    "main;main;inlined_helper 50000000\n";

static inline pprof_profile make_profile(void)
{
    pprof_profile p;
    memset(&p, 0, sizeof p);
    p.arena = NULL;
    p.types = types;
    p.ntypes = 2;
    p.period_type = (pprof_value_type){ "cpu", "nanoseconds" };
    p.period = 10000000;
    p.time_nanos = 1700000000123456789;
    p.duration_nanos = 2500000000;
    p.default_type = 1;
    p.comments = comments;
    p.ncomments = 2;
    p.samples = samples;
    p.nsamples = p.samples_cap = 4;
    p.locations = locations;
    p.nlocations = 6;
    p.mappings = mappings;
    p.nmappings = 2;
    p.b = NULL;
    CHECK(pp_model_index(&p) == 0);
    return p;
}

/* ---------------------------------------------------------------- helpers */

/* Gunzips `in` into a malloc'd buffer; returns its length or -1. */
static inline long gunzip(const void *in, size_t inlen, unsigned char **out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return -1;
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)inlen;
    int rc;
    do {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        z.next_out = buf + len;
        z.avail_out = (uInt)(cap - len);
        rc = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
    } while (rc == Z_OK);
    int ok = rc == Z_STREAM_END && z.avail_in == 0;
    inflateEnd(&z);
    if (!ok) {
        free(buf);
        return -1;
    }
    *out = buf;
    return (long)len;
}

static inline const char *str(const Perftools__Profiles__Profile *pb, int64_t i)
{
    if (i < 0 || (size_t)i >= pb->n_string_table)
        return "<out of range>";
    return pb->string_table[i];
}

static inline const Perftools__Profiles__Function *function(const Perftools__Profiles__Profile *pb,
                                                     uint64_t id)
{
    for (size_t i = 0; i < pb->n_function; i++)
        if (pb->function[i]->id == id)
            return pb->function[i];
    return NULL;
}

static inline const char *fn_name(const Perftools__Profiles__Profile *pb, uint64_t id)
{
    const Perftools__Profiles__Function *f = function(pb, id);
    return f ? str(pb, f->name) : "<no function>";
}

/* A writer that fails on call number `fail_at` (1-based) and counts calls. */
typedef struct failing {
    int calls;
    int fail_at;
} failing;

static inline int failing_write(void *ctx, const void *data, size_t len)
{
    (void)data;
    (void)len;
    failing *f = ctx;
    f->calls++;
    return f->calls >= f->fail_at ? -1 : 0;
}

/* A writer that checks the chunk bound and appends to a buffer. */
__attribute__((unused)) static size_t max_chunk;
static inline int chunk_write(void *ctx, const void *data, size_t len)
{
    if (len > max_chunk)
        max_chunk = len;
    pprof_writer w = pprof_writer_buffer(ctx);
    return w.write(w.ctx, data, len);
}
#endif
