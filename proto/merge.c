/* merge.c: several pprof protobufs into one (pprof_merge, pprof.h).
 *
 * Each input is unpacked with protobuf-c into one arena (gunzipped first
 * when it starts with gzip's magic) and copied into one output Profile: its string ids
 * are mapped into one string table (interned with base/hash.h's index),
 * its mapping, function and location ids (checked first, merge_check.c)
 * are shifted past the previous inputs' largest (nothing is shared between inputs, so the mappings of
 * different processes stay apart), and its samples gain the input's extra
 * labels. The output is built in an arena, packed once through the
 * encoder's gzip sink, and freed.
 */
#include "encode.h"
#include "merge_check.h"

#include "base/base.h"
#include "model/model.h"
#include "proto/profile.pb-c.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile Profile;

typedef struct merger {
    pp_arena arena;
    pp_strtab strs;          /* the output strings */
    /* output arrays (pointers into the arena) */
    Perftools__Profiles__Sample **samples;
    size_t nsamples, samples_cap;
    Perftools__Profiles__Mapping **maps;
    size_t nmaps, maps_cap;
    Perftools__Profiles__Location **locs;
    size_t nlocs, locs_cap;
    Perftools__Profiles__Function **fns;
    size_t nfns, fns_cap;
    pp_merge_tops base;      /* what the next input's ids are shifted by */
    int64_t *comments;
    size_t ncomments, comments_cap;
    int64_t *smap;           /* the current input's string ids -> output ids */
    size_t smap_cap;
    pp_model_namer *namer;   /* names what inputs left unnamed; NULL: none */
    int namer_tried;
    pprof_symbolize how;     /* the namer's */
    pp_index named_ix;       /* the functions the namer made, by their strings */
    struct named_fn {
        int64_t name, system_name, filename;
        uint64_t id;
    } *named;
    size_t named_cap;
} merger;

/* The output id of string s, added when new; -1 when out of memory. */
static int64_t str_id(merger *m, const char *s)
{
    return pp_strtab_id(&m->strs, s, &m->arena);
}

#define MAX_GUESS (1u << 30)

int pp_gunzip(const unsigned char *in, size_t len, unsigned char **out, size_t *outlen, int *owned)
{
    *owned = 0;
    if (len < 2 || in[0] != 0x1f || in[1] != 0x8b) {
        *out = (unsigned char *)in;
        *outlen = len;
        return 0;
    }
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return pp_fail(PPROF_ENOMEM);
    /* gzip's trailer holds the size mod 2^32: usually the exact size */
    size_t isize = len < 18 ? 0
                            : (size_t)in[len - 4] | (size_t)in[len - 3] << 8 | (size_t)in[len - 2] << 16 |
                                  (size_t)in[len - 1] << 24;
    /* trusted no further than deflate's largest ratio, 1032:1 */
    size_t cap = (isize >= len && isize < MAX_GUESS && isize / 1032 <= len ? isize : len * 4) + 4096, n = 0;
    unsigned char *buf = malloc(cap);
    int rc = buf ? Z_OK : Z_MEM_ERROR;
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)len;
    while (rc == Z_OK) {
        if (n == cap) {
            unsigned char *b = realloc(buf, cap * 2);
            if (!b) {
                rc = Z_MEM_ERROR;
                break;
            }
            buf = b;
            cap *= 2;
        }
        z.next_out = buf + n;
        z.avail_out = (uInt)(cap - n);
        rc = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return rc == Z_MEM_ERROR ? pp_fail(PPROF_ENOMEM) : pp_error_detail(PPROF_EINVAL, "bad gzip data");
    }
    *out = buf;
    *outlen = n;
    *owned = 1;
    return 0;
}

#define GROW(m, arr, n, cap) (pp_reserve(&(m)->arr, &(m)->cap, (m)->n, sizeof *(m)->arr) == 0)

/* Appends to m->arr a copy of the message *src, made in the arena; the
 * copy, or NULL when out of memory. */
#define APPEND_COPY(m, arr, n, cap, src) append_copy((m), (void ***)&(m)->arr, &(m)->n, &(m)->cap, (src), sizeof *(src))
/* A copied message leaves the input's unknown fields behind: protobuf-c
 * reads a field numbered 0 written in two bytes (80 00) but writes it in
 * one (00), which it then refuses to read, so a member's stray field
 * would make the merge unreadable. */
static void drop_unknown(void *msg)
{
    ProtobufCMessage *base = msg;
    base->n_unknown_fields = 0;
    base->unknown_fields = NULL;
}

static void *append_copy(merger *m, void ***arr, size_t *n, size_t *cap, const void *src, size_t size)
{
    void *d = pp_arena_alloc(&m->arena, size);
    if (!d || pp_reserve(arr, cap, *n, sizeof **arr) < 0)
        return NULL;
    memcpy(d, src, size);
    drop_unknown(d);
    (*arr)[(*n)++] = d;
    return d;
}

/* The output id of the current input's string i (from m->smap), -1 when
 * it is out of range (a bad input). */
static int64_t in_str(merger *m, const Profile *p, int64_t i)
{
    if (i < 0 || (size_t)i >= p->n_string_table)
        return -1;
    return m->smap[i];
}

/* The id of the function (name, system name, file) the namer made, made
 * now when new; 0 when out of memory. */
static uint64_t named_function(merger *m, const pp_model_frame *f)
{
    int64_t ids[3] = {str_id(m, f->name), str_id(m, f->system_name), str_id(m, f->filename)};
    if (ids[0] < 0 || ids[1] < 0 || ids[2] < 0)
        return 0;
    uint64_t h = pp_hash_mix(pp_hash_mix(pp_hash_mix(0, (uint64_t)ids[0]), (uint64_t)ids[1]), (uint64_t)ids[2]);
    PP_INDEX_PROBE(&m->named_ix, h, j) {
        const struct named_fn *x = &m->named[m->named_ix.slot[j] - 1];
        if (x->name == ids[0] && x->system_name == ids[1] && x->filename == ids[2])
            return x->id;
    }
    Perftools__Profiles__Function *fn = pp_arena_alloc(&m->arena, sizeof *fn);
    if (!fn || pp_reserve(&m->named, &m->named_cap, m->named_ix.n, sizeof *m->named) < 0 ||
        !GROW(m, fns, nfns, fns_cap))
        return 0;
    uint32_t k = pp_index_add(&m->named_ix, h);
    if (!k)
        return 0;
    perftools__profiles__function__init(fn);
    fn->id = ++m->base.function; /* past every input's so far; later ones are shifted past it */
    fn->name = ids[0];
    fn->system_name = ids[1];
    fn->filename = ids[2];
    m->fns[m->nfns++] = fn;
    m->named[k - 1] = (struct named_fn){ids[0], ids[1], ids[2], fn->id};
    return fn->id;
}

/* Names the locations of the current input without lines (m->locs from
 * loc_from, its mappings m->maps from map_from) in the files this process
 * maps too, through the namer, and marks their mappings. */
static int name_locations(merger *m, size_t loc_from, size_t map_from)
{
    if (!m->namer_tried) {
        m->namer_tried = 1;
        m->namer = pp_model_namer_begin(m->how);
    }
    if (!m->namer)
        return 0;
    size_t nm = m->nmaps - map_from;
    int *left = calloc(nm + 1, sizeof *left); /* per mapping: locations still without names */
    if (!left)
        return pp_fail(PPROF_ENOMEM);
    int rc = 0, touched = 0;
    for (size_t i = loc_from; i < m->nlocs && rc == 0; i++) {
        Perftools__Profiles__Location *d = m->locs[i];
        size_t k = 0;
        while (k < nm && m->maps[map_from + k]->id != d->mapping_id)
            k++;
        const Perftools__Profiles__Mapping *map = k < nm ? m->maps[map_from + k] : NULL;
        if (d->n_line || !d->address || !map || d->address < map->memory_start || d->address >= map->memory_limit ||
            !map->filename)
            continue;
        touched = 1;
        pp_model_frame f[16];
        int n = pp_model_namer_lookup(m->namer, m->strs.strs[map->filename], m->strs.strs[map->build_id],
                                      d->address - map->memory_start + map->file_offset, f, 16);
        Perftools__Profiles__Line **lines = n ? pp_arena_alloc(&m->arena, (size_t)n * (sizeof *lines + sizeof **lines)) : NULL;
        if (n && !lines) {
            rc = pp_fail(PPROF_ENOMEM);
            break;
        }
        Perftools__Profiles__Line *ln = (Perftools__Profiles__Line *)(lines + n);
        for (int j = 0; j < n; j++) {
            perftools__profiles__line__init(&ln[j]);
            if (!(ln[j].function_id = named_function(m, &f[j]))) {
                rc = pp_fail(PPROF_ENOMEM);
                break;
            }
            ln[j].line = f[j].line;
            lines[j] = &ln[j];
        }
        if (rc == 0 && n) {
            d->line = lines;
            d->n_line = (size_t)n;
            Perftools__Profiles__Mapping *mm = m->maps[map_from + k];
            mm->has_filenames |= f[0].filename[0] != 0;
            mm->has_line_numbers |= f[0].line > 0;
            mm->has_inline_frames |= m->how != PPROF_SYMBOLIZE_FUNCTIONS && f[0].line > 0;
        } else {
            left[k]++;
        }
    }
    for (size_t k = 0; k < nm && touched; k++)
        if (!left[k] && m->maps[map_from + k]->filename)
            m->maps[map_from + k]->has_functions = 1;
    free(left);
    return rc;
}

/* Copies input p (its ids shifted by the bases) into m. */
/* The input's strings, mappings and functions, their ids moved past those
 * of the inputs before it (map0, fn0). */
static int add_names(merger *m, const Profile *p, uint64_t map0, uint64_t fn0)
{
    if (pp_reserve(&m->smap, &m->smap_cap, p->n_string_table, sizeof *m->smap) < 0)
        return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; i < p->n_string_table; i++)
        if ((m->smap[i] = str_id(m, p->string_table[i])) < 0)
            return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; i < p->n_mapping; i++) {
        Perftools__Profiles__Mapping *d = APPEND_COPY(m, maps, nmaps, maps_cap, p->mapping[i]);
        if (!d)
            return pp_fail(PPROF_ENOMEM);
        d->id += map0;
        if ((d->filename = in_str(m, p, d->filename)) < 0 || (d->build_id = in_str(m, p, d->build_id)) < 0)
            return pp_error_detail(PPROF_EINVAL, "a mapping names a string that is not there");
    }
    for (size_t i = 0; i < p->n_function; i++) {
        Perftools__Profiles__Function *d = APPEND_COPY(m, fns, nfns, fns_cap, p->function[i]);
        if (!d)
            return pp_fail(PPROF_ENOMEM);
        d->id += fn0;
        if ((d->name = in_str(m, p, d->name)) < 0 || (d->system_name = in_str(m, p, d->system_name)) < 0 ||
            (d->filename = in_str(m, p, d->filename)) < 0)
            return pp_error_detail(PPROF_EINVAL, "a function names a string that is not there");
    }
    return 0;
}

/* The input's locations, with their lines, their ids moved as add_names
 * moved those they point at. */
static int add_locations(merger *m, const Profile *p, const pp_merge_tops *base)
{
    if (pp_reserve(&m->locs, &m->locs_cap, m->nlocs + p->n_location, sizeof *m->locs) < 0)
        return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; i < p->n_location; i++) {
        const Perftools__Profiles__Location *s = p->location[i];
        /* the location, its line pointers and lines: one piece */
        Perftools__Profiles__Location *d = pp_arena_alloc(&m->arena, sizeof *d + (s->n_line + 1) * sizeof(void *) +
                                                                          s->n_line * sizeof(Perftools__Profiles__Line));
        if (!d)
            return pp_fail(PPROF_ENOMEM);
        Perftools__Profiles__Line **lines = (Perftools__Profiles__Line **)(d + 1);
        Perftools__Profiles__Line *ln = (Perftools__Profiles__Line *)(lines + s->n_line + 1);
        *d = *s;
        drop_unknown(d);
        d->id += base->location;
        d->mapping_id = s->mapping_id ? s->mapping_id + base->mapping : 0;
        for (size_t k = 0; k < s->n_line; k++) {
            ln[k] = *s->line[k];
            drop_unknown(&ln[k]);
            ln[k].function_id = s->line[k]->function_id ? s->line[k]->function_id + base->function : 0;
            lines[k] = &ln[k];
        }
        d->line = lines;
        m->locs[m->nlocs++] = d;
    }
    return 0;
}

/* The input's own labels (in), the same on every sample: interned once,
 * into *out (nlabels + nnum_labels of them). */
static int input_labels(merger *m, const pprof_merge_input *in, Perftools__Profiles__Label **out)
{
    size_t nextra = in->nlabels + in->nnum_labels;
    Perftools__Profiles__Label *extra = pp_arena_alloc(&m->arena, (nextra + 1) * sizeof *extra);
    if (!extra)
        return pp_fail(PPROF_ENOMEM);
    for (size_t k = 0; k < in->nlabels; k++) {
        Perftools__Profiles__Label *x = &extra[k];
        perftools__profiles__label__init(x);
        if ((x->key = str_id(m, in->labels[k].key)) < 0 || (x->str = str_id(m, in->labels[k].value)) < 0)
            return pp_fail(PPROF_ENOMEM);
    }
    for (size_t k = 0; k < in->nnum_labels; k++) {
        Perftools__Profiles__Label *x = &extra[in->nlabels + k];
        perftools__profiles__label__init(x);
        x->num = in->num_labels[k].value;
        if ((x->key = str_id(m, in->num_labels[k].key)) < 0 ||
            (in->num_labels[k].unit && in->num_labels[k].unit[0] && (x->num_unit = str_id(m, in->num_labels[k].unit)) < 0))
            return pp_fail(PPROF_ENOMEM);
    }
    *out = extra;
    return 0;
}

/* The input's samples, each with its own labels and the input's (extra,
 * nextra), pointing at the locations add_locations moved by loc0. */
static int add_samples(merger *m, const Profile *p, uint64_t loc0, Perftools__Profiles__Label *extra, size_t nextra)
{
    if (pp_reserve(&m->samples, &m->samples_cap, m->nsamples + p->n_sample, sizeof *m->samples) < 0)
        return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        size_t nl = s->n_label + nextra;
        /* the sample, its location ids, its label pointers and labels: one piece */
        Perftools__Profiles__Sample *d = pp_arena_alloc(&m->arena, sizeof *d + (s->n_location_id + 1) * sizeof(uint64_t) +
                                                                        (nl + 1) * sizeof(void *) +
                                                                        (s->n_label + 1) * sizeof(Perftools__Profiles__Label));
        if (!d)
            return pp_fail(PPROF_ENOMEM);
        uint64_t *ids = (uint64_t *)(d + 1);
        Perftools__Profiles__Label **l = (Perftools__Profiles__Label **)(ids + s->n_location_id + 1);
        Perftools__Profiles__Label *lab = (Perftools__Profiles__Label *)(l + nl + 1);
        *d = *s;
        drop_unknown(d);
        for (size_t k = 0; k < s->n_location_id; k++)
            ids[k] = s->location_id[k] + loc0;
        d->location_id = ids;
        for (size_t k = 0; k < s->n_label; k++) {
            lab[k] = *s->label[k];
            drop_unknown(&lab[k]);
            if ((lab[k].key = in_str(m, p, s->label[k]->key)) < 0 || (lab[k].str = in_str(m, p, s->label[k]->str)) < 0 ||
                (lab[k].num_unit = in_str(m, p, s->label[k]->num_unit)) < 0)
                return pp_error_detail(PPROF_EINVAL, "a label names a string that is not there");
            l[k] = &lab[k];
        }
        for (size_t k = 0; k < nextra; k++)
            l[s->n_label + k] = &extra[k];
        d->label = l;
        d->n_label = nl;
        m->samples[m->nsamples++] = d;
    }
    return 0;
}

/* The input's comments not yet among the merge's. */
static int add_comments(merger *m, const Profile *p)
{
    for (size_t i = 0; i < p->n_comment; i++) {
        int64_t c = in_str(m, p, p->comment[i]);
        if (c < 0)
            return pp_error_detail(PPROF_EINVAL, "a comment names a string that is not there");
        size_t k = 0;
        while (k < m->ncomments && m->comments[k] != c)
            k++;
        if (k == m->ncomments) {
            if (!GROW(m, comments, ncomments, comments_cap))
                return pp_fail(PPROF_ENOMEM);
            m->comments[m->ncomments++] = c;
        }
    }
    return 0;
}

static int add_input(merger *m, const Profile *p, const pprof_merge_input *in, int name)
{
    size_t loc_from = m->nlocs, map_from = m->nmaps;
    pp_merge_tops tops;
    int rc = pp_merge_check(p, &tops);
    if (rc)
        return rc;
    pp_merge_tops base = m->base; /* the ids this input's are moved by */
    m->base = (pp_merge_tops){base.mapping + tops.mapping, base.function + tops.function,
                              base.location + tops.location};
    Perftools__Profiles__Label *extra = NULL;
    if ((rc = add_names(m, p, base.mapping, base.function)) != 0 || (rc = add_locations(m, p, &base)) != 0 ||
        (name && (rc = name_locations(m, loc_from, map_from)) != 0) || (rc = input_labels(m, in, &extra)) != 0 ||
        (rc = add_samples(m, p, base.location, extra, in->nlabels + in->nnum_labels)) != 0)
        return rc;
    return add_comments(m, p);
}

/* Whether b's sample types are a's (by their strings). */
static int same_types(const Profile *a, const Profile *b)
{
    if (a->n_sample_type != b->n_sample_type)
        return 0;
    for (size_t i = 0; i < a->n_sample_type; i++) {
        int64_t at = a->sample_type[i]->type, au = a->sample_type[i]->unit;
        int64_t bt = b->sample_type[i]->type, bu = b->sample_type[i]->unit;
        if (at < 0 || au < 0 || bt < 0 || bu < 0 || (size_t)at >= a->n_string_table ||
            (size_t)au >= a->n_string_table || (size_t)bt >= b->n_string_table || (size_t)bu >= b->n_string_table ||
            strcmp(a->string_table[at], b->string_table[bt]) || strcmp(a->string_table[au], b->string_table[bu]))
            return 0;
    }
    return 1;
}

static void merger_free(merger *m)
{
    pp_arena_release(&m->arena);
    pp_strtab_free(&m->strs);
    free(m->samples);
    free(m->maps);
    free(m->locs);
    free(m->fns);
    free(m->comments);
    free(m->smap);
    free(m->named);
    pp_index_free(&m->named_ix);
    pp_model_namer_end(m->namer);
}

/* The output id of string i of input p (not the current one), -1 when out
 * of range. */
static int64_t any_str(merger *m, const Profile *p, int64_t i)
{
    if (i < 0 || (size_t)i >= p->n_string_table)
        return -1;
    return str_id(m, p->string_table[i]);
}

/* Fills out (which points into m) from the first input p0 and m. */
static int finish(merger *m, const Profile *p0, int64_t time, int64_t duration, Profile *out)
{
    perftools__profiles__profile__init(out);
    Perftools__Profiles__ValueType **types = pp_arena_alloc(&m->arena, (p0->n_sample_type + 1) * sizeof *types);
    Perftools__Profiles__ValueType *vt = pp_arena_alloc(&m->arena, (p0->n_sample_type + 2) * sizeof *vt);
    if (!types || !vt)
        return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; i < p0->n_sample_type; i++) {
        perftools__profiles__value_type__init(&vt[i]);
        vt[i].type = any_str(m, p0, p0->sample_type[i]->type);
        vt[i].unit = any_str(m, p0, p0->sample_type[i]->unit);
        types[i] = &vt[i];
    }
    out->sample_type = types;
    out->n_sample_type = p0->n_sample_type;
    if (p0->period_type) {
        Perftools__Profiles__ValueType *pt = &vt[p0->n_sample_type];
        perftools__profiles__value_type__init(pt);
        pt->type = any_str(m, p0, p0->period_type->type);
        pt->unit = any_str(m, p0, p0->period_type->unit);
        out->period_type = pt;
    }
    if (p0->default_sample_type)
        out->default_sample_type = any_str(m, p0, p0->default_sample_type);
    out->period = p0->period;
    out->time_nanos = time;
    out->duration_nanos = duration;
    out->sample = m->samples;
    out->n_sample = m->nsamples;
    out->mapping = m->maps;
    out->n_mapping = m->nmaps;
    out->location = m->locs;
    out->n_location = m->nlocs;
    out->function = m->fns;
    out->n_function = m->nfns;
    out->comment = m->comments;
    out->n_comment = m->ncomments;
    out->string_table = (char **)m->strs.strs;
    out->n_string_table = pp_strtab_count(&m->strs);
    return 0;
}

/* protobuf-c allocates every message, array and string of an unpacked
 * profile on its own (tens of thousands of mallocs for a profile of
 * 10,000 samples); the inputs are unpacked into one arena instead, freed
 * at once. */
static void *unpack_alloc(void *arena, size_t size)
{
    return pp_arena_alloc(arena, size ? size : 1);
}

static void unpack_free(void *arena, void *p)
{
    (void)arena; /* freed with the arena */
    (void)p;
}

int pprof_merge(const pprof_merge_input *in, size_t n, pprof_writer w)
{
    return pprof_merge_naming(in, n, PPROF_SYMBOLIZE_NONE, w);
}

int pprof_merge_naming(const pprof_merge_input *in, size_t n, pprof_symbolize how, pprof_writer w)
{
    if (how < PPROF_SYMBOLIZE_DEFAULT || how > PPROF_SYMBOLIZE_NONE)
        return pp_error_detail(PPROF_EINVAL, "no such way to symbolize");
    if (!in || n == 0 || !w.write)
        return pp_error_detail(PPROF_EINVAL, "no inputs, or no writer");
    merger m;
    memset(&m, 0, sizeof m);
    m.how = how;
    m.namer_tried = how == PPROF_SYMBOLIZE_NONE;
    Profile **ps = calloc(n, sizeof *ps);
    if (!ps || str_id(&m, "") != 0) {
        free(ps);
        merger_free(&m);
        return pp_fail(PPROF_ENOMEM);
    }
    pp_arena unpacked = {0};
    ProtobufCAllocator alloc = {unpack_alloc, unpack_free, &unpacked};
    int rc = 0;
    int64_t time = 0, duration = 0;
    size_t first = 0; /* the first input with a profile */
    while (first < n && !in[first].data && !in[first].len)
        first++;
    if (first == n)
        rc = pp_error_detail(PPROF_EINVAL, "no input has a profile");
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (in[i].comment) {
            int64_t c = str_id(&m, in[i].comment);
            if (c < 0 || !GROW(&m, comments, ncomments, comments_cap)) {
                rc = pp_fail(PPROF_ENOMEM);
                break;
            }
            m.comments[m.ncomments++] = c;
        }
        if (!in[i].data && !in[i].len)
            continue;
        unsigned char *raw = NULL;
        size_t len = 0;
        int owned;
        if (!in[i].data && in[i].len) {
            rc = pp_error_detail(PPROF_EINVAL, "input %zu has no data", i);
            break;
        }
        if ((rc = pp_gunzip(in[i].data, in[i].len, &raw, &len, &owned)) != 0)
            break;
        ps[i] = perftools__profiles__profile__unpack(&alloc, len, raw);
        if (owned)
            free(raw);
        if (!ps[i]) {
            rc = pp_error_detail(PPROF_EINVAL, "input %zu is not a pprof profile", i);
            break;
        }
        if (!same_types(ps[first], ps[i])) {
            rc = pp_error_detail(PPROF_EINVAL, "input %zu has other sample types than input %zu", i, first);
            break;
        }
        if (ps[i]->time_nanos && (!time || ps[i]->time_nanos < time))
            time = ps[i]->time_nanos;
        if (ps[i]->duration_nanos > duration)
            duration = ps[i]->duration_nanos;
        rc = add_input(&m, ps[i], &in[i], !m.namer_tried || m.namer);
    }
    Profile out;
    if (rc == 0)
        rc = finish(&m, ps[first], time, duration, &out);
    if (rc == 0)
        rc = pp_encode_merged(&out, 1, w);
    pp_arena_release(&unpacked);
    free(ps);
    merger_free(&m);
    return rc;
}
