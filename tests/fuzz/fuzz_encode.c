/* fuzz_encode.c: libFuzzer target for the profile model and its encoder.
 *
 * The input describes a profile: one to three sample types, then samples
 * (a stack of up to 16 addresses, small values, up to four labels whose
 * strings come from the input). It is built with the model's builder,
 * finished without symbols, written gzipped, then gunzipped and decoded
 * with protobuf-c: the decoding must succeed, string 0 must be "", every
 * index must name a string, location or mapping that is there, and each
 * sample type's values must add up to what was put in.
 */
#include "pprof.h"
#include "model.h"
#include "profile.h"
#include "decode.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) (fprintf(stderr, "fuzz_encode: " __VA_ARGS__), fputc('\n', stderr), abort())

typedef struct in {
    const uint8_t *p, *end;
} in;

static unsigned byte(in *r)
{
    return r->p < r->end ? *r->p++ : 0;
}

/* A string of up to 15 bytes from the input, in buf; at least `min`. */
static const char *str(in *r, char *buf, size_t min)
{
    size_t n = byte(r) & 15;
    size_t i = 0;
    if (n < min)
        n = min;
    for (; i < n && r->p < r->end; i++)
        buf[i] = (char)*r->p++;
    buf[i] = 0;
    return buf;
}

static int64_t sums[3];

static void check(const Perftools__Profiles__Profile *pb, size_t ntypes)
{
    if (pb->n_string_table == 0 || pb->string_table[0][0])
        FAIL("string 0 is not empty");
    if (pb->n_sample_type != ntypes)
        FAIL("%zu sample types, %zu put in", pb->n_sample_type, ntypes);
    int64_t got[3] = {0, 0, 0};
    for (size_t i = 0; i < pb->n_sample; i++) {
        const Perftools__Profiles__Sample *s = pb->sample[i];
        if (s->n_value != ntypes)
            FAIL("a sample with %zu values", s->n_value);
        for (size_t k = 0; k < ntypes; k++)
            got[k] += s->value[k];
        for (size_t k = 0; k < s->n_location_id; k++)
            if (s->location_id[k] == 0 || s->location_id[k] > pb->n_location)
                FAIL("location id %llu of %zu", (unsigned long long)s->location_id[k], pb->n_location);
        for (size_t k = 0; k < s->n_label; k++)
            if (s->label[k]->key <= 0 || (size_t)s->label[k]->key >= pb->n_string_table ||
                s->label[k]->str < 0 || (size_t)s->label[k]->str >= pb->n_string_table)
                FAIL("a label's strings are not there");
    }
    for (size_t i = 0; i < pb->n_location; i++)
        if (pb->location[i]->mapping_id > pb->n_mapping)
            FAIL("mapping id %llu of %zu", (unsigned long long)pb->location[i]->mapping_id, pb->n_mapping);
    for (size_t k = 0; k < ntypes; k++)
        if (got[k] != sums[k])
            FAIL("type %zu adds up to %lld, %lld put in", k, (long long)got[k], (long long)sums[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    in r = {data, data + size};
    size_t ntypes = 1 + byte(&r) % 3;
    static const pprof_value_type types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}, {"space", "bytes"}};
    pprof_profile *p = pp_profile_new(types, ntypes, types[1], 10000000);
    if (!p)
        return 0;
    memset(sums, 0, sizeof sums);
    while (r.p < r.end) {
        uint64_t pcs[16];
        size_t npcs = 1 + byte(&r) % 16;
        for (size_t i = 0; i < npcs; i++) /* a few distinct addresses, some of them special */
            pcs[i] = byte(&r) % 8 == 0 ? PP_PC_TRUNCATED : 0x400000 + (uint64_t)byte(&r) * 16;
        int64_t values[3];
        for (size_t k = 0; k < ntypes; k++)
            sums[k] += values[k] = (int64_t)byte(&r) - 16;
        char kb[4][16], vb[4][16];
        pprof_label labels[4];
        size_t nl = byte(&r) % 5;
        for (size_t i = 0; i < nl; i++)
            {
            const char *k = str(&r, kb[i], 1), *v = str(&r, vb[i], 0);
            labels[i] = (pprof_label){k[0] ? k : "k", v};
        }
        if (pp_profile_add(p, pcs, npcs, values, labels, nl) != 0)
            break;
    }
    if (pp_profile_finish(p, PPROF_SYMBOLIZE_NONE, NULL) == 0) {
        pprof_buffer gz = {0};
        if (pprof_profile_write(p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&gz)) != 0)
            FAIL("the profile could not be written");
        Perftools__Profiles__Profile *pb = decode_gz(gz.data, gz.len);
        if (!pb)
            FAIL("the profile does not gunzip or decode");
        check(pb, ntypes);
        perftools__profiles__profile__free_unpacked(pb, NULL);
        pprof_buffer_free(&gz);
    }
    pprof_profile_free(p);
    return 0;
}
