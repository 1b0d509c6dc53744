/* encode.c: the in-memory profile -> pprof protobuf (gzipped or not); the
 * format dispatch of pprof_profile_write. Folded stacks are folded.c.
 *
 * Streaming. The protobuf is never built whole. A message on the wire is a
 * sequence of fields, and a repeated field may be written one element at a
 * time, so the encoder writes, in field-number order:
 *   1. each ValueType of sample_type (field 1), Sample (2; written
 *      directly in the wire format, see emit_samples), Mapping (3),
 *      Location (4) and Function (5) as one tagged, length-delimited
 *      element, packed by protobuf-c from a single reused struct;
 *   2. each string of the string table (6);
 *   3. a Profile message holding only the remaining scalar fields
 *      (time_nanos, duration_nanos, period_type, period, comment,
 *      default_sample_type), packed by protobuf-c.
 * The concatenation is exactly the serialization of the whole Profile, and
 * memory stays proportional to the string and function tables, not to the
 * number of samples.
 *
 * Tables. The model interned every string and numbered the functions
 * when the profile was built (model/model.h): the string and function
 * tables are written as the model holds them, and a string's index is its
 * id there. Location and mapping IDs are the profile's own (1..N).
 * A mapping's has_inline_frames is set when the model says inlined calls
 * were looked for, or one of its locations carries more than one line.
 *
 * Output. Bytes go through a sink (wire.h), which stages them, so that
 * protobuf-c appending a few bytes at a time makes few writer and zlib
 * calls. The first writer failure stops all further work.
 *
 * The profile is only read, so any number of threads may encode it at once.
 * Nothing here prints; failures set a pprof_strerror detail.
 */
#include "encode.h"
#include "wire.h"

#include "base/base.h"
#include "model/model.h"
#include "proto/profile.pb-c.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------ validation */

int pp_encode_validate(const struct pp_model_view *v, int need_values, pp_encode_maxima *mx)
{
    memset(mx, 0, sizeof *mx);
    if (!v->finished)
        return pp_error_detail(PPROF_EINVAL, "the profile is not finished");
    if ((v->ntypes && !v->types) || (v->nsamples && !v->samples) ||
        (v->nlocs && !v->locs) || (v->nmaps && !v->maps) ||
        (v->ncomments && !v->comments))
        return pp_error_detail(PPROF_EINVAL, "the profile has a missing table");
    for (size_t i = 0; i < v->nsamples; i++) {
        const pprof_sample *s = &v->samples[i];
        if (need_values && s->nvalues != v->ntypes)
            return pp_error_detail(PPROF_EINVAL, "sample %zu has %zu values for %zu sample types",
                                   i, s->nvalues, v->ntypes);
        if ((s->nvalues && !s->values) || (s->nlocations && !s->locations) ||
            (s->nlabels && !s->labels))
            return pp_error_detail(PPROF_EINVAL, "sample %zu has a missing array", i);
        for (size_t j = 0; j < s->nlocations; j++)
            if (!s->locations[j])
                return pp_error_detail(PPROF_EINVAL, "sample %zu has a NULL location", i);
    }
    for (size_t i = 0; i < v->nlocs; i++) {
        const pprof_location *l = &v->locs[i];
        if (l->nlines && !l->lines)
            return pp_error_detail(PPROF_EINVAL, "location %zu has no line array", i);
        if (l->nlines > mx->lines)
            mx->lines = l->nlines;
    }
    return 0;
}

/* --------------------------------------------------------------- protobuf */

typedef struct enc {
    const pprof_profile *p;
    pp_model_view v;
    pp_sink *s;
    int err;          /* PPROF_ENOMEM once an allocation failed */
    /* scratch reused for every sample and location */
    pp_sample_buf sb;            /* one encoded sample */
    uint64_t *ids;            /* one sample's location ids */
    size_t ids_cap;
    pp_wire_label *labels;       /* one sample's labels */
    size_t labels_cap;
    Perftools__Profiles__Line *lines;
    Perftools__Profiles__Line **line_ptrs;
} enc;

/* The string table id of `s`; a string the model did not intern stops
 * the encoding with PPROF_EINVAL. */
static int64_t str_index(enc *e, const char *s)
{
    int64_t i = pp_model_string_id(e->p, s);
    if (i < 0) {
        e->err = pp_error_detail(PPROF_EINVAL, "a string is missing from the profile's string table");
        return 0;
    }
    return i;
}

/* Whether the encoding must stop. */
static bool failed(const enc *e)
{
    return e->err != 0 || e->s->err != 0;
}

static void emit_sample_types(enc *e)
{
    const pp_model_view *v = &e->v;
    for (size_t i = 0; i < v->ntypes && !failed(e); i++) {
        Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
        vt.type = str_index(e, v->types[i].type);
        vt.unit = str_index(e, v->types[i].unit);
        if (!e->err)
            pp_put_message(e->s, F_SAMPLE_TYPE, &vt.base);
    }
}

/* Room for n entries in a scratch array; 0 or PPROF_ENOMEM. */
static int scratch(void *arrp, size_t *cap, size_t n, size_t size)
{
    return pp_reserve(arrp, cap, n ? n - 1 : 0, size) ? PPROF_ENOMEM : 0;
}

static void emit_samples(enc *e)
{
    const pp_model_view *v = &e->v;
    for (size_t i = 0; i < v->nsamples && !failed(e); i++) {
        const pprof_sample *s = &v->samples[i];
        size_t nl = s->nlabels + s->nnum_labels;
        if (scratch(&e->ids, &e->ids_cap, s->nlocations, sizeof *e->ids) ||
            scratch(&e->labels, &e->labels_cap, nl, sizeof *e->labels)) {
            e->err = PPROF_ENOMEM;
            return;
        }
        for (size_t j = 0; j < s->nlocations; j++)
            e->ids[j] = s->locations[j]->id;
        for (size_t j = 0; j < s->nlabels; j++)
            e->labels[j] = (pp_wire_label){str_index(e, s->labels[j].key), str_index(e, s->labels[j].value), 0, 0};
        for (size_t j = 0; j < s->nnum_labels; j++) {
            const pprof_num_label *l = &s->num_labels[j];
            e->labels[s->nlabels + j] = (pp_wire_label){str_index(e, l->key), 0, l->value,
                                                     l->unit && l->unit[0] ? str_index(e, l->unit) : 0};
        }
        if (pp_put_sample(e->s, &e->sb, e->ids, s->nlocations, s->values, s->nvalues, e->labels, nl))
            e->err = PPROF_ENOMEM;
    }
}

/* The index of the mapping with `id`, or -1. IDs are normally index + 1. */
static ptrdiff_t mapping_index(const pp_model_view *v, uint64_t id)
{
    if (id == 0)
        return -1;
    if (id <= v->nmaps && v->maps[id - 1].id == id)
        return (ptrdiff_t)(id - 1);
    for (size_t i = 0; i < v->nmaps; i++)
        if (v->maps[i].id == id)
            return (ptrdiff_t)i;
    return -1;
}

static void emit_mappings(enc *e)
{
    const pp_model_view *v = &e->v;
    if (v->nmaps == 0)
        return;
    bool *inlines = calloc(v->nmaps, sizeof *inlines);
    if (!inlines) {
        e->err = PPROF_ENOMEM;
        return;
    }
    for (size_t i = 0; i < v->nlocs; i++) {
        if (v->locs[i].nlines > 1) {
            ptrdiff_t m = mapping_index(v, v->locs[i].mapping_id);
            if (m >= 0)
                inlines[m] = true;
        }
    }
    for (size_t i = 0; i < v->nmaps && !failed(e); i++) {
        const pprof_mapping *pm = &v->maps[i];
        Perftools__Profiles__Mapping m = PERFTOOLS__PROFILES__MAPPING__INIT;
        m.id = pm->id;
        m.memory_start = pm->start;
        m.memory_limit = pm->limit;
        m.file_offset = pm->offset;
        m.filename = str_index(e, pm->path);
        m.build_id = str_index(e, pm->build_id);
        m.has_functions = pm->has_functions != 0;
        m.has_filenames = pm->has_filenames != 0;
        m.has_line_numbers = pm->has_line_numbers != 0;
        m.has_inline_frames = pm->has_inline_frames || inlines[i];
        if (!e->err)
            pp_put_message(e->s, F_MAPPING, &m.base);
    }
    free(inlines);
}

static void emit_locations(enc *e)
{
    const pp_model_view *v = &e->v;
    for (size_t i = 0; i < v->nlocs && !failed(e); i++) {
        const pprof_location *l = &v->locs[i];
        Perftools__Profiles__Location m = PERFTOOLS__PROFILES__LOCATION__INIT;
        m.id = l->id;
        m.mapping_id = l->mapping_id;
        m.address = l->address;
        for (size_t j = 0; j < l->nlines; j++) {
            const pprof_line *src = &l->lines[j];
            Perftools__Profiles__Line *ln = &e->lines[j];
            perftools__profiles__line__init(ln);
            ln->function_id = pp_model_line_function(e->p, l, j);
            ln->line = src->line;
            e->line_ptrs[j] = ln;
        }
        m.n_line = l->nlines; /* innermost first, as stored */
        m.line = e->line_ptrs;
        if (!e->err)
            pp_put_message(e->s, F_LOCATION, &m.base);
    }
}

static void emit_functions(enc *e)
{
    size_t n;
    const pp_model_function *f = pp_model_functions(e->p, &n);
    for (size_t i = 0; i < n && !failed(e); i++) {
        Perftools__Profiles__Function m = PERFTOOLS__PROFILES__FUNCTION__INIT;
        m.id = i + 1;
        m.name = f[i].name;
        m.system_name = f[i].system_name;
        m.filename = f[i].filename;
        pp_put_message(e->s, F_FUNCTION, &m.base);
    }
}

/* Writes the string table and the scalar fields. */
static void emit_tail(enc *e)
{
    const pp_model_view *v = &e->v;
    Perftools__Profiles__Profile tail = PERFTOOLS__PROFILES__PROFILE__INIT;
    Perftools__Profiles__ValueType period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    int64_t *comments = NULL;

    tail.time_nanos = v->time_nanos;
    tail.duration_nanos = v->duration_nanos;
    tail.period = v->period;
    if ((v->period_type.type && v->period_type.type[0]) ||
        (v->period_type.unit && v->period_type.unit[0])) {
        period_type.type = str_index(e, v->period_type.type);
        period_type.unit = str_index(e, v->period_type.unit);
        tail.period_type = &period_type;
    }
    if (v->ncomments) {
        comments = malloc(v->ncomments * sizeof *comments);
        if (!comments) {
            e->err = PPROF_ENOMEM;
            return;
        }
        for (size_t i = 0; i < v->ncomments; i++)
            comments[i] = str_index(e, v->comments[i]);
        tail.n_comment = v->ncomments;
        tail.comment = comments;
    }
    if (v->default_type >= 0 && (size_t)v->default_type < v->ntypes)
        tail.default_sample_type = str_index(e, v->types[v->default_type].type);

    size_t nstr;
    const char *const *strs = pp_model_strings(e->p, &nstr);
    for (size_t i = 0; i < nstr && !failed(e); i++)
        pp_put_string(e->s, F_STRING_TABLE, strs[i]);
    if (!failed(e))
        perftools__profiles__profile__pack_to_buffer(&tail, &e->s->base);
    free(comments);
}

/* Allocates the scratch arrays; counts of 0 still give valid pointers. */
static int enc_scratch(enc *e, const pp_encode_maxima *mx)
{
    e->lines = malloc((mx->lines + 1) * sizeof *e->lines);
    e->line_ptrs = malloc((mx->lines + 1) * sizeof *e->line_ptrs);
    if (!e->lines || !e->line_ptrs)
        return pp_fail(PPROF_ENOMEM);
    return 0;
}

static void enc_free(enc *e)
{
    free(e->sb.p);
    free(e->ids);
    free(e->labels);
    free(e->lines);
    free(e->line_ptrs);
}

int pp_encode_proto(const pprof_profile *p, int gzip, pprof_writer w)
{
    if (!p || !w.write)
        return pp_error_detail(PPROF_EINVAL, "NULL profile or writer");
    enc e;
    memset(&e, 0, sizeof e);
    e.p = p;
    pp_model_view_of(p, &e.v);
    pp_encode_maxima mx;
    int rc = pp_encode_validate(&e.v, true, &mx);
    if (rc)
        return rc;
    if (enc_scratch(&e, &mx) < 0) {
        enc_free(&e);
        return pp_fail(PPROF_ENOMEM);
    }
    rc = pp_sink_new(w, gzip != 0, &e.s);
    if (rc) {
        enc_free(&e);
        return rc;
    }

    emit_sample_types(&e);
    emit_samples(&e);
    emit_mappings(&e);
    emit_locations(&e);
    emit_functions(&e);
    emit_tail(&e);

    rc = pp_sink_close(e.s, e.err == 0);
    if (e.err)
        rc = e.err;
    enc_free(&e);
    return rc;
}

int pp_encode_merged(const void *profile, int gzip, pprof_writer w)
{
    const Perftools__Profiles__Profile *p = profile;
    pp_sink *s;
    int rc = pp_sink_new(w, gzip != 0, &s);
    if (rc)
        return rc;
    pp_sample_buf sb = {0};
    pp_wire_label *labels = NULL;
    size_t labels_cap = 0;
    for (size_t i = 0; i < p->n_sample_type && !s->err; i++)
        pp_put_message(s, F_SAMPLE_TYPE, &p->sample_type[i]->base);
    for (size_t i = 0; i < p->n_sample && !s->err && !rc; i++) {
        const Perftools__Profiles__Sample *x = p->sample[i];
        if ((rc = scratch(&labels, &labels_cap, x->n_label, sizeof *labels)) != 0)
            break;
        for (size_t j = 0; j < x->n_label; j++)
            labels[j] = (pp_wire_label){x->label[j]->key, x->label[j]->str, x->label[j]->num, x->label[j]->num_unit};
        rc = pp_put_sample(s, &sb, x->location_id, x->n_location_id, x->value, x->n_value, labels, x->n_label);
    }
    for (size_t i = 0; i < p->n_mapping && !s->err; i++)
        pp_put_message(s, F_MAPPING, &p->mapping[i]->base);
    for (size_t i = 0; i < p->n_location && !s->err; i++)
        pp_put_message(s, F_LOCATION, &p->location[i]->base);
    for (size_t i = 0; i < p->n_function && !s->err; i++)
        pp_put_message(s, F_FUNCTION, &p->function[i]->base);
    for (size_t i = 0; i < p->n_string_table && !s->err; i++)
        pp_put_string(s, F_STRING_TABLE, p->string_table[i]);
    Perftools__Profiles__Profile tail = *p; /* the scalar fields and comments */
    tail.n_sample_type = tail.n_sample = tail.n_mapping = tail.n_location = tail.n_function = 0;
    tail.n_string_table = 0;
    if (!s->err && !rc)
        perftools__profiles__profile__pack_to_buffer(&tail, &s->base);
    free(sb.p);
    free(labels);
    int err = pp_sink_close(s, rc == 0);
    return rc ? pp_fail(rc) : err;
}

/* ----------------------------------------------------------------- folded */

/* ----------------------------------------------------------------- public */

/* The core's way to write gzipped pprof (base/process.h). */
static int write_gzip_fd(const pprof_profile *p, int fd)
{
    return pp_encode_proto(p, 1, pprof_writer_fd(fd));
}

__attribute__((constructor)) static void register_gzip_encoder(void)
{
    pp_gzip_encoder_register(write_gzip_fd);
}

int pprof_profile_write(const pprof_profile *p, pprof_format fmt, pprof_writer w)
{
    if (!p || !w.write)
        return pp_error_detail(PPROF_EINVAL, "NULL profile or writer");
    switch (fmt) {
    case PPROF_FORMAT_PROTO_GZIP:
        return pp_encode_proto(p, 1, w);
    case PPROF_FORMAT_PROTO:
        return pp_encode_proto(p, 0, w);
    case PPROF_FORMAT_FOLDED:
        return pprof_profile_write_folded(p, NULL, w);
    case PPROF_FORMAT_TEXT:
        return pp_encode_text(p, w, 0);
    case PPROF_FORMAT_TEXT_DUMP:
        return pp_encode_text(p, w, 1);
    }
    return pp_error_detail(PPROF_EINVAL, "unknown profile format %d", (int)fmt);
}
