/* test_encode.c: unit test of the profile encoders and the writers.
 * test-labels: quick
 *
 * Builds pprof_profile structs by hand (static arrays, no builder; the
 * model indexes their strings and functions, pp_model_index), writes
 * them as gzipped protobuf, plain protobuf and folded stacks, and checks:
 * the gzip framing and level, that the decoded Profile carries every field
 * (sample types, string table with "" first and no duplicates, IDs 1..N,
 * lines innermost first, labels, mapping fields and flags, period, times,
 * comments, default_sample_type), function deduplication, exact folded
 * text, a large profile that spans many output chunks, argument errors,
 * writer failures (PPROF_EIO, no calls after the first failure), and the
 * fd and buffer writers (file, pipe, socket whose peer has gone).
 */
#include "pprof.h"
#include "model.h"
#include "proto/profile.pb-c.h"
#include "check.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
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
static const char *const folded_expected =
    "main;0x7f0000001234 10000000\n"
    "main;helper;helper;[truncated] 10000000\n"
    "main;main;inlined_helper 50000000\n";

static pprof_profile make_profile(void)
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
static long gunzip(const void *in, size_t inlen, unsigned char **out)
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

static const char *str(const Perftools__Profiles__Profile *pb, int64_t i)
{
    if (i < 0 || (size_t)i >= pb->n_string_table)
        return "<out of range>";
    return pb->string_table[i];
}

static const Perftools__Profiles__Function *function(const Perftools__Profiles__Profile *pb,
                                                     uint64_t id)
{
    for (size_t i = 0; i < pb->n_function; i++)
        if (pb->function[i]->id == id)
            return pb->function[i];
    return NULL;
}

static const char *fn_name(const Perftools__Profiles__Profile *pb, uint64_t id)
{
    const Perftools__Profiles__Function *f = function(pb, id);
    return f ? str(pb, f->name) : "<no function>";
}

/* A writer that fails on call number `fail_at` (1-based) and counts calls. */
typedef struct failing {
    int calls;
    int fail_at;
} failing;

static int failing_write(void *ctx, const void *data, size_t len)
{
    (void)data;
    (void)len;
    failing *f = ctx;
    f->calls++;
    return f->calls >= f->fail_at ? -1 : 0;
}

/* A writer that checks the chunk bound and appends to a buffer. */
static size_t max_chunk;
static int chunk_write(void *ctx, const void *data, size_t len)
{
    if (len > max_chunk)
        max_chunk = len;
    pprof_writer w = pprof_writer_buffer(ctx);
    return w.write(w.ctx, data, len);
}

/* -------------------------------------------------------------- the tests */

/* Checks everything in a decoded copy of make_profile(). */
static void check_decoded(const Perftools__Profiles__Profile *pb)
{
    /* string table: "" first, no duplicates */
    CHECK(pb->n_string_table > 0);
    CHECK(pb->n_string_table > 0 && strcmp(pb->string_table[0], "") == 0);
    int dups = 0;
    for (size_t i = 0; i < pb->n_string_table; i++)
        for (size_t j = i + 1; j < pb->n_string_table; j++)
            if (strcmp(pb->string_table[i], pb->string_table[j]) == 0)
                dups++;
    CHECK(dups == 0);

    /* sample types */
    CHECK(pb->n_sample_type == 2);
    if (pb->n_sample_type == 2) {
        CHECK(strcmp(str(pb, pb->sample_type[0]->type), "samples") == 0);
        CHECK(strcmp(str(pb, pb->sample_type[0]->unit), "count") == 0);
        CHECK(strcmp(str(pb, pb->sample_type[1]->type), "cpu") == 0);
        CHECK(strcmp(str(pb, pb->sample_type[1]->unit), "nanoseconds") == 0);
    }

    /* scalars */
    CHECK(pb->period_type != NULL);
    if (pb->period_type) {
        CHECK(strcmp(str(pb, pb->period_type->type), "cpu") == 0);
        CHECK(strcmp(str(pb, pb->period_type->unit), "nanoseconds") == 0);
    }
    CHECK(pb->period == 10000000);
    CHECK(pb->time_nanos == 1700000000123456789);
    CHECK(pb->duration_nanos == 2500000000);
    CHECK(strcmp(str(pb, pb->default_sample_type), "cpu") == 0);
    CHECK(pb->drop_frames == 0 && pb->keep_frames == 0);
    CHECK(pb->n_comment == 2);
    if (pb->n_comment == 2) {
        CHECK(strcmp(str(pb, pb->comment[0]), "made by test_encode") == 0);
        CHECK(strcmp(str(pb, pb->comment[1]), "second comment") == 0);
    }

    /* samples */
    CHECK(pb->n_sample == 4);
    if (pb->n_sample == 4) {
        const Perftools__Profiles__Sample *s = pb->sample[0];
        CHECK(s->n_location_id == 2 && s->location_id[0] == 1 && s->location_id[1] == 2);
        CHECK(s->n_value == 2 && s->value[0] == 3 && s->value[1] == 30000000);
        CHECK(s->n_label == 2);
        if (s->n_label == 2) {
            CHECK(strcmp(str(pb, s->label[0]->key), "handler") == 0);
            CHECK(strcmp(str(pb, s->label[0]->str), "/api") == 0);
            CHECK(strcmp(str(pb, s->label[1]->key), "req") == 0);
            CHECK(strcmp(str(pb, s->label[1]->str), "42") == 0);
            CHECK(s->label[0]->num == 0 && s->label[0]->num_unit == 0);
        }
        s = pb->sample[1];
        CHECK(s->n_location_id == 2 && s->location_id[0] == 3 && s->location_id[1] == 2);
        CHECK(s->n_value == 2 && s->value[0] == 1 && s->value[1] == 10000000);
        CHECK(s->n_label == 0);
        s = pb->sample[2];
        CHECK(s->n_location_id == 2 && s->location_id[0] == 1);
        CHECK(s->n_value == 2 && s->value[0] == 2 && s->value[1] == 20000000);
        CHECK(s->n_label == 1 && strcmp(str(pb, s->label[0]->str), "/other") == 0);
        s = pb->sample[3];
        CHECK(s->n_location_id == 4 && s->location_id[0] == 4 && s->location_id[1] == 5 &&
              s->location_id[2] == 6 && s->location_id[3] == 2);
    }

    /* mappings */
    CHECK(pb->n_mapping == 2);
    if (pb->n_mapping == 2) {
        const Perftools__Profiles__Mapping *m = pb->mapping[0];
        CHECK(m->id == 1 && m->memory_start == 0x400000 && m->memory_limit == 0x500000);
        CHECK(m->file_offset == 0x1000);
        CHECK(strcmp(str(pb, m->filename), "/usr/bin/app") == 0);
        CHECK(strcmp(str(pb, m->build_id), "0123456789abcdef") == 0);
        CHECK(m->has_functions && m->has_filenames && m->has_line_numbers);
        CHECK(m->has_inline_frames); /* location 1 has two lines */
        m = pb->mapping[1];
        CHECK(m->id == 2 && m->memory_start == 0x7f0000000000 && m->memory_limit == 0x7f0000100000);
        CHECK(m->file_offset == 0);
        CHECK(strcmp(str(pb, m->filename), "/lib/x86_64-linux-gnu/libc.so.6") == 0);
        CHECK(m->build_id == 0);
        CHECK(!m->has_functions && !m->has_filenames && !m->has_line_numbers &&
              !m->has_inline_frames);
    }

    /* locations: IDs as given, lines innermost first */
    CHECK(pb->n_location == 6);
    for (size_t i = 0; i < pb->n_location && i < 6; i++) {
        const Perftools__Profiles__Location *l = pb->location[i];
        CHECK(l->id == i + 1);
        CHECK(l->address == locations[i].address);
        CHECK(l->mapping_id == locations[i].mapping_id);
        CHECK(l->n_line == locations[i].nlines);
        CHECK(!l->is_folded);
        for (size_t j = 0; j < l->n_line && j < locations[i].nlines; j++) {
            const pprof_line *want = &locations[i].lines[j];
            const Perftools__Profiles__Function *f = function(pb, l->line[j]->function_id);
            CHECK(f != NULL);
            if (!f)
                continue;
            CHECK(strcmp(str(pb, f->name), want->function) == 0);
            CHECK(strcmp(str(pb, f->system_name), want->system_name) == 0);
            CHECK(strcmp(str(pb, f->filename), want->filename) == 0);
            CHECK(l->line[j]->line == want->line);
        }
    }
    if (pb->n_location >= 1 && pb->location[0]->n_line == 2) {
        CHECK(strcmp(fn_name(pb, pb->location[0]->line[0]->function_id), "inlined_helper") == 0);
        CHECK(strcmp(fn_name(pb, pb->location[0]->line[1]->function_id), "main") == 0);
    }

    /* functions: deduplicated on (name, system_name, filename), IDs 1..N
     * in first-use order */
    CHECK(pb->n_function == 5);
    for (size_t i = 0; i < pb->n_function; i++)
        CHECK(pb->function[i]->id == i + 1);
    if (pb->n_function == 5) {
        CHECK(strcmp(str(pb, pb->function[0]->name), "inlined_helper") == 0);
        CHECK(strcmp(str(pb, pb->function[1]->name), "main") == 0);
        CHECK(strcmp(str(pb, pb->function[2]->name), "[truncated]") == 0);
        CHECK(strcmp(str(pb, pb->function[3]->filename), "other.c") == 0);
        CHECK(strcmp(str(pb, pb->function[4]->filename), "app.c") == 0);
        CHECK(pb->function[4]->start_line == 0);
    }
    /* main at line 42 (inlined caller) and at line 50 share one function */
    if (pb->n_location >= 2 && pb->location[0]->n_line == 2 && pb->location[1]->n_line == 1)
        CHECK(pb->location[0]->line[1]->function_id == pb->location[1]->line[0]->function_id);
}

static void test_proto_roundtrip(void)
{
    pprof_profile p = make_profile();
    pprof_buffer gz = { 0 }, plain = { 0 };

    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&gz)) == 0);
    CHECK(gz.len > 18);
    /* gzip member: magic, deflate, XFL 4 = compressed at the fastest level */
    CHECK(gz.len > 10 && (unsigned char)gz.data[0] == 0x1f && (unsigned char)gz.data[1] == 0x8b);
    CHECK(gz.len > 10 && gz.data[2] == 8 && gz.data[8] == 4);

    unsigned char *raw = NULL;
    long rawlen = gunzip(gz.data, gz.len, &raw);
    CHECK(rawlen > 0);
    if (rawlen > 0) {
        Perftools__Profiles__Profile *pb =
            perftools__profiles__profile__unpack(NULL, (size_t)rawlen, raw);
        CHECK(pb != NULL);
        if (pb) {
            check_decoded(pb);
            /* The streamed encoding equals protobuf-c's own packing of the
             * decoded message: fields in number order, nothing extra. */
            size_t n = perftools__profiles__profile__get_packed_size(pb);
            unsigned char *again = malloc(n);
            perftools__profiles__profile__pack(pb, again);
            CHECK(n == (size_t)rawlen && memcmp(again, raw, n) == 0);
            free(again);
            perftools__profiles__profile__free_unpacked(pb, NULL);
        }
    }

    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO, pprof_writer_buffer(&plain)) == 0);
    CHECK(rawlen > 0 && plain.len == (size_t)rawlen && memcmp(plain.data, raw, plain.len) == 0);
    Perftools__Profiles__Profile *pb =
        perftools__profiles__profile__unpack(NULL, plain.len, (const uint8_t *)plain.data);
    CHECK(pb != NULL);
    if (pb) {
        check_decoded(pb);
        perftools__profiles__profile__free_unpacked(pb, NULL);
    }

    /* Encoding is deterministic. */
    pprof_buffer gz2 = { 0 };
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&gz2)) == 0);
    CHECK(gz2.len == gz.len && memcmp(gz2.data, gz.data, gz.len) == 0);

    free(raw);
    pprof_buffer_free(&gz);
    pprof_buffer_free(&gz2);
    pprof_buffer_free(&plain);
    pp_model_tables_free(&p);
}

static void test_folded(void)
{
    pprof_profile p = make_profile();
    pprof_buffer b = { 0 };
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_FOLDED, pprof_writer_buffer(&b)) == 0);
    CHECK(b.data != NULL && strcmp(b.data, folded_expected) == 0);
    if (b.data && strcmp(b.data, folded_expected) != 0)
        printf("folded output:\n%s", b.data);
    CHECK(b.len == strlen(folded_expected));
    pprof_buffer_free(&b);

    /* A type by name or index; labels first; types that are not there. */
    pprof_folded_config by_name = { "samples", 0 }, by_index = { "0", 0 }, labeled = { "samples", 1 };
    const char *counts = "main;0x7f0000001234 1\nmain;helper;helper;[truncated] 1\nmain;main;inlined_helper 5\n";
    CHECK(pprof_profile_write_folded(&p, &by_name, pprof_writer_buffer(&b)) == 0);
    CHECK(b.data && strcmp(b.data, counts) == 0);
    pprof_buffer_free(&b);
    CHECK(pprof_profile_write_folded(&p, &by_index, pprof_writer_buffer(&b)) == 0);
    CHECK(b.data && strcmp(b.data, counts) == 0);
    pprof_buffer_free(&b);
    CHECK(pprof_profile_write_folded(&p, &labeled, pprof_writer_buffer(&b)) == 0);
    CHECK(b.data && strcmp(b.data, "[handler=/api req=42];main;main;inlined_helper 3\n"
                                   "[handler=/other];main;main;inlined_helper 2\n"
                                   "main;0x7f0000001234 1\n"
                                   "main;helper;helper;[truncated] 1\n") == 0);
    pprof_buffer_free(&b);
    pprof_folded_config missing = { "alloc_space", 0 }, past = { "2", 0 };
    CHECK(pprof_profile_write_folded(&p, &missing, pprof_writer_buffer(&b)) == PPROF_ENOTFOUND);
    CHECK(strstr(pprof_last_error(), "samples, cpu") != NULL);
    CHECK(pprof_profile_write_folded(&p, &past, pprof_writer_buffer(&b)) == PPROF_ENOTFOUND);
    CHECK(b.len == 0);
    pp_model_tables_free(&p);

    /* Separators inside names are replaced. */
    static const pprof_line odd[] = { { "a;b\nc", "", "", 0 }, { "", "sys", "", 0 },
                                      { "", "", "", 0 } };
    static pprof_location oddloc[] = { { .id = 1, .address = 0xabc, .nlines = 3, .lines = odd } };
    static const pprof_location *oddstack[] = { &oddloc[0] };
    static const int64_t one[] = { 1 };
    static pprof_sample oddsample[] = { { 1, one, 1, oddstack, 0, NULL, 0, NULL } };
    pprof_profile q;
    memset(&q, 0, sizeof q);
    q.default_type = -1;
    q.types = types;
    q.ntypes = 1;
    q.samples = oddsample;
    q.nsamples = 1;
    q.locations = oddloc;
    q.nlocations = 1;
    CHECK(pprof_profile_write(&q, PPROF_FORMAT_FOLDED, pprof_writer_buffer(&b)) == 0);
    CHECK(b.data != NULL && strcmp(b.data, "0xabc;sys;a:b c 1\n") == 0);
    pprof_buffer_free(&b);
}

/* pprof_fold: the folded text of the serialized profile is the in-memory
 * profile's, for every configuration; bad bytes are refused. */
static void test_fold(void)
{
    pprof_profile p = make_profile();
    pprof_buffer pb = { 0 }, raw = { 0 };
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&pb)) == 0);
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO, pprof_writer_buffer(&raw)) == 0);
    pprof_folded_config cfgs[] = { { NULL, 0 }, { "samples", 0 }, { "1", 1 }, { "samples", 1 } };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        pprof_buffer want = { 0 }, got = { 0 }, got_raw = { 0 };
        CHECK(pprof_profile_write_folded(&p, &cfgs[i], pprof_writer_buffer(&want)) == 0);
        CHECK(pprof_fold(pb.data, pb.len, &cfgs[i], pprof_writer_buffer(&got)) == 0);
        CHECK(pprof_fold(raw.data, raw.len, &cfgs[i], pprof_writer_buffer(&got_raw)) == 0);
        CHECKF(want.data && got.data && !strcmp(want.data, got.data), "config %zu: folded from the protobuf:\n%s",
               i, got.data ? got.data : "(none)");
        CHECK(got_raw.data && want.data && !strcmp(want.data, got_raw.data));
        pprof_buffer_free(&want);
        pprof_buffer_free(&got);
        pprof_buffer_free(&got_raw);
    }
    pprof_buffer b = { 0 };
    pprof_folded_config missing = { "alloc_space", 0 };
    CHECK(pprof_fold(pb.data, pb.len, &missing, pprof_writer_buffer(&b)) == PPROF_ENOTFOUND);
    CHECK(pprof_fold(pb.data, pb.len / 2, NULL, pprof_writer_buffer(&b)) == PPROF_EINVAL); /* cut gzip */
    CHECK(pprof_fold("not a profile", 13, NULL, pprof_writer_buffer(&b)) == PPROF_EINVAL);
    CHECK(pprof_fold(NULL, 5, NULL, pprof_writer_buffer(&b)) == PPROF_EINVAL);
    /* a sample naming a location that is not there */
    Perftools__Profiles__Profile *dec = perftools__profiles__profile__unpack(NULL, raw.len, (const uint8_t *)raw.data);
    CHECK(dec != NULL);
    if (dec && dec->n_sample && dec->sample[0]->n_location_id) {
        dec->sample[0]->location_id[0] = 999999;
        size_t n = perftools__profiles__profile__get_packed_size(dec);
        uint8_t *bad = malloc(n);
        if (bad) {
            perftools__profiles__profile__pack(dec, bad);
            CHECK(pprof_fold(bad, n, NULL, pprof_writer_buffer(&b)) == PPROF_EINVAL);
            CHECK(strstr(pprof_last_error(), "location 999999") != NULL);
        }
        free(bad);
    }
    if (dec)
        perftools__profiles__profile__free_unpacked(dec, NULL);
    CHECK(b.len == 0);
    pprof_buffer_free(&b);
    pprof_buffer_free(&pb);
    pprof_buffer_free(&raw);
    pp_model_tables_free(&p);
}

static void test_empty(void)
{
    pprof_profile p;
    memset(&p, 0, sizeof p);
    p.default_type = -1;
    CHECK(pp_model_index(&p) == 0);
    pprof_buffer b = { 0 };
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO, pprof_writer_buffer(&b)) == 0);
    Perftools__Profiles__Profile *pb =
        perftools__profiles__profile__unpack(NULL, b.len, (const uint8_t *)b.data);
    CHECK(pb != NULL);
    if (pb) {
        CHECK(pb->n_string_table == 1 && strcmp(pb->string_table[0], "") == 0);
        CHECK(pb->n_sample == 0 && pb->n_sample_type == 0 && pb->n_location == 0);
        CHECK(pb->period_type == NULL && pb->default_sample_type == 0);
        perftools__profiles__profile__free_unpacked(pb, NULL);
    }
    pprof_buffer_free(&b);

    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&b)) == 0);
    unsigned char *raw = NULL;
    long n = gunzip(b.data, b.len, &raw);
    CHECK(n > 0);
    free(raw);
    pprof_buffer_free(&b);

    CHECK(pprof_profile_write(&p, PPROF_FORMAT_FOLDED, pprof_writer_buffer(&b)) == 0);
    CHECK(b.len == 0);
    pprof_buffer_free(&b);
    pp_model_tables_free(&p);
}

static void test_errors(void)
{
    pprof_profile p = make_profile();
    pprof_buffer b = { 0 };
    pprof_writer none = { NULL, NULL };

    CHECK(pprof_profile_write(NULL, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&b)) ==
          PPROF_EINVAL);
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, none) == PPROF_EINVAL);
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_FOLDED, pprof_writer_buffer(NULL)) ==
          PPROF_EINVAL);
    CHECK(pprof_profile_write(&p, (pprof_format)7, pprof_writer_buffer(&b)) == PPROF_EINVAL);
    CHECK(pprof_profile_write(&p, (pprof_format)-1, pprof_writer_buffer(&b)) == PPROF_EINVAL);
    CHECK(b.len == 0);

    /* An unfinished profile is refused. */
    int dummy;
    p.b = (struct pp_builder *)&dummy;
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO, pprof_writer_buffer(&b)) == PPROF_EINVAL);
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_FOLDED, pprof_writer_buffer(&b)) == PPROF_EINVAL);
    p.b = NULL;

    /* A sample whose values do not match the sample types cannot be
     * protobuf; folded only needs the value it writes. */
    static pprof_sample short_sample[] = { { 1, values0, 2, stack0, 0, NULL, 0, NULL } };
    p.samples = short_sample;
    p.nsamples = 1;
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO, pprof_writer_buffer(&b)) == PPROF_EINVAL);
    CHECK(strstr(pprof_last_error(), "values") != NULL);
    CHECK(b.len == 0);
    pprof_folded_config first = { "samples", 0 };
    CHECK(pprof_profile_write_folded(&p, &first, pprof_writer_buffer(&b)) == 0);
    CHECK(b.data && strcmp(b.data, "main;main;inlined_helper 3\n") == 0);
    pprof_buffer_free(&b);

    /* Writer failures give PPROF_EIO, in every format. */
    pp_model_tables_free(&p);
    p = make_profile();
    for (int fmt = 0; fmt <= 2; fmt++) {
        failing f = { 0, 1 };
        pprof_writer w = { failing_write, &f };
        CHECK(pprof_profile_write(&p, (pprof_format)fmt, w) == PPROF_EIO);
        CHECK(f.calls == 1);
    }
    pp_model_tables_free(&p);
}

/* A profile big enough to span many output chunks: many samples, each with
 * a distinct label value (a large string table), over a few hundred
 * functions. */
enum { BIG_LOCS = 3000, BIG_FUNCS = 300, BIG_SAMPLES = 20000, BIG_DEPTH = 8 };

typedef struct big {
    pprof_profile p;
    pprof_line lines[BIG_LOCS];
    char names[BIG_FUNCS][24];
    pprof_location locs[BIG_LOCS];
    const pprof_location *stacks[BIG_SAMPLES][BIG_DEPTH];
    int64_t values[BIG_SAMPLES][2];
    char reqs[BIG_SAMPLES][16];
    pprof_label labels[BIG_SAMPLES][2];
    pprof_sample samples[BIG_SAMPLES];
} big;

static big *make_big(void)
{
    big *g = calloc(1, sizeof *g);
    for (int i = 0; i < BIG_FUNCS; i++)
        snprintf(g->names[i], sizeof g->names[i], "function_%d", i);
    for (int i = 0; i < BIG_LOCS; i++) {
        g->lines[i] = (pprof_line){ g->names[i % BIG_FUNCS], g->names[i % BIG_FUNCS], "big.c",
                                    i + 1 };
        g->locs[i] = (pprof_location){ .id = (uint64_t)i + 1, .address = 0x400000 + 16 * (uint64_t)i,
                                       .mapping_id = 1, .nlines = 1, .lines = &g->lines[i] };
    }
    for (int i = 0; i < BIG_SAMPLES; i++) {
        for (int d = 0; d < BIG_DEPTH; d++)
            g->stacks[i][d] = &g->locs[(i * 7 + d * 131) % BIG_LOCS];
        g->values[i][0] = i % 5 + 1;
        g->values[i][1] = (i % 5 + 1) * 10000000;
        snprintf(g->reqs[i], sizeof g->reqs[i], "r%d", i);
        g->labels[i][0] = (pprof_label){ "req", g->reqs[i] };
        g->labels[i][1] = (pprof_label){ "kind", i % 2 ? "odd" : "even" };
        g->samples[i] = (pprof_sample){ 2, g->values[i], BIG_DEPTH, g->stacks[i], 2, g->labels[i], 0, NULL };
    }
    g->p = make_profile();
    g->p.samples = g->samples;
    g->p.nsamples = g->p.samples_cap = BIG_SAMPLES;
    g->p.locations = g->locs;
    g->p.nlocations = BIG_LOCS;
    g->p.nmappings = 1;
    CHECK(pp_model_index(&g->p) == 0);
    return g;
}

/* Reads a pipe to its end into a buffer. */
typedef struct reader {
    int fd;
    pprof_buffer *b;
} reader;

static void *pipe_reader(void *arg)
{
    reader *rd = arg;
    pprof_writer w = pprof_writer_buffer(rd->b);
    char buf[4096];
    ssize_t n;
    while ((n = read(rd->fd, buf, sizeof buf)) > 0)
        w.write(w.ctx, buf, (size_t)n);
    return NULL;
}

static void test_big(void)
{
    big *g = make_big();
    pprof_buffer gz = { 0 };
    max_chunk = 0;
    pprof_writer w = { chunk_write, &gz };
    CHECK(pprof_profile_write(&g->p, PPROF_FORMAT_PROTO_GZIP, w) == 0);
    CHECK(max_chunk > 0 && max_chunk <= 65536);

    unsigned char *raw = NULL;
    long rawlen = gunzip(gz.data, gz.len, &raw);
    CHECK(rawlen > 4 * 65536); /* many staging buffers' worth */
    Perftools__Profiles__Profile *pb =
        rawlen > 0 ? perftools__profiles__profile__unpack(NULL, (size_t)rawlen, raw) : NULL;
    CHECK(pb != NULL);
    if (pb) {
        CHECK(pb->n_sample == BIG_SAMPLES);
        CHECK(pb->n_location == BIG_LOCS);
        CHECK(pb->n_function == BIG_FUNCS);
        CHECK(pb->n_mapping == 1 && !pb->mapping[0]->has_inline_frames);
        /* "", 4 type strings, 2 comments, mapping path + build ID, 300
         * names, "big.c", "req", "kind", "odd", "even", 20000 req values */
        CHECK(pb->n_string_table == 1 + 4 + 2 + 2 + BIG_FUNCS + 1 + 4 + BIG_SAMPLES);
        int bad = 0;
        for (size_t i = 0; i < pb->n_sample && i < BIG_SAMPLES; i++) {
            const Perftools__Profiles__Sample *s = pb->sample[i];
            if (s->n_location_id != BIG_DEPTH || s->n_value != 2 || s->n_label != 2 ||
                s->value[0] != g->values[i][0] || s->value[1] != g->values[i][1] ||
                strcmp(str(pb, s->label[0]->str), g->reqs[i]) != 0 ||
                strcmp(str(pb, s->label[1]->str), i % 2 ? "odd" : "even") != 0) {
                bad++;
                continue;
            }
            for (int d = 0; d < BIG_DEPTH; d++)
                if (s->location_id[d] != g->stacks[i][d]->id)
                    bad++;
        }
        CHECK(bad == 0);
        for (size_t i = 0; i < pb->n_location; i++) {
            const Perftools__Profiles__Location *l = pb->location[i];
            if (l->id != i + 1 || l->n_line != 1 ||
                strcmp(fn_name(pb, l->line[0]->function_id), g->names[i % BIG_FUNCS]) != 0 ||
                l->line[0]->line != (int64_t)i + 1)
                bad++;
        }
        CHECK(bad == 0);
        perftools__profiles__profile__free_unpacked(pb, NULL);
    }

    /* A writer failing midway: PPROF_EIO, and it is not called again. */
    failing f = { 0, 3 };
    pprof_writer fw = { failing_write, &f };
    CHECK(pprof_profile_write(&g->p, PPROF_FORMAT_PROTO, fw) == PPROF_EIO);
    CHECK(f.calls == 3);

    /* The fd writer through a pipe, read concurrently: same bytes. */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pthread_t t;
    pprof_buffer got = { 0 };
    reader rd = { fds[0], &got };
    CHECK(pthread_create(&t, NULL, pipe_reader, &rd) == 0);
    CHECK(pprof_profile_write(&g->p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_fd(fds[1])) == 0);
    close(fds[1]);
    pthread_join(t, NULL);
    close(fds[0]);
    CHECK(got.len == gz.len && memcmp(got.data, gz.data, gz.len) == 0);
    pprof_buffer_free(&got);

    /* Folded: at most a line per sample, the default type's values all there. */
    pprof_buffer fb = { 0 };
    CHECK(pprof_profile_write(&g->p, PPROF_FORMAT_FOLDED, pprof_writer_buffer(&fb)) == 0);
    size_t nl = 0;
    int64_t want = 0, got_sum = 0;
    int vi = g->p.default_type >= 0 ? g->p.default_type : (int)g->p.ntypes - 1;
    for (size_t i = 0; i < g->p.nsamples; i++)
        want += g->p.samples[i].values[vi];
    for (char *l = fb.data; l && l < fb.data + fb.len;) {
        char *end = strchr(l, '\n'), *sp = end;
        while (sp > l && sp[-1] != ' ')
            sp--;
        nl++;
        got_sum += strtoll(sp, NULL, 10);
        l = end + 1;
    }
    CHECK(nl > 0 && nl <= BIG_SAMPLES);
    CHECK(got_sum == want);
    pprof_buffer_free(&fb);

    free(raw);
    pprof_buffer_free(&gz);
    pp_model_tables_free(&g->p);
    free(g);
}

static void test_writers(void)
{
    /* buffer: growth, NUL termination, free */
    pprof_buffer b = { 0 };
    pprof_writer w = pprof_writer_buffer(&b);
    CHECK(w.write(w.ctx, "", 0) == 0);
    CHECK(b.len == 0);
    CHECK(w.write(w.ctx, "hello", 5) == 0);
    CHECK(b.len == 5 && b.cap >= 6 && strcmp(b.data, "hello") == 0);
    char filler[10000];
    memset(filler, 'x', sizeof filler);
    CHECK(w.write(w.ctx, filler, sizeof filler) == 0);
    CHECK(b.len == 10005 && b.cap >= 10006 && b.data[10005] == '\0');
    CHECK(memcmp(b.data, "hellox", 6) == 0 && b.data[10004] == 'x');
    pprof_buffer_free(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
    pprof_buffer_free(&b); /* twice is fine */
    pprof_buffer_free(NULL);

    /* fd: a temp file gets exactly the buffer's bytes */
    pprof_profile p = make_profile();
    pprof_buffer gz = { 0 };
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&gz)) == 0);
    char path[] = "/tmp/test_encode_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        unlink(path);
        CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_fd(fd)) == 0);
        CHECK(lseek(fd, 0, SEEK_SET) == 0);
        char *back = malloc(gz.len + 1);
        ssize_t n = read(fd, back, gz.len + 1);
        CHECK(n == (ssize_t)gz.len && memcmp(back, gz.data, gz.len) == 0);
        free(back);
        close(fd);
    }
    pprof_buffer_free(&gz);

    /* fd: a bad descriptor fails, giving PPROF_EIO */
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_fd(-1)) == PPROF_EIO);

    /* fd: a socket whose peer has closed fails with EPIPE, without SIGPIPE
     * (which would end this test) */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    close(sv[1]);
    pprof_writer sw = pprof_writer_fd(sv[0]);
    errno = 0;
    CHECK(sw.write(sw.ctx, "x", 1) < 0);
    CHECK(errno == EPIPE);
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_FOLDED, sw) == PPROF_EIO);
    close(sv[0]);
    pp_model_tables_free(&p);
}

int main(void)
{
    test_proto_roundtrip();
    test_folded();
    test_fold();
    test_empty();
    test_errors();
    test_big();
    test_writers();
    return check_summary("test_encode");
}
