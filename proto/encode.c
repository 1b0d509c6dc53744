/* encode.c: the in-memory profile -> pprof protobuf (gzipped or not), and
 * folded stacks.
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
 * Output. Bytes go through a sink: a ProtobufCBuffer whose append stages
 * them in a 64 KiB buffer and, when it fills, deflates it (gzip, zlib level
 * 1 as Go uses, gzip framing) or hands it to the writer (plain). protobuf-c
 * appends a few bytes at a time, so staging keeps writer and zlib calls
 * few. The first writer failure stops all further work.
 *
 * The profile is only read, so any number of threads may encode it at once.
 * Nothing here prints; failures set a pprof_strerror detail.
 */
#define _GNU_SOURCE /* qsort_r */
#include "encode.h"

#include "base/base.h"
#include "model/model.h"
#include "proto/profile.pb-c.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Field numbers of Profile written element by element. */
enum {
    F_SAMPLE_TYPE = 1,
    F_SAMPLE = 2,
    F_MAPPING = 3,
    F_LOCATION = 4,
    F_FUNCTION = 5,
    F_STRING_TABLE = 6,
};
#define WIRE_LEN 2 /* wire type of length-delimited fields */

/* ------------------------------------------------------------------ sink */

typedef struct sink {
    ProtobufCBuffer base; /* first: protobuf-c appends through it */
    pprof_writer w;
    bool gzip;
    bool zinit;           /* z needs deflateEnd */
    int err;              /* first failure, 0 while all is well */
    z_stream z;
    size_t len;           /* bytes staged in `in` */
    unsigned char in[PP_ENCODE_CHUNK];
    unsigned char out[PP_ENCODE_CHUNK];
} sink;

static void sink_emit(sink *s, const unsigned char *data, size_t len)
{
    if (s->err == 0 && len > 0 && s->w.write(s->w.ctx, data, len) < 0)
        s->err = pp_error_detail(PPROF_EIO, "the writer failed");
}

/* Passes the staged bytes on; `flush` is Z_NO_FLUSH, or Z_FINISH to end
 * the gzip stream. */
static void sink_drain(sink *s, int flush)
{
    if (s->err)
        return;
    if (!s->gzip) {
        sink_emit(s, s->in, s->len);
        s->len = 0;
        return;
    }
    s->z.next_in = s->in;
    s->z.avail_in = (uInt)s->len;
    /* deflate stops when the input is used up or the output is full, so
     * output space left over means it is done (Z_STREAM_END for Z_FINISH). */
    do {
        s->z.next_out = s->out;
        s->z.avail_out = (uInt)sizeof s->out;
        if (deflate(&s->z, flush) == Z_STREAM_ERROR) {
            s->err = pp_error_detail(PPROF_EIO, "zlib deflate failed");
            return;
        }
        sink_emit(s, s->out, sizeof s->out - s->z.avail_out);
        if (s->err)
            return;
    } while (s->z.avail_out == 0);
    s->len = 0;
}

static void sink_put(sink *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0 && s->err == 0) {
        size_t n = sizeof s->in - s->len;
        if (n > len)
            n = len;
        memcpy(s->in + s->len, p, n);
        s->len += n;
        p += n;
        len -= n;
        if (s->len == sizeof s->in)
            sink_drain(s, Z_NO_FLUSH);
    }
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    sink_put((sink *)b, data, len);
}

static int sink_new(pprof_writer w, bool gzip, sink **out)
{
    /* Large buffers: on the heap, since callers may run on small stacks. */
    sink *s = malloc(sizeof *s);
    if (!s)
        return pp_fail(PPROF_ENOMEM);
    s->base.append = sink_append;
    s->w = w;
    s->gzip = gzip;
    s->zinit = false;
    s->err = 0;
    s->len = 0;
    if (gzip) {
        memset(&s->z, 0, sizeof s->z);
        /* windowBits 15 + 16: a gzip header and trailer around deflate. */
        int rc = deflateInit2(&s->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
        if (rc != Z_OK) {
            free(s);
            return rc == Z_MEM_ERROR ? PPROF_ENOMEM
                                     : pp_error_detail(PPROF_EIO, "zlib deflateInit2 failed");
        }
        s->zinit = true;
    }
    *out = s;
    return 0;
}

/* Flushes what is staged (and ends the gzip stream) when `finish`, frees
 * the sink and returns its first error. */
static int sink_close(sink *s, bool finish)
{
    if (finish)
        sink_drain(s, Z_FINISH);
    int err = s->err;
    if (s->zinit)
        deflateEnd(&s->z);
    free(s);
    return err;
}

/* Appends a varint to b; returns the new end. */
static unsigned char *varint_to(unsigned char *b, uint64_t v)
{
    while (v >= 0x80) {
        *b++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *b++ = (unsigned char)v;
    return b;
}

static void put_varint(sink *s, uint64_t v)
{
    unsigned char b[10];
    sink_put(s, b, (size_t)(varint_to(b, v) - b));
}

/* Writes one element of a repeated message field of Profile. */
static void put_message(sink *s, uint32_t field, const ProtobufCMessage *m)
{
    put_varint(s, (uint64_t)field << 3 | WIRE_LEN);
    put_varint(s, protobuf_c_message_get_packed_size(m));
    protobuf_c_message_pack_to_buffer(m, &s->base);
}

/* Writes one element of a repeated string field of Profile. */
static void put_string(sink *s, uint32_t field, const char *str)
{
    size_t len = strlen(str);
    put_varint(s, (uint64_t)field << 3 | WIRE_LEN);
    put_varint(s, len);
    sink_put(s, str, len);
}

/* ------------------------------------------------------------ validation */

/* Largest per-element counts, for sizing the reused scratch arrays. */
typedef struct maxima {
    size_t lines;
} maxima;

/* Checks that `p` is finished and self-consistent, so that encoding can
 * only fail on memory or the writer. `need_values`: every sample has one
 * value per sample type (the protobuf requires it). */
static int validate(const pp_model_view *v, bool need_values, maxima *mx)
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

/* A label by string ids (0: absent): key = 1, str = 2, num = 3, num_unit = 4. */
typedef struct wire_label {
    int64_t key, str, num, unit;
} wire_label;

/* A buffer reused for each sample's bytes. */
typedef struct sample_buf {
    unsigned char *p;
    size_t cap;
} sample_buf;

typedef struct enc {
    const pprof_profile *p;
    pp_model_view v;
    sink *s;
    int err;          /* PPROF_ENOMEM once an allocation failed */
    /* scratch reused for every sample and location */
    sample_buf sb;            /* one encoded sample */
    uint64_t *ids;            /* one sample's location ids */
    size_t ids_cap;
    wire_label *labels;       /* one sample's labels */
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
            put_message(e->s, F_SAMPLE_TYPE, &vt.base);
    }
}

/* Samples are most of a profile's bytes, so they are written directly in
 * the wire format (packed location ids and values, labels as nested
 * messages) rather than through protobuf-c's generic packer, which walks
 * the message descriptor for every field of every sample. */
static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* The Label message's size: key = 1, str = 2, num = 3, num_unit = 4. */
static size_t label_size(int64_t key, int64_t str, int64_t num, int64_t unit)
{
    size_t n = 0;
    if (key)
        n += 1 + varint_size((uint64_t)key);
    if (str)
        n += 1 + varint_size((uint64_t)str);
    if (num)
        n += 1 + varint_size((uint64_t)num);
    if (unit)
        n += 1 + varint_size((uint64_t)unit);
    return n;
}

static unsigned char *label_to(unsigned char *b, int64_t key, int64_t str, int64_t num, int64_t unit)
{
    *b++ = 3 << 3 | WIRE_LEN;
    b = varint_to(b, label_size(key, str, num, unit));
    if (key)
        *b++ = 1 << 3, b = varint_to(b, (uint64_t)key);
    if (str)
        *b++ = 2 << 3, b = varint_to(b, (uint64_t)str);
    if (num)
        *b++ = 3 << 3, b = varint_to(b, (uint64_t)num);
    if (unit)
        *b++ = 4 << 3, b = varint_to(b, (uint64_t)unit);
    return b;
}

/* Writes one Sample (field 2) in the wire format; PPROF_ENOMEM or 0. */
static int put_sample(sink *s, sample_buf *sb, const uint64_t *loc_ids, size_t nlocs, const int64_t *values,
                      size_t nvalues, const wire_label *labels, size_t nlabels)
{
    size_t locs = 0, vals = 0, lab = 0;
    for (size_t j = 0; j < nlocs; j++)
        locs += varint_size(loc_ids[j]);
    for (size_t j = 0; j < nvalues; j++)
        vals += varint_size((uint64_t)values[j]);
    for (size_t j = 0; j < nlabels; j++) {
        size_t n = label_size(labels[j].key, labels[j].str, labels[j].num, labels[j].unit);
        lab += 1 + varint_size(n) + n;
    }
    size_t body = (locs ? 1 + varint_size(locs) + locs : 0) + (vals ? 1 + varint_size(vals) + vals : 0) + lab;
    if (body + 32 > sb->cap) {
        free(sb->p);
        sb->cap = (body + 32) * 2;
        if (!(sb->p = malloc(sb->cap))) {
            sb->cap = 0;
            return PPROF_ENOMEM;
        }
    }
    unsigned char *b = sb->p;
    *b++ = F_SAMPLE << 3 | WIRE_LEN;
    b = varint_to(b, body);
    if (locs) {
        *b++ = 1 << 3 | WIRE_LEN;
        b = varint_to(b, locs);
        for (size_t j = 0; j < nlocs; j++)
            b = varint_to(b, loc_ids[j]);
    }
    if (vals) {
        *b++ = 2 << 3 | WIRE_LEN;
        b = varint_to(b, vals);
        for (size_t j = 0; j < nvalues; j++)
            b = varint_to(b, (uint64_t)values[j]);
    }
    for (size_t j = 0; j < nlabels; j++)
        b = label_to(b, labels[j].key, labels[j].str, labels[j].num, labels[j].unit);
    sink_put(s, sb->p, (size_t)(b - sb->p));
    return 0;
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
            e->labels[j] = (wire_label){str_index(e, s->labels[j].key), str_index(e, s->labels[j].value), 0, 0};
        for (size_t j = 0; j < s->nnum_labels; j++) {
            const pprof_num_label *l = &s->num_labels[j];
            e->labels[s->nlabels + j] = (wire_label){str_index(e, l->key), 0, l->value,
                                                     l->unit && l->unit[0] ? str_index(e, l->unit) : 0};
        }
        if (put_sample(e->s, &e->sb, e->ids, s->nlocations, s->values, s->nvalues, e->labels, nl))
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
            put_message(e->s, F_MAPPING, &m.base);
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
            put_message(e->s, F_LOCATION, &m.base);
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
        put_message(e->s, F_FUNCTION, &m.base);
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
        put_string(e->s, F_STRING_TABLE, strs[i]);
    if (!failed(e))
        perftools__profiles__profile__pack_to_buffer(&tail, &e->s->base);
    free(comments);
}

/* Allocates the scratch arrays; counts of 0 still give valid pointers. */
static int enc_scratch(enc *e, const maxima *mx)
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
    maxima mx;
    int rc = validate(&e.v, true, &mx);
    if (rc)
        return rc;
    if (enc_scratch(&e, &mx) < 0) {
        enc_free(&e);
        return pp_fail(PPROF_ENOMEM);
    }
    rc = sink_new(w, gzip != 0, &e.s);
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

    rc = sink_close(e.s, e.err == 0);
    if (e.err)
        rc = e.err;
    enc_free(&e);
    return rc;
}

int pp_encode_merged(const void *profile, int gzip, pprof_writer w)
{
    const Perftools__Profiles__Profile *p = profile;
    sink *s;
    int rc = sink_new(w, gzip != 0, &s);
    if (rc)
        return rc;
    sample_buf sb = {0};
    wire_label *labels = NULL;
    size_t labels_cap = 0;
    for (size_t i = 0; i < p->n_sample_type && !s->err; i++)
        put_message(s, F_SAMPLE_TYPE, &p->sample_type[i]->base);
    for (size_t i = 0; i < p->n_sample && !s->err && !rc; i++) {
        const Perftools__Profiles__Sample *x = p->sample[i];
        if ((rc = scratch(&labels, &labels_cap, x->n_label, sizeof *labels)) != 0)
            break;
        for (size_t j = 0; j < x->n_label; j++)
            labels[j] = (wire_label){x->label[j]->key, x->label[j]->str, x->label[j]->num, x->label[j]->num_unit};
        rc = put_sample(s, &sb, x->location_id, x->n_location_id, x->value, x->n_value, labels, x->n_label);
    }
    for (size_t i = 0; i < p->n_mapping && !s->err; i++)
        put_message(s, F_MAPPING, &p->mapping[i]->base);
    for (size_t i = 0; i < p->n_location && !s->err; i++)
        put_message(s, F_LOCATION, &p->location[i]->base);
    for (size_t i = 0; i < p->n_function && !s->err; i++)
        put_message(s, F_FUNCTION, &p->function[i]->base);
    for (size_t i = 0; i < p->n_string_table && !s->err; i++)
        put_string(s, F_STRING_TABLE, p->string_table[i]);
    Perftools__Profiles__Profile tail = *p; /* the scalar fields and comments */
    tail.n_sample_type = tail.n_sample = tail.n_mapping = tail.n_location = tail.n_function = 0;
    tail.n_string_table = 0;
    if (!s->err && !rc)
        perftools__profiles__profile__pack_to_buffer(&tail, &s->base);
    free(sb.p);
    free(labels);
    int err = sink_close(s, rc == 0);
    return rc ? pp_fail(rc) : err;
}

/* ----------------------------------------------------------------- folded */

/* A growable text buffer for the folded lines. */
typedef struct fbuf {
    char *p;
    size_t n, cap;
    int oom;
} fbuf;

static void fbuf_put(fbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->n + n)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* A frame name; ';' (the frame separator) becomes ':' and line breaks
 * spaces, so every stack stays one well-formed line. */
static void fbuf_frame(fbuf *b, const char *name)
{
    while (*name) {
        size_t n = strcspn(name, ";\n\r");
        fbuf_put(b, name, n);
        name += n;
        if (*name) {
            fbuf_put(b, *name == ';' ? ":" : " ", 1);
            name++;
        }
    }
}

typedef struct fline {
    size_t off, len; /* the stack's text in the fbuf */
    int64_t value;
} fline;

static int cmp_fline(const void *x, const void *y, void *arg)
{
    const fline *a = x, *b = y;
    const char *text = arg;
    int c = memcmp(text + a->off, text + b->off, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The index of the value to write, or -1 after recording the error. */
static int folded_value_index(const pp_model_view *v, const char *want)
{
    if (!want || !*want)
        return v->default_type >= 0 && (size_t)v->default_type < v->ntypes ? v->default_type
                                                                             : (int)v->ntypes - 1;
    char *end;
    long i = strtol(want, &end, 10);
    if (*want >= '0' && *want <= '9' && !*end)
        return i >= 0 && (size_t)i < v->ntypes ? (int)i : -1;
    for (size_t k = 0; k < v->ntypes; k++)
        if (v->types[k].type && !strcmp(v->types[k].type, want))
            return (int)k;
    return -1;
}

static int no_such_type(const pp_model_view *v, const char *want)
{
    char names[256] = "";
    size_t n = 0;
    for (size_t k = 0; k < v->ntypes && n < sizeof names; k++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", k ? ", " : "",
                              v->types[k].type ? v->types[k].type : "?");
    return pp_error_detail(PPROF_ENOTFOUND, "no sample type \"%s\" in this profile (it has %s)", want, names);
}

int pprof_profile_write_folded(const pprof_profile *p, const pprof_folded_config *cfg, pprof_writer w)
{
    if (!p || !w.write)
        return pp_error_detail(PPROF_EINVAL, "NULL profile or writer");
    pp_model_view view;
    pp_model_view_of(p, &view);
    return pp_write_folded_view(&view, cfg, w);
}

int pp_write_folded_view(const struct pp_model_view *v, const pprof_folded_config *cfg, pprof_writer w)
{
    maxima mx;
    int rc = validate(v, false, &mx);
    if (rc)
        return rc;
    int vi = folded_value_index(v, cfg ? cfg->sample_type : NULL);
    if (vi < 0 && (v->ntypes || (cfg && cfg->sample_type && *cfg->sample_type)))
        return no_such_type(v, cfg->sample_type ? cfg->sample_type : "");

    fbuf b = {0};
    fline *lines = malloc((v->nsamples ? v->nsamples : 1) * sizeof *lines);
    size_t nl = 0;
    char num[32];
    for (size_t i = 0; lines && i < v->nsamples && !b.oom; i++) {
        const pprof_sample *sm = &v->samples[i];
        int64_t value = vi >= 0 && (size_t)vi < sm->nvalues ? sm->values[vi] : 0;
        if (value == 0)
            continue;
        size_t off = b.n;
        bool first = true;
        if (cfg && cfg->labels && sm->nlabels) {
            fbuf_put(&b, "[", 1);
            for (size_t k = 0; k < sm->nlabels; k++) {
                if (k)
                    fbuf_put(&b, " ", 1);
                fbuf_frame(&b, sm->labels[k].key ? sm->labels[k].key : "");
                fbuf_put(&b, "=", 1);
                fbuf_frame(&b, sm->labels[k].value ? sm->labels[k].value : "");
            }
            fbuf_put(&b, "]", 1);
            first = false;
        }
        /* Root first: locations are stored leaf first, and a location's
         * lines innermost first, so both are walked backwards. */
        for (size_t j = sm->nlocations; j-- > 0;) {
            const pprof_location *l = sm->locations[j];
            size_t k = l->nlines;
            do {
                const char *name = NULL;
                if (k > 0) {
                    k--;
                    name = l->lines[k].function;
                    if (!name || !name[0])
                        name = l->lines[k].system_name;
                }
                if (!first)
                    fbuf_put(&b, ";", 1);
                first = false;
                if (name && name[0]) {
                    fbuf_frame(&b, name);
                } else {
                    int n = snprintf(num, sizeof num, "0x%" PRIx64, l->address);
                    fbuf_put(&b, num, (size_t)n);
                }
            } while (k > 0);
        }
        if (b.n == off)
            continue; /* no frame and no label: a folded line cannot say it */
        lines[nl++] = (fline){off, b.n - off, value};
    }
    if (!lines || b.oom) {
        free(lines);
        free(b.p);
        return pp_fail(PPROF_ENOMEM);
    }
    if (nl > 1)
        qsort_r(lines, nl, sizeof *lines, cmp_fline, b.p);
    sink *s;
    rc = sink_new(w, false, &s);
    for (size_t i = 0; rc == 0 && i < nl && s->err == 0;) {
        size_t j = i + 1;
        int64_t sum = lines[i].value;
        for (; j < nl && cmp_fline(&lines[i], &lines[j], b.p) == 0; j++)
            sum += lines[j].value;
        if (sum != 0) {
            sink_put(s, b.p + lines[i].off, lines[i].len);
            int n = snprintf(num, sizeof num, " %" PRId64 "\n", sum);
            sink_put(s, num, (size_t)n);
        }
        i = j;
    }
    free(lines);
    free(b.p);
    return rc ? rc : sink_close(s, true);
}

/* ----------------------------------------------------------------- public */

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
