/* test_encode.c: unit test of the profile encoders.
 * test-labels: quick
 *
 * Writes the hand-built profile of encode_fixture.h as gzipped protobuf,
 * plain protobuf and folded stacks, and checks: the gzip framing and
 * level, that the decoded Profile carries every field (sample types,
 * string table with "" first and no duplicates, IDs 1..N, lines innermost
 * first, labels, mapping fields and flags, period, times, comments,
 * default_sample_type), function deduplication, exact folded text, the
 * folding of decoded protobufs, an empty profile, argument errors and
 * writer failures (PPROF_EIO, no calls after the first failure).
 * test_encode_stream.c covers large output and the writers.
 */
#include "encode_fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

/* -------------------------------------------------------------- the tests */

/* Whether vt (maybe NULL) is type/unit. */
static bool type_is(const Perftools__Profiles__Profile *pb, const Perftools__Profiles__ValueType *vt,
                    const char *type, const char *unit)
{
    return vt && strcmp(str(pb, vt->type), type) == 0 && strcmp(str(pb, vt->unit), unit) == 0;
}

/* Whether l is the string label key=value. */
static bool label_is(const Perftools__Profiles__Profile *pb, const Perftools__Profiles__Label *l,
                     const char *key, const char *value)
{
    return strcmp(str(pb, l->key), key) == 0 && strcmp(str(pb, l->str), value) == 0;
}

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
        CHECK(type_is(pb, pb->sample_type[0], "samples", "count"));
        CHECK(type_is(pb, pb->sample_type[1], "cpu", "nanoseconds"));
    }

    /* scalars */
    CHECK(type_is(pb, pb->period_type, "cpu", "nanoseconds"));
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
            CHECK(label_is(pb, s->label[0], "handler", "/api"));
            CHECK(label_is(pb, s->label[1], "req", "42"));
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


int main(void)
{
    test_proto_roundtrip();
    test_folded();
    test_fold();
    test_empty();
    test_errors();
    return check_summary("test_encode");
}
