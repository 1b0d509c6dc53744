/* test_merge.c: pprof_merge, several profiles into one.
 * test-labels: concurrency quick
 *
 * Two threadcreate profiles of this program (one gzipped, one plain) merge
 * into one whose samples are both inputs' with each input's extra label,
 * whose mappings, locations and functions are both inputs' with distinct
 * ids, and whose string table has no duplicate; the time is the earliest
 * and the duration the longest. An input whose ids are sparse merges with
 * ids shifted past its largest. Mismatched sample types, garbage, an input
 * that names a location it does not have, and missing arguments are
 * refused with PPROF_EINVAL.
 */
#include "pprof.h"
#include "proto/profile.pb-c.h"
#include "check.h"
#include "pb_decode.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A profile of recorder r, encoded in fmt. */
static pprof_buffer encoded(pprof_recorder *r, pprof_format fmt)
{
    pprof_buffer b = {0};
    pprof_profile *p = NULL;
    CHECK(pprof_recorder_write_to(r, &p) == 0 && p);
    CHECK(p && pprof_profile_write(p, fmt, pprof_writer_buffer(&b)) == 0);
    pprof_profile_free(p);
    return b;
}

/* The plain profile b with its location ids times `scale` and, when
 * dangle, its first sample naming a location that is not there. */
static pprof_buffer reshaped(const pprof_buffer *b, uint64_t scale, int dangle)
{
    Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, b->len, (const uint8_t *)b->data);
    pprof_buffer out = {0};
    if (!p)
        return out;
    for (size_t i = 0; i < p->n_location; i++)
        p->location[i]->id *= scale;
    for (size_t i = 0; i < p->n_sample; i++)
        for (size_t k = 0; k < p->sample[i]->n_location_id; k++)
            p->sample[i]->location_id[k] *= scale;
    if (dangle && p->n_sample && p->sample[0]->n_location_id)
        p->sample[0]->location_id[0] = 1u << 30;
    out.len = perftools__profiles__profile__get_packed_size(p);
    out.data = malloc(out.len ? out.len : 1);
    out.cap = out.len;
    perftools__profiles__profile__pack(p, (uint8_t *)out.data);
    perftools__profiles__profile__free_unpacked(p, NULL);
    return out;
}

static const char *label_of(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s,
                            const char *key)
{
    static char num[32];
    for (size_t i = 0; i < s->n_label; i++)
        if (!strcmp(p->string_table[s->label[i]->key], key)) {
            if (s->label[i]->str)
                return p->string_table[s->label[i]->str];
            snprintf(num, sizeof num, "%lld", (long long)s->label[i]->num);
            return num;
        }
    return NULL;
}

int main(void)
{
    pprof_recorder *tc;
    CHECK(pprof_threadcreate_recorder_new(&tc) == 0);
    pprof_buffer a = encoded(tc, PPROF_FORMAT_PROTO_GZIP), b = encoded(tc, PPROF_FORMAT_PROTO);
    Perftools__Profiles__Profile *pa = decode_gz(&a);
    Perftools__Profiles__Profile *pb = perftools__profiles__profile__unpack(NULL, b.len, (const uint8_t *)b.data);
    CHECK(pa != NULL && pb != NULL);

    pprof_label la[] = {{"pid", "100"}, {"process", "first"}}, lb[] = {{"pid", "200"}, {"process", "second"}};
    /* pid as a numeric label, process as a string */
    pprof_num_label na = {"pid", 100, NULL}, nb = {"pid", 200, NULL};
    pprof_merge_input in[] = {{a.data, a.len, la + 1, 1, &na, 1, "merged by test_merge"},
                              {b.data, b.len, lb + 1, 1, &nb, 1, NULL},
                              {NULL, 0, NULL, 0, NULL, 0, "process 300 did not answer in time"}};
    pprof_buffer out = {0};
    CHECK(pprof_merge(in, 3, pprof_writer_buffer(&out)) == 0);
    Perftools__Profiles__Profile *m = decode_gz(&out);
    CHECK(m != NULL);
    if (m && pa && pb) {
        CHECKF(m->n_sample == pa->n_sample + pb->n_sample && m->n_location == pa->n_location + pb->n_location &&
                   m->n_mapping == pa->n_mapping + pb->n_mapping && m->n_function == pa->n_function + pb->n_function,
               "merged %zu samples %zu locations %zu mappings %zu functions from %zu+%zu %zu+%zu %zu+%zu %zu+%zu",
               m->n_sample, m->n_location, m->n_mapping, m->n_function, pa->n_sample, pb->n_sample,
               pa->n_location, pb->n_location, pa->n_mapping, pb->n_mapping, pa->n_function, pb->n_function);
        size_t firsts = 0, seconds = 0;
        for (size_t i = 0; i < m->n_sample; i++) {
            const char *proc = label_of(m, m->sample[i], "process");
            const char *pid = label_of(m, m->sample[i], "pid");
            firsts += pid && proc && !strcmp(pid, "100") && !strcmp(proc, "first");
            seconds += pid && proc && !strcmp(pid, "200") && !strcmp(proc, "second");
        }
        CHECKF(firsts == pa->n_sample && seconds == pb->n_sample, "%zu and %zu samples labelled", firsts, seconds);
        int dup = 0;
        for (size_t i = 0; i < m->n_string_table; i++)
            for (size_t j = i + 1; j < m->n_string_table; j++)
                dup |= !strcmp(m->string_table[i], m->string_table[j]);
        CHECK(!dup && m->n_string_table > 0 && !strcmp(m->string_table[0], ""));
        int ids_ok = 1;
        for (size_t i = 0; i < m->n_location; i++)
            ids_ok &= m->location[i]->id == i + 1 && m->location[i]->mapping_id <= m->n_mapping;
        for (size_t i = 0; i < m->n_sample; i++)
            for (size_t k = 0; k < m->sample[i]->n_location_id; k++)
                ids_ok &= m->sample[i]->location_id[k] >= 1 && m->sample[i]->location_id[k] <= m->n_location;
        CHECK(ids_ok);
        CHECK(m->n_sample_type == 1 && !strcmp(m->string_table[m->sample_type[0]->type], "threadcreate"));
        CHECK(m->time_nanos == pa->time_nanos);
        int said = 0; /* the comments: the inputs' own and the ones given */
        for (size_t i = 0; i < m->n_comment; i++)
            said |= (!strcmp(m->string_table[m->comment[i]], "merged by test_merge") ? 1 : 0) |
                    (!strcmp(m->string_table[m->comment[i]], "process 300 did not answer in time") ? 2 : 0);
        CHECK(said == 3);
    }
    if (m)
        perftools__profiles__profile__free_unpacked(m, NULL);
    if (pa)
        perftools__profiles__profile__free_unpacked(pa, NULL);
    if (pb)
        perftools__profiles__profile__free_unpacked(pb, NULL);
    pprof_buffer_free(&out);

    /* sparse ids: shifted past the largest, every reference kept */
    pprof_buffer sparse = reshaped(&b, 2, 0); /* ids 2, 4, ...: shifted by their count, the next input's would meet them */
    pprof_merge_input two[] = {{sparse.data, sparse.len, NULL, 0, NULL, 0, NULL}, {b.data, b.len, NULL, 0, NULL, 0, NULL}};
    CHECK(pprof_merge(two, 2, pprof_writer_buffer(&out)) == 0);
    m = decode_gz(&out);
    CHECK(m != NULL);
    if (m) {
        int refs_ok = m->n_location > 0;
        for (size_t i = 0; i < m->n_location; i++)
            for (size_t j = i + 1; j < m->n_location; j++)
                refs_ok &= m->location[i]->id != m->location[j]->id;
        for (size_t i = 0; i < m->n_sample; i++)
            for (size_t k = 0; k < m->sample[i]->n_location_id; k++) {
                int found = 0;
                for (size_t j = 0; j < m->n_location; j++)
                    found |= m->location[j]->id == m->sample[i]->location_id[k];
                refs_ok &= found;
            }
        CHECKF(refs_ok, "sparse ids: %zu locations, references or ids broken", m->n_location);
        perftools__profiles__profile__free_unpacked(m, NULL);
    }
    pprof_buffer_free(&out);
    pprof_buffer_free(&sparse);
    pprof_buffer dangling = reshaped(&b, 1, 1);
    pprof_merge_input bad[] = {{dangling.data, dangling.len, NULL, 0, NULL, 0, NULL}};
    CHECK(pprof_merge(bad, 1, pprof_writer_buffer(&out)) == PPROF_EINVAL);
    CHECKF(strstr(pprof_last_error(), "location that is not there") != NULL, "%s", pprof_last_error());
    pprof_buffer_free(&out);
    pprof_buffer_free(&dangling);

    /* refused: other sample types, garbage, no inputs, no writer */
    pprof_custom *c;
    pprof_recorder *cr;
    static int thing;
    CHECK(pprof_custom_new("merge_things", &c) == 0 && pprof_custom_add(c, &thing) == 0);
    CHECK(pprof_custom_recorder_new(c, &cr) == 0);
    pprof_buffer other = encoded(cr, PPROF_FORMAT_PROTO_GZIP);
    pprof_merge_input mixed[] = {{a.data, a.len, NULL, 0, NULL, 0, NULL}, {other.data, other.len, NULL, 0, NULL, 0, NULL}};
    CHECK(pprof_merge(mixed, 2, pprof_writer_buffer(&out)) == PPROF_EINVAL);
    CHECK(strstr(pprof_last_error(), "sample types") != NULL);
    pprof_merge_input junk[] = {{"\x1f\x8bjunk", 6, NULL, 0, NULL, 0, NULL}};
    CHECK(pprof_merge(junk, 1, pprof_writer_buffer(&out)) == PPROF_EINVAL);
    pprof_merge_input notpb[] = {{"\xff\xff\xff", 3, NULL, 0, NULL, 0, NULL}};
    CHECK(pprof_merge(notpb, 1, pprof_writer_buffer(&out)) == PPROF_EINVAL);
    CHECK(pprof_merge(in, 0, pprof_writer_buffer(&out)) == PPROF_EINVAL);
    CHECK(pprof_merge(in + 2, 1, pprof_writer_buffer(&out)) == PPROF_EINVAL); /* only a comment */
    CHECK(pprof_merge(in, 2, (pprof_writer){NULL, NULL}) == PPROF_EINVAL);
    pprof_buffer_free(&out);
    pprof_buffer_free(&other);
    pprof_recorder_free(cr);
    pprof_custom_remove(c, &thing);
    pprof_buffer_free(&a);
    pprof_buffer_free(&b);
    pprof_recorder_free(tc);
    return check_summary("test_merge");
}
