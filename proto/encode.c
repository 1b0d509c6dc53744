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
 * Tables. Strings are interned as they are met: "" is index 0 and every
 * distinct string appears once (open addressing; the table points at the
 * profile's own strings, which outlive the encoding). Everything that names
 * a string is interned before the string table is written. Functions are
 * deduplicated on (name, system_name, filename) and numbered 1..N in
 * first-use order. Location and mapping IDs are the profile's own (1..N).
 * A mapping's has_inline_frames is set when one of its locations carries
 * more than one line, i.e. inlined calls were resolved there.
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

/* ---------------------------------------------------------- string table */

typedef struct strtab {
    char **str;       /* index -> string (not owned; protobuf-c's type) */
    uint32_t *hash;   /* index -> hash of str */
    size_t n, cap;
    uint32_t *slot;   /* open addressing: index + 1, 0 when free */
    size_t mask;      /* number of slots - 1 (a power of two - 1) */
} strtab;

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int strtab_rehash(strtab *t)
{
    size_t nslots = (t->mask + 1) * 2;
    uint32_t *slot = calloc(nslots, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = t->hash[i] & (nslots - 1);
        while (slot[j])
            j = (j + 1) & (nslots - 1);
        slot[j] = (uint32_t)(i + 1);
    }
    free(t->slot);
    t->slot = slot;
    t->mask = nslots - 1;
    return 0;
}

/* The index of `s` (NULL counts as ""), added if new; -1 when out of
 * memory. */
static int64_t strtab_intern(strtab *t, const char *s)
{
    if (!s)
        s = "";
    uint32_t h = hash_str(s);
    size_t i = h & t->mask;
    for (uint32_t v; (v = t->slot[i]) != 0; i = (i + 1) & t->mask)
        if (t->hash[v - 1] == h && strcmp(t->str[v - 1], s) == 0)
            return (int64_t)(v - 1);
    if (t->n == t->cap) {
        if (t->n >= UINT32_MAX / 2)
            return -1;
        size_t cap = t->cap ? t->cap * 2 : 256;
        char **str = realloc(t->str, cap * sizeof *str);
        if (!str)
            return -1;
        t->str = str;
        uint32_t *hash = realloc(t->hash, cap * sizeof *hash);
        if (!hash)
            return -1;
        t->hash = hash;
        t->cap = cap;
    }
    t->str[t->n] = (char *)s;
    t->hash[t->n] = h;
    t->slot[i] = (uint32_t)(t->n + 1);
    t->n++;
    /* Keep the load at most one half. */
    if (t->n * 2 > t->mask + 1 && strtab_rehash(t) < 0)
        return -1;
    return (int64_t)(t->n - 1);
}

static int strtab_init(strtab *t)
{
    memset(t, 0, sizeof *t);
    t->mask = 255;
    t->slot = calloc(t->mask + 1, sizeof *t->slot);
    if (!t->slot)
        return -1;
    return strtab_intern(t, "") == 0 ? 0 : -1;
}

static void strtab_free(strtab *t)
{
    free(t->str);
    free(t->hash);
    free(t->slot);
}

/* -------------------------------------------------------- function table */

typedef struct fn_key {
    int64_t name, system_name, filename; /* string indices */
} fn_key;

typedef struct fntab {
    fn_key *fn;       /* id - 1 -> key */
    uint32_t *hash;
    size_t n, cap;
    uint32_t *slot;   /* id, 0 when free */
    size_t mask;
} fntab;

static uint32_t hash_fn(fn_key k)
{
    uint64_t h = (uint64_t)k.name * 0x9e3779b97f4a7c15ull;
    h = (h ^ (uint64_t)k.system_name) * 0xff51afd7ed558ccdull;
    h = (h ^ (uint64_t)k.filename) * 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(h ^ (h >> 32));
}

static int fntab_rehash(fntab *t)
{
    size_t nslots = t->mask ? (t->mask + 1) * 2 : 256;
    uint32_t *slot = calloc(nslots, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = t->hash[i] & (nslots - 1);
        while (slot[j])
            j = (j + 1) & (nslots - 1);
        slot[j] = (uint32_t)(i + 1);
    }
    free(t->slot);
    t->slot = slot;
    t->mask = nslots - 1;
    return 0;
}

/* The ID of the function with key `k`, added if new; 0 when out of memory. */
static uint64_t fntab_id(fntab *t, fn_key k)
{
    if (!t->slot && fntab_rehash(t) < 0)
        return 0;
    uint32_t h = hash_fn(k);
    size_t i = h & t->mask;
    for (uint32_t v; (v = t->slot[i]) != 0; i = (i + 1) & t->mask) {
        const fn_key *f = &t->fn[v - 1];
        if (f->name == k.name && f->system_name == k.system_name && f->filename == k.filename)
            return v;
    }
    if (t->n == t->cap) {
        if (t->n >= UINT32_MAX / 2)
            return 0;
        size_t cap = t->cap ? t->cap * 2 : 256;
        fn_key *fn = realloc(t->fn, cap * sizeof *fn);
        if (!fn)
            return 0;
        t->fn = fn;
        uint32_t *hash = realloc(t->hash, cap * sizeof *hash);
        if (!hash)
            return 0;
        t->hash = hash;
        t->cap = cap;
    }
    t->fn[t->n] = k;
    t->hash[t->n] = h;
    t->slot[i] = (uint32_t)(t->n + 1);
    t->n++;
    if (t->n * 2 > t->mask + 1 && fntab_rehash(t) < 0)
        return 0;
    return t->n;
}

static void fntab_free(fntab *t)
{
    free(t->fn);
    free(t->hash);
    free(t->slot);
}

/* ------------------------------------------------------------ validation */

/* Largest per-element counts, for sizing the reused scratch arrays. */
typedef struct maxima {
    size_t lines;
} maxima;

/* Checks that `p` is finished and self-consistent, so that encoding can
 * only fail on memory or the writer. `need_values`: every sample has one
 * value per sample type (the protobuf requires it). */
static int validate(const pprof_profile *p, bool need_values, maxima *mx)
{
    memset(mx, 0, sizeof *mx);
    if (p->b)
        return pp_error_detail(PPROF_EINVAL, "the profile is not finished");
    if ((p->ntypes && !p->types) || (p->nsamples && !p->samples) ||
        (p->nlocations && !p->locations) || (p->nmappings && !p->mappings) ||
        (p->ncomments && !p->comments))
        return pp_error_detail(PPROF_EINVAL, "the profile has a missing table");
    for (size_t i = 0; i < p->nsamples; i++) {
        const pprof_sample *s = &p->samples[i];
        if (need_values && s->nvalues != p->ntypes)
            return pp_error_detail(PPROF_EINVAL, "sample %zu has %zu values for %zu sample types",
                                   i, s->nvalues, p->ntypes);
        if ((s->nvalues && !s->values) || (s->nlocations && !s->locations) ||
            (s->nlabels && !s->labels))
            return pp_error_detail(PPROF_EINVAL, "sample %zu has a missing array", i);
        for (size_t j = 0; j < s->nlocations; j++)
            if (!s->locations[j])
                return pp_error_detail(PPROF_EINVAL, "sample %zu has a NULL location", i);
    }
    for (size_t i = 0; i < p->nlocations; i++) {
        const pprof_location *l = &p->locations[i];
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
    sink *s;
    int err;          /* PPROF_ENOMEM once an allocation failed */
    strtab st;
    fntab ft;
    /* scratch reused for every sample and location */
    unsigned char *sample_buf; /* one encoded sample */
    size_t sample_cap;
    Perftools__Profiles__Line *lines;
    Perftools__Profiles__Line **line_ptrs;
} enc;

/* The string index of `s`; on failure records PPROF_ENOMEM and gives 0. */
static int64_t str_index(enc *e, const char *s)
{
    int64_t i = strtab_intern(&e->st, s);
    if (i < 0) {
        e->err = PPROF_ENOMEM;
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
    const pprof_profile *p = e->p;
    for (size_t i = 0; i < p->ntypes && !failed(e); i++) {
        Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
        vt.type = str_index(e, p->types[i].type);
        vt.unit = str_index(e, p->types[i].unit);
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

static void emit_samples(enc *e)
{
    const pprof_profile *p = e->p;
    for (size_t i = 0; i < p->nsamples && !failed(e); i++) {
        const pprof_sample *s = &p->samples[i];
        size_t locs = 0, vals = 0, labels = 0;
        for (size_t j = 0; j < s->nlocations; j++)
            locs += varint_size(s->locations[j]->id);
        for (size_t j = 0; j < s->nvalues; j++)
            vals += varint_size((uint64_t)s->values[j]);
        for (size_t j = 0; j < s->nlabels; j++) {
            size_t n = label_size(str_index(e, s->labels[j].key), str_index(e, s->labels[j].value), 0, 0);
            labels += 1 + varint_size(n) + n;
        }
        for (size_t j = 0; j < s->nnum_labels; j++) {
            const pprof_num_label *l = &s->num_labels[j];
            size_t n = label_size(str_index(e, l->key), 0, l->value, l->unit && l->unit[0] ? str_index(e, l->unit) : 0);
            labels += 1 + varint_size(n) + n;
        }
        size_t body = (locs ? 1 + varint_size(locs) + locs : 0) + (vals ? 1 + varint_size(vals) + vals : 0) + labels;
        unsigned char *buf = e->sample_buf, *b;
        if (body + 32 > e->sample_cap) {
            free(e->sample_buf);
            e->sample_cap = (body + 32) * 2;
            if (!(e->sample_buf = malloc(e->sample_cap))) {
                e->sample_cap = 0;
                e->err = PPROF_ENOMEM;
                return;
            }
            buf = e->sample_buf;
        }
        b = buf;
        *b++ = F_SAMPLE << 3 | WIRE_LEN;
        b = varint_to(b, body);
        if (locs) {
            *b++ = 1 << 3 | WIRE_LEN;
            b = varint_to(b, locs);
            for (size_t j = 0; j < s->nlocations; j++)
                b = varint_to(b, s->locations[j]->id);
        }
        if (vals) {
            *b++ = 2 << 3 | WIRE_LEN;
            b = varint_to(b, vals);
            for (size_t j = 0; j < s->nvalues; j++)
                b = varint_to(b, (uint64_t)s->values[j]);
        }
        for (size_t j = 0; j < s->nlabels; j++)
            b = label_to(b, str_index(e, s->labels[j].key), str_index(e, s->labels[j].value), 0, 0);
        for (size_t j = 0; j < s->nnum_labels; j++) {
            const pprof_num_label *l = &s->num_labels[j];
            b = label_to(b, str_index(e, l->key), 0, l->value, l->unit && l->unit[0] ? str_index(e, l->unit) : 0);
        }
        sink_put(e->s, buf, (size_t)(b - buf));
    }
}

/* The index of the mapping with `id`, or -1. IDs are normally index + 1. */
static ptrdiff_t mapping_index(const pprof_profile *p, uint64_t id)
{
    if (id == 0)
        return -1;
    if (id <= p->nmappings && p->mappings[id - 1].id == id)
        return (ptrdiff_t)(id - 1);
    for (size_t i = 0; i < p->nmappings; i++)
        if (p->mappings[i].id == id)
            return (ptrdiff_t)i;
    return -1;
}

static void emit_mappings(enc *e)
{
    const pprof_profile *p = e->p;
    if (p->nmappings == 0)
        return;
    bool *inlines = calloc(p->nmappings, sizeof *inlines);
    if (!inlines) {
        e->err = PPROF_ENOMEM;
        return;
    }
    for (size_t i = 0; i < p->nlocations; i++) {
        if (p->locations[i].nlines > 1) {
            ptrdiff_t m = mapping_index(p, p->locations[i].mapping_id);
            if (m >= 0)
                inlines[m] = true;
        }
    }
    for (size_t i = 0; i < p->nmappings && !failed(e); i++) {
        const pprof_mapping *pm = &p->mappings[i];
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
        m.has_inline_frames = inlines[i];
        if (!e->err)
            put_message(e->s, F_MAPPING, &m.base);
    }
    free(inlines);
}

static void emit_locations(enc *e)
{
    const pprof_profile *p = e->p;
    for (size_t i = 0; i < p->nlocations && !failed(e); i++) {
        const pprof_location *l = &p->locations[i];
        Perftools__Profiles__Location m = PERFTOOLS__PROFILES__LOCATION__INIT;
        m.id = l->id;
        m.mapping_id = l->mapping_id;
        m.address = l->address;
        for (size_t j = 0; j < l->nlines; j++) {
            const pprof_line *src = &l->lines[j];
            Perftools__Profiles__Line *ln = &e->lines[j];
            perftools__profiles__line__init(ln);
            fn_key k = {
                .name = str_index(e, src->function),
                .system_name = str_index(e, src->system_name),
                .filename = str_index(e, src->filename),
            };
            ln->function_id = fntab_id(&e->ft, k);
            if (ln->function_id == 0)
                e->err = PPROF_ENOMEM;
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
    for (size_t i = 0; i < e->ft.n && !failed(e); i++) {
        Perftools__Profiles__Function m = PERFTOOLS__PROFILES__FUNCTION__INIT;
        m.id = i + 1;
        m.name = e->ft.fn[i].name;
        m.system_name = e->ft.fn[i].system_name;
        m.filename = e->ft.fn[i].filename;
        put_message(e->s, F_FUNCTION, &m.base);
    }
}

/* Writes the string table and the scalar fields; everything they name is
 * interned first. */
static void emit_tail(enc *e)
{
    const pprof_profile *p = e->p;
    Perftools__Profiles__Profile tail = PERFTOOLS__PROFILES__PROFILE__INIT;
    Perftools__Profiles__ValueType period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    int64_t *comments = NULL;

    tail.time_nanos = p->time_nanos;
    tail.duration_nanos = p->duration_nanos;
    tail.period = p->period;
    if ((p->period_type.type && p->period_type.type[0]) ||
        (p->period_type.unit && p->period_type.unit[0])) {
        period_type.type = str_index(e, p->period_type.type);
        period_type.unit = str_index(e, p->period_type.unit);
        tail.period_type = &period_type;
    }
    if (p->ncomments) {
        comments = malloc(p->ncomments * sizeof *comments);
        if (!comments) {
            e->err = PPROF_ENOMEM;
            return;
        }
        for (size_t i = 0; i < p->ncomments; i++)
            comments[i] = str_index(e, p->comments[i]);
        tail.n_comment = p->ncomments;
        tail.comment = comments;
    }
    if (p->default_type >= 0 && (size_t)p->default_type < p->ntypes)
        tail.default_sample_type = str_index(e, p->types[p->default_type].type);

    for (size_t i = 0; i < e->st.n && !failed(e); i++)
        put_string(e->s, F_STRING_TABLE, e->st.str[i]);
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
    free(e->sample_buf);
    free(e->lines);
    free(e->line_ptrs);
    strtab_free(&e->st);
    fntab_free(&e->ft);
}

int pp_encode_proto(const pprof_profile *p, int gzip, pprof_writer w)
{
    if (!p || !w.write)
        return pp_error_detail(PPROF_EINVAL, "NULL profile or writer");
    maxima mx;
    int rc = validate(p, true, &mx);
    if (rc)
        return rc;

    enc e;
    memset(&e, 0, sizeof e);
    e.p = p;
    if (strtab_init(&e.st) < 0 || enc_scratch(&e, &mx) < 0) {
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

/* ----------------------------------------------------------------- folded */

/* Writes a frame name; ';' (the frame separator) becomes ':' and line
 * breaks become spaces, so every sample stays one well-formed line. */
static void put_frame_name(sink *s, const char *name)
{
    while (*name) {
        size_t n = strcspn(name, ";\n\r");
        sink_put(s, name, n);
        name += n;
        if (*name) {
            sink_put(s, *name == ';' ? ":" : " ", 1);
            name++;
        }
    }
}

int pp_encode_folded(const pprof_profile *p, pprof_writer w)
{
    if (!p || !w.write)
        return pp_error_detail(PPROF_EINVAL, "NULL profile or writer");
    maxima mx;
    int rc = validate(p, false, &mx);
    if (rc)
        return rc;
    sink *s;
    rc = sink_new(w, false, &s);
    if (rc)
        return rc;

    char num[32];
    for (size_t i = 0; i < p->nsamples && s->err == 0; i++) {
        const pprof_sample *sm = &p->samples[i];
        bool first = true;
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
                    sink_put(s, ";", 1);
                first = false;
                if (name && name[0]) {
                    put_frame_name(s, name);
                } else {
                    int n = snprintf(num, sizeof num, "0x%" PRIx64, l->address);
                    sink_put(s, num, (size_t)n);
                }
            } while (k > 0);
        }
        int n = snprintf(num, sizeof num, " %" PRId64 "\n", sm->nvalues ? sm->values[0] : 0);
        sink_put(s, num, (size_t)n);
    }
    return sink_close(s, true);
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
        return pp_encode_folded(p, w);
    case PPROF_FORMAT_TEXT:
        return pp_encode_text(p, w, 0);
    case PPROF_FORMAT_TEXT_DUMP:
        return pp_encode_text(p, w, 1);
    }
    return pp_error_detail(PPROF_EINVAL, "unknown profile format %d", (int)fmt);
}
