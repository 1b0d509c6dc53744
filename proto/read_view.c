/* read_view.c: a serialized profile read into a profile view, for
 * pprof_fold (folded stacks of a process tree's merged bytes).
 *
 * A pprof protobuf (gzipped or not) is unpacked with protobuf-c and laid
 * out as a profile view (profiler/model/): sample types, samples with
 * their values, locations and string labels, locations with their lines'
 * function names; the folded writer (folded.c) then writes it as it
 * writes an in-memory profile. This is how a process tree's merged
 * profile, which exists only as bytes, answers format=folded. Every index
 * the input holds (strings, function and location ids) is checked: a
 * malformed input is PPROF_EINVAL, never a read out of bounds.
 */
#include "encode.h"
#include "base/base.h"
#include "model/model.h"
#include "proto/profile.pb-c.h"

#include <stdlib.h>
#include <string.h>

typedef struct idmap {
    uint64_t id;
    size_t ix;
} idmap;

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = ((const idmap *)a)->id, y = ((const idmap *)b)->id;
    return (x > y) - (x < y);
}

/* The index of id in the sorted map, or -1. */
static long find_id(const idmap *m, size_t n, uint64_t id)
{
    idmap key = {id, 0};
    const idmap *hit = n ? bsearch(&key, m, n, sizeof *m, cmp_id) : NULL;
    return hit ? (long)hit->ix : -1;
}

/* A sorted id -> index map of n entries whose ids are get(i). */
static idmap *make_map(size_t n, uint64_t (*get)(const void *, size_t), const void *arg)
{
    idmap *m = malloc((n ? n : 1) * sizeof *m);
    if (!m)
        return NULL;
    for (size_t i = 0; i < n; i++)
        m[i] = (idmap){get(arg, i), i};
    qsort(m, n, sizeof *m, cmp_id);
    return m;
}

static uint64_t function_id(const void *pb, size_t i)
{
    return ((const Perftools__Profiles__Profile *)pb)->function[i]->id;
}

static uint64_t location_id(const void *pb, size_t i)
{
    return ((const Perftools__Profiles__Profile *)pb)->location[i]->id;
}

/* Everything the view points at, freed together. */
typedef struct view_mem {
    pprof_value_type *types;
    idmap *fmap, *lmap;
    pprof_location *locs;
    pprof_line *lines;
    pprof_sample *samples;
    const pprof_location **sample_locs;
    pprof_label *labels;
} view_mem;

static void view_mem_free(view_mem *m)
{
    free(m->types);
    free(m->fmap);
    free(m->lmap);
    free(m->locs);
    free(m->lines);
    free(m->samples);
    free(m->sample_locs);
    free(m->labels);
}

/* Lays pb out as a view in *v (its arrays in *m). 0, PPROF_EINVAL or
 * PPROF_ENOMEM. */
static int lay_out(const Perftools__Profiles__Profile *pb, pp_model_view *v, view_mem *m)
{
    size_t nstr = pb->n_string_table;
#define STR(i) ((i) >= 0 && (uint64_t)(i) < nstr ? pb->string_table[i] : NULL)
    if (!nstr || !pb->string_table[0] || pb->string_table[0][0])
        return pp_error_detail(PPROF_EINVAL, "not a pprof profile: its string table does not start with \"\"");
    memset(v, 0, sizeof *v);
    v->finished = 1;
    v->default_type = -1;
    size_t nlines = 0, nsl = 0, nlab = 0;
    for (size_t i = 0; i < pb->n_location; i++)
        nlines += pb->location[i]->n_line;
    for (size_t i = 0; i < pb->n_sample; i++) {
        nsl += pb->sample[i]->n_location_id;
        nlab += pb->sample[i]->n_label;
    }
    m->types = calloc(pb->n_sample_type + 1, sizeof *m->types);
    m->fmap = make_map(pb->n_function, function_id, pb);
    m->lmap = make_map(pb->n_location, location_id, pb);
    m->locs = calloc(pb->n_location + 1, sizeof *m->locs);
    m->lines = calloc(nlines + 1, sizeof *m->lines);
    m->samples = calloc(pb->n_sample + 1, sizeof *m->samples);
    m->sample_locs = calloc(nsl + 1, sizeof *m->sample_locs);
    m->labels = calloc(nlab + 1, sizeof *m->labels);
    if (!m->types || !m->fmap || !m->lmap || !m->locs || !m->lines || !m->samples || !m->sample_locs || !m->labels)
        return pp_fail(PPROF_ENOMEM);

    for (size_t i = 0; i < pb->n_sample_type; i++) {
        const char *t = STR(pb->sample_type[i]->type), *u = STR(pb->sample_type[i]->unit);
        if (!t || !u)
            return pp_error_detail(PPROF_EINVAL, "sample type %zu names a string that is not there", i);
        m->types[i] = (pprof_value_type){t, u};
        if (pb->default_sample_type && pb->default_sample_type == pb->sample_type[i]->type)
            v->default_type = (int)i;
    }
    v->types = m->types;
    v->ntypes = pb->n_sample_type;

    size_t li = 0;
    for (size_t i = 0; i < pb->n_location; i++) {
        const Perftools__Profiles__Location *l = pb->location[i];
        m->locs[i] = (pprof_location){.id = l->id, .address = l->address, .nlines = l->n_line,
                                      .lines = &m->lines[li]};
        for (size_t k = 0; k < l->n_line; k++, li++) {
            long f = find_id(m->fmap, pb->n_function, l->line[k]->function_id);
            const char *name = "", *sys = "";
            if (f >= 0) {
                name = STR(pb->function[f]->name);
                sys = STR(pb->function[f]->system_name);
                if (!name || !sys)
                    return pp_error_detail(PPROF_EINVAL, "function %ld names a string that is not there", f);
            }
            m->lines[li] = (pprof_line){.function = name, .system_name = sys, .filename = "", .line = l->line[k]->line};
        }
    }
    v->locs = m->locs;
    v->nlocs = pb->n_location;

    size_t si = 0, lab = 0;
    for (size_t i = 0; i < pb->n_sample; i++) {
        const Perftools__Profiles__Sample *s = pb->sample[i];
        pprof_sample *o = &m->samples[i];
        o->nvalues = s->n_value;
        o->values = s->value;
        o->locations = &m->sample_locs[si];
        o->nlocations = s->n_location_id;
        for (size_t k = 0; k < s->n_location_id; k++) {
            long x = find_id(m->lmap, pb->n_location, s->location_id[k]);
            if (x < 0)
                return pp_error_detail(PPROF_EINVAL, "sample %zu names location %llu, which is not there", i,
                                       (unsigned long long)s->location_id[k]);
            m->sample_locs[si++] = &m->locs[x];
        }
        o->labels = &m->labels[lab];
        for (size_t k = 0; k < s->n_label; k++) {
            const Perftools__Profiles__Label *l = s->label[k];
            if (!l->str)
                continue; /* numeric labels are not folded */
            const char *key = STR(l->key), *val = STR(l->str);
            if (!key || !val)
                return pp_error_detail(PPROF_EINVAL, "sample %zu has a label naming a string that is not there", i);
            m->labels[lab++] = (pprof_label){key, val};
            o->nlabels++;
        }
    }
    v->samples = m->samples;
    v->nsamples = pb->n_sample;
    return 0;
#undef STR
}

int pprof_fold(const void *data, size_t len, const pprof_folded_config *cfg, pprof_writer w)
{
    if ((!data && len) || !w.write)
        return pp_error_detail(PPROF_EINVAL, "NULL data or writer");
    unsigned char *raw;
    size_t rawlen;
    int owned, rc = pp_gunzip(data, len, &raw, &rawlen, &owned);
    if (rc)
        return rc;
    Perftools__Profiles__Profile *pb = perftools__profiles__profile__unpack(NULL, rawlen, raw);
    if (owned)
        free(raw);
    if (!pb)
        return pp_error_detail(PPROF_EINVAL, "not a pprof profile (it does not decode)");
    pp_model_view v;
    view_mem m = {0};
    rc = lay_out(pb, &v, &m);
    if (rc == 0)
        rc = pp_write_folded_view(&v, cfg, w);
    view_mem_free(&m);
    perftools__profiles__profile__free_unpacked(pb, NULL);
    return rc;
}
