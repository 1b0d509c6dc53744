/* profile.c: the in-memory profile: building, symbolizing, walking, freeing.
 *
 * Build phase: pp_profile_add merges samples with equal (stack, labels)
 * through the sample index, so a recorder can add raw records one by
 * one; every string is interned into the string table as it arrives.
 * Finish: every distinct address is symbolized once; locations and
 * mappings get IDs 1..N (location IDs in first-seen order, mapping IDs in
 * address order), each sample's addresses become location pointers, and
 * the functions of the locations' lines are numbered 1..N.
 * A mapping's has_functions is set only when every location in it got a
 * function, has_filenames / has_line_numbers when its object has line
 * tables, has_inline_frames when those were also searched for inlined
 * calls (full symbolization), so pprof knows when to look elsewhere. Nothing here runs in a signal handler.
 */
#include "model.h"
#include "base/base.h"
#include "labels/labels.h"
#include "symbolize/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pp_builder {
    int unindexed;        /* filled by pp_profile_append: no merging */
    uint64_t **pcs;       /* per sample, leaf first */
    size_t *npcs;
    pp_index samples;     /* sample index + 1 */
};

/* The id of s in the string table, added when new: copied into the arena
 * when `copy`, else referenced. -1 when out of memory. */
static int64_t string_id(pprof_profile *p, const char *s, bool copy)
{
    return pp_strtab_id(&p->strtab, s, copy ? p->arena : NULL);
}

const char *pp_profile_intern(pprof_profile *p, const char *s)
{
    int64_t id = string_id(p, s, true);
    return id < 0 ? NULL : p->strtab.strs[id];
}

pprof_profile *pp_profile_new(const pprof_value_type *types, size_t ntypes,
                              pprof_value_type period_type, int64_t period)
{
    pprof_profile *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->arena = pp_arena_new();
    p->b = calloc(1, sizeof *p->b);
    p->types = p->arena ? pp_arena_alloc(p->arena, ntypes * sizeof *types + 1) : NULL;
    if (!p->arena || !p->b || !p->types)
        goto fail;
    p->ntypes = ntypes;
    p->default_type = -1;
    if (!pp_profile_intern(p, ""))
        goto fail;
    for (size_t i = 0; i < ntypes; i++) {
        p->types[i].type = pp_profile_intern(p, types[i].type);
        p->types[i].unit = pp_profile_intern(p, types[i].unit);
        if (!p->types[i].type || !p->types[i].unit)
            goto fail;
    }
    p->period_type.type = pp_profile_intern(p, period_type.type);
    p->period_type.unit = pp_profile_intern(p, period_type.unit);
    if (!p->period_type.type || !p->period_type.unit)
        goto fail;
    p->period = period;
    return p;
fail:
    pprof_profile_free(p);
    return NULL;
}

static uint64_t sample_hash(const uint64_t *pcs, size_t npcs, const pprof_label *labels, size_t nlabels,
                            const pprof_num_label *num, size_t nnum)
{
    uint64_t h = npcs;
    for (size_t i = 0; i < npcs; i++)
        h = pp_hash_mix(h, pcs[i]);
    for (size_t i = 0; i < nlabels; i++)
        h = pp_hash_mix(pp_hash_mix(h, pp_hash_str(labels[i].key)), pp_hash_str(labels[i].value));
    for (size_t i = 0; i < nnum; i++)
        h = pp_hash_mix(pp_hash_mix(h, pp_hash_str(num[i].key)), (uint64_t)num[i].value);
    return h;
}

static bool sample_equal(const pprof_profile *p, size_t i, const uint64_t *pcs, size_t npcs,
                         const pprof_label *labels, size_t nlabels, const pprof_num_label *num, size_t nnum)
{
    const pprof_sample *s = &p->samples[i];
    if (p->b->npcs[i] != npcs || s->nlabels != nlabels || s->nnum_labels != nnum)
        return false;
    if (memcmp(p->b->pcs[i], pcs, npcs * sizeof *pcs) != 0)
        return false;
    for (size_t k = 0; k < nlabels; k++)
        if (strcmp(s->labels[k].key, labels[k].key) || strcmp(s->labels[k].value, labels[k].value))
            return false;
    for (size_t k = 0; k < nnum; k++)
        if (s->num_labels[k].value != num[k].value || strcmp(s->num_labels[k].key, num[k].key) ||
            strcmp(s->num_labels[k].unit, num[k].unit ? num[k].unit : ""))
            return false;
    return true;
}

static int grow_samples(pprof_profile *p)
{
    struct pp_builder *b = p->b;
    size_t cap = p->samples_cap ? p->samples_cap * 2 : 256;
    pprof_sample *s = realloc(p->samples, cap * sizeof *s);
    if (!s)
        return pp_fail(PPROF_ENOMEM);
    p->samples = s;
    uint64_t **pcs = realloc(b->pcs, cap * sizeof *pcs);
    if (!pcs)
        return pp_fail(PPROF_ENOMEM);
    b->pcs = pcs;
    size_t *npcs = realloc(b->npcs, cap * sizeof *npcs);
    if (!npcs)
        return pp_fail(PPROF_ENOMEM);
    b->npcs = npcs;
    p->samples_cap = cap;
    return 0;
}

int pp_profile_add(pprof_profile *p, const uint64_t *pcs, size_t npcs, const int64_t *values,
                   const pprof_label *labels, size_t nlabels)
{
    return pp_profile_add_num(p, pcs, npcs, values, labels, nlabels, NULL, 0);
}

/* Stores a new sample at index nsamples; `pcs` is copied unless
 * `borrow`. With `h`, the sample index learns it under that hash. */
static int insert(pprof_profile *p, const uint64_t *h, const uint64_t *pcs, size_t npcs, int borrow,
                  const int64_t *values, const pprof_label *labels, size_t nlabels, const pprof_num_label *num,
                  size_t nnum)
{
    struct pp_builder *b = p->b;
    if (p->nsamples == p->samples_cap && grow_samples(p))
        return pp_fail(PPROF_ENOMEM);
    size_t i = p->nsamples;
    int64_t *v = pp_arena_alloc(p->arena, p->ntypes * sizeof *v + 1);
    uint64_t *c = borrow ? (uint64_t *)pcs : pp_arena_alloc(p->arena, npcs * sizeof *c + 1);
    pprof_label *l = nlabels ? pp_arena_alloc(p->arena, nlabels * sizeof *l) : NULL;
    pprof_num_label *nl = nnum ? pp_arena_alloc(p->arena, nnum * sizeof *nl) : NULL;
    if (!v || !c || (nlabels && !l) || (nnum && !nl))
        return pp_fail(PPROF_ENOMEM);
    for (size_t k = 0; k < nnum; k++) {
        nl[k].key = pp_profile_intern(p, num[k].key);
        nl[k].unit = pp_profile_intern(p, num[k].unit);
        nl[k].value = num[k].value;
        if (!nl[k].key || !nl[k].unit)
            return pp_fail(PPROF_ENOMEM);
    }
    memcpy(v, values, p->ntypes * sizeof *v);
    if (npcs && !borrow)
        memcpy(c, pcs, npcs * sizeof *c);
    for (size_t k = 0; k < nlabels; k++) {
        l[k].key = pp_profile_intern(p, labels[k].key);
        l[k].value = pp_profile_intern(p, labels[k].value);
        if (!l[k].key || !l[k].value)
            return pp_fail(PPROF_ENOMEM);
    }
    p->samples[i] = (pprof_sample){.nvalues = p->ntypes, .values = v, .nlabels = nlabels, .labels = l,
                                   .nnum_labels = nnum, .num_labels = nl};
    if (h && pp_index_add(&b->samples, *h) != i + 1)
        return pp_fail(PPROF_ENOMEM);
    b->pcs[i] = c;
    b->npcs[i] = npcs;
    p->nsamples++;
    return 0;
}

int pp_profile_add_num(pprof_profile *p, const uint64_t *pcs, size_t npcs, const int64_t *values,
                       const pprof_label *labels, size_t nlabels, const pprof_num_label *num, size_t nnum)
{
    if (!p || !p->b || (npcs && !pcs) || !values || (nlabels && !labels) || (nnum && !num))
        return pp_fail(PPROF_EINVAL);
    struct pp_builder *b = p->b;
    if (b->unindexed)
        return pp_fail(PPROF_EINVAL);
    uint64_t h = sample_hash(pcs, npcs, labels, nlabels, num, nnum);
    PP_INDEX_PROBE(&b->samples, h, j) {
        size_t i = b->samples.slot[j] - 1;
        if (sample_equal(p, i, pcs, npcs, labels, nlabels, num, nnum)) {
            int64_t *v = (int64_t *)p->samples[i].values;
            for (size_t k = 0; k < p->ntypes; k++)
                v[k] += values[k];
            return 0;
        }
    }
    return insert(p, &h, pcs, npcs, 0, values, labels, nlabels, num, nnum);
}

/* Adds src's samples that `keep` keeps (NULL: all) to dst, value k of src
 * times sign as dst's value first + k where bit k of mask is set (0
 * elsewhere), their labels keyed `drop` (NULL: none) left out. */
static int add_samples(pprof_profile *dst, const pprof_profile *src, int64_t sign, size_t first, uint32_t mask,
                       int (*keep)(const pprof_sample *s, void *arg), void *arg, const char *drop)
{
    if (!dst || !src || !src->b || first + src->ntypes > dst->ntypes || dst->ntypes > 16)
        return pp_fail(PPROF_EINVAL);
    int64_t v[16] = {0};
    pprof_label some[64], *kept = some;
    size_t cap = sizeof some / sizeof *some;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < src->nsamples; i++) {
        const pprof_sample *s = &src->samples[i];
        if (keep && !keep(s, arg))
            continue;
        for (size_t k = 0; k < src->ntypes; k++)
            v[first + k] = mask >> k & 1 ? sign * s->values[k] : 0;
        size_t n = 0;
        if (drop && s->nlabels > cap) {
            if (kept != some)
                free(kept);
            if (!(kept = malloc(s->nlabels * sizeof *kept))) {
                kept = some;
                rc = pp_fail(PPROF_ENOMEM);
                break;
            }
            cap = s->nlabels;
        }
        for (size_t k = 0; drop && k < s->nlabels; k++)
            if (strcmp(s->labels[k].key, drop))
                kept[n++] = s->labels[k];
        rc = pp_profile_add_num(dst, src->b->pcs[i], src->b->npcs[i], v, drop ? kept : s->labels,
                                drop ? n : s->nlabels, s->num_labels, s->nnum_labels);
    }
    if (kept != some)
        free(kept);
    return rc;
}

int pp_profile_add_profile(pprof_profile *dst, const pprof_profile *src, int64_t sign)
{
    if (!dst || !src || dst->ntypes != src->ntypes)
        return pp_fail(PPROF_EINVAL);
    return add_samples(dst, src, sign, 0, UINT32_MAX, NULL, NULL, NULL);
}

int pp_profile_add_profile_at(pprof_profile *dst, const pprof_profile *src, int64_t sign, size_t first)
{
    return add_samples(dst, src, sign, first, UINT32_MAX, NULL, NULL, NULL);
}

int pp_profile_add_profile_if(pprof_profile *dst, const pprof_profile *src, int (*keep)(const pprof_sample *s, void *arg),
                              void *arg, const char *drop)
{
    if (!dst || !src || dst->ntypes != src->ntypes)
        return pp_fail(PPROF_EINVAL);
    return add_samples(dst, src, 1, 0, UINT32_MAX, keep, arg, drop);
}

pprof_profile *pp_profile_new_like(const pprof_profile *src)
{
    pprof_profile *p = pp_profile_new(src->types, src->ntypes, src->period_type, src->period);
    if (p)
        p->default_type = src->default_type;
    return p;
}

int pp_profile_add_values(pprof_profile *dst, const pprof_profile *src, int64_t sign, uint32_t mask)
{
    if (!dst || !src || dst->ntypes != src->ntypes)
        return pp_fail(PPROF_EINVAL);
    return add_samples(dst, src, sign, 0, mask, NULL, NULL, NULL);
}

void pp_profile_drop_zero(pprof_profile *p)
{
    size_t k = 0;
    for (size_t i = 0; i < p->nsamples; i++) {
        int any = 0;
        for (size_t t = 0; t < p->ntypes; t++)
            any |= p->samples[i].values[t] != 0;
        if (!any)
            continue;
        p->samples[k] = p->samples[i];
        p->b->pcs[k] = p->b->pcs[i];
        p->b->npcs[k] = p->b->npcs[i];
        k++;
    }
    p->nsamples = k;
    p->b->unindexed = 1; /* the index points at old positions */
}

int pp_profile_append(pprof_profile *p, const uint64_t *pcs, size_t npcs, const int64_t *values,
                      const pprof_label *labels, size_t nlabels, const pprof_num_label *num, size_t nnum)
{
    if (!p || !p->b || (npcs && !pcs) || !values || (nlabels && !labels) || (nnum && !num))
        return pp_fail(PPROF_EINVAL);
    if (p->nsamples)
        if (!p->b->unindexed)
            return pp_fail(PPROF_EINVAL);
    p->b->unindexed = 1;
    return insert(p, NULL, pcs, npcs, 1, values, labels, nlabels, num, nnum);
}

int pp_profile_say_rates(pprof_profile *p, int hz, int hz_min, int hz_max, const char *exact)
{
    if (!hz_max || (hz_min == hz && hz_max == hz))
        return 0;
    char text[200];
    if (hz_min == hz_max)
        snprintf(text, sizeof text, "samples taken at %d Hz, not %d: another profile asked for more", hz_max, hz);
    else
        snprintf(text, sizeof text, "samples taken at %d to %d Hz: other profiles asked for more for a while; "
                 "%s, samples/count counts the samples", hz_min, hz_max, exact);
    return pp_profile_add_comment(p, text);
}

int pp_profile_add_comment(pprof_profile *p, const char *comment)
{
    if (!p || !p->b || !comment)
        return pp_fail(PPROF_EINVAL);
    const char **c = pp_arena_alloc(p->arena, (p->ncomments + 1) * sizeof *c);
    const char *s = pp_profile_intern(p, comment);
    if (!c || !s)
        return pp_fail(PPROF_ENOMEM);
    if (p->ncomments)
        memcpy(c, p->comments, p->ncomments * sizeof *c);
    c[p->ncomments++] = s;
    p->comments = c;
    return 0;
}

size_t pp_profile_bytes(const pprof_profile *p)
{
    size_t idx = p->strtab.ix.mask + 1 + p->strtab.ix.cap + (p->b ? p->b->samples.mask + 1 + p->b->samples.cap : 0);
    return p->arena->bytes + p->samples_cap * (sizeof *p->samples + (p->b ? 2 * sizeof(void *) : 0)) +
           p->strtab.cap * sizeof(char *) + idx * sizeof(uint32_t);
}

/* --- finish: symbolize distinct addresses into locations --- */

/* Sets *out to the number of addr among the distinct addresses (numbered
 * 0.. in first-seen order); returns 1 when it is new, 0 when known,
 * PPROF_ENOMEM. */
static int addr_number(pp_table *addrs, uint64_t addr, uint32_t *out)
{
    uint64_t *e = pp_table_find(addrs, addr);
    if (!e) {
        if (!pp_table_add(addrs, addr))
            return pp_fail(PPROF_ENOMEM);
        *out = (uint32_t)pp_table_count(addrs) - 1;
        return 1;
    }
    *out = (uint32_t)(e - (uint64_t *)pp_table_at(addrs, 0));
    return 0;
}

/* --- the function table --- */

/* The id of the function of line l, added when new; 0 when out of memory.
 * `copy`: strings not yet in the table are copied (see string_id). */
static uint32_t function_id(pprof_profile *p, const pprof_line *l, bool copy)
{
    int64_t name = string_id(p, l->function, copy), sys = string_id(p, l->system_name, copy),
            file = string_id(p, l->filename, copy);
    if (name < 0 || sys < 0 || file < 0)
        return 0;
    pp_model_function f = {(uint32_t)name, (uint32_t)sys, (uint32_t)file};
    uint64_t h = pp_hash_mix(pp_hash_mix(pp_hash_mix(0, f.name), f.system_name), f.filename);
    PP_INDEX_PROBE(&p->fn_ix, h, j) {
        const pp_model_function *g = &p->fns[p->fn_ix.slot[j] - 1];
        if (g->name == f.name && g->system_name == f.system_name && g->filename == f.filename)
            return p->fn_ix.slot[j];
    }
    if (pp_reserve(&p->fns, &p->fns_cap, p->fn_ix.n, sizeof *p->fns) < 0)
        return 0;
    uint32_t id = pp_index_add(&p->fn_ix, h);
    if (id)
        p->fns[id - 1] = f;
    return id;
}

/* Numbers the functions of every location's lines, in location order. */
static int index_functions(pprof_profile *p, bool copy)
{
    size_t total = 0;
    p->line0 = malloc((p->nlocations + 1) * sizeof *p->line0);
    if (!p->line0)
        return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; i < p->nlocations; i++) {
        p->line0[i] = total;
        total += p->locations[i].nlines;
    }
    p->line_fn = malloc((total + 1) * sizeof *p->line_fn);
    if (!p->line_fn)
        return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0, k = 0; i < p->nlocations; i++)
        for (size_t j = 0; j < p->locations[i].nlines; j++, k++)
            if (!(p->line_fn[k] = function_id(p, &p->locations[i].lines[j], copy)))
                return pp_fail(PPROF_ENOMEM);
    return 0;
}

void pp_model_tables_free(pprof_profile *p)
{
    pp_strtab_free(&p->strtab);
    free(p->fns);
    pp_index_free(&p->fn_ix);
    free(p->line_fn);
    free(p->line0);
    p->fns = NULL;
    p->line_fn = NULL;
    p->line0 = NULL;
    p->fns_cap = 0;
}

int pp_model_index(pprof_profile *p)
{
    if (!p || p->b)
        return pp_fail(PPROF_EINVAL);
    pp_model_tables_free(p);
#define REF(s) \
    if (string_id(p, (s), false) < 0) \
        goto fail
    REF("");
    REF(p->period_type.type);
    REF(p->period_type.unit);
    for (size_t i = 0; i < p->ntypes; i++) {
        REF(p->types[i].type);
        REF(p->types[i].unit);
    }
    for (size_t i = 0; i < p->ncomments; i++)
        REF(p->comments[i]);
    for (size_t i = 0; i < p->nmappings; i++) {
        REF(p->mappings[i].path);
        REF(p->mappings[i].build_id);
    }
    for (size_t i = 0; i < p->nsamples; i++) {
        const pprof_sample *s = &p->samples[i];
        for (size_t k = 0; k < s->nlabels; k++) {
            REF(s->labels[k].key);
            REF(s->labels[k].value);
        }
        for (size_t k = 0; k < s->nnum_labels; k++) {
            REF(s->num_labels[k].key);
            REF(s->num_labels[k].unit);
        }
    }
#undef REF
    if (index_functions(p, false) == 0)
        return 0;
fail:
    pp_model_tables_free(p);
    return pp_fail(PPROF_ENOMEM);
}

int pp_profile_finish(pprof_profile *p, pprof_symbolize how, const char *leave_maps)
{
    if (!p || !p->b || how < PPROF_SYMBOLIZE_DEFAULT || how > PPROF_SYMBOLIZE_NONE)
        return pp_fail(PPROF_EINVAL);
    if (how == PPROF_SYMBOLIZE_DEFAULT)
        how = (pprof_symbolize)pp_env_symbolize();
    struct pp_builder *b = p->b;
    pp_table am = PP_TABLE_INIT(uint64_t);
    uint32_t *frame_loc = NULL;
    int rc = PPROF_ENOMEM;
    /* Pass 1: number the distinct addresses in first-seen order, and
     * remember each frame's number for pass 3. */
    size_t total = 0;
    for (size_t i = 0; i < p->nsamples; i++)
        total += b->npcs[i];
    frame_loc = malloc((total + 1) * sizeof *frame_loc);
    if (!frame_loc)
        goto out;
    /* Stacks of neighbouring samples mostly share their outer frames:
     * compare with the previous sample's frame at the same distance from
     * the root before hashing. */
    uint32_t nloc = 0;
    for (size_t i = 0, f = 0, prev_f = 0; i < p->nsamples; i++) {
        size_t n = b->npcs[i], pn = i ? b->npcs[i - 1] : 0;
        for (size_t k = 0; k < n; k++, f++) {
            size_t d = n - 1 - k; /* distance from the root */
            if (d < pn && b->pcs[i][k] == b->pcs[i - 1][pn - 1 - d]) {
                /* NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign): the previous sample's
                 * frames, all set in its turn of this loop */
                frame_loc[f] = frame_loc[prev_f + pn - 1 - d];
                continue;
            }
            int r = addr_number(&am, b->pcs[i][k], &frame_loc[f]);
            if (r < 0)
                goto out;
            nloc += (uint32_t)r;
        }
        prev_f = f - n;
    }
    /* The symbolizer opens the program's files: say so when it cannot. */
    int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (probe >= 0)
        close(probe);
    else if (errno == EMFILE || errno == ENFILE)
        pp_profile_add_comment(p, "no file descriptor was free: the symbolizer could not open the program's "
                                  "files, so some addresses have no names");
    if (pp_profile_name_addresses(p, &am, nloc, how, leave_maps) != 0)
        goto out;
    p->nlocations = nloc;
    /* Pass 3: samples point at their locations. */
    for (size_t i = 0, f = 0; i < p->nsamples; i++) {
        const pprof_location **l = pp_arena_alloc(p->arena, b->npcs[i] * sizeof *l + 1);
        if (!l)
            goto out;
        for (size_t k = 0; k < b->npcs[i]; k++) /* frame_loc: every frame's, set in pass 2 */
            l[k] = &p->locations[frame_loc[f++]]; /* NOLINT(clang-analyzer-core.uninitialized.ArraySubscript) */
        p->samples[i].locations = l;
        p->samples[i].nlocations = b->npcs[i];
    }
    rc = 0;
out:
    free(frame_loc);
    pp_table_free(&am);
    if (rc == 0 && index_functions(p, true) != 0)
        rc = PPROF_ENOMEM;
    if (rc == 0) {
        free(b->pcs);
        free(b->npcs);
        pp_index_free(&b->samples);
        free(b);
        p->b = NULL;
    }
    return rc;
}

/* --- the model's interface (model.h) --- */

const char *const *pp_model_strings(const pprof_profile *p, size_t *n)
{
    *n = pp_strtab_count(&p->strtab);
    return p->strtab.strs;
}

int64_t pp_model_string_id(const pprof_profile *p, const char *s)
{
    return pp_strtab_find(&p->strtab, s);
}

const pp_model_function *pp_model_functions(const pprof_profile *p, size_t *n)
{
    *n = p->fn_ix.n;
    return p->fns;
}

uint32_t pp_model_line_function(const pprof_profile *p, const pprof_location *loc, size_t line)
{
    return p->line_fn[p->line0[loc - p->locations] + line];
}

void pp_model_view_of(const pprof_profile *p, pp_model_view *v)
{
    *v = (pp_model_view){
        .finished = p->b == NULL,
        .types = p->types,
        .ntypes = p->ntypes,
        .default_type = p->default_type,
        .period_type = p->period_type,
        .period = p->period,
        .time_nanos = p->time_nanos,
        .duration_nanos = p->duration_nanos,
        .samples = p->samples,
        .nsamples = p->nsamples,
        .locs = p->locations,
        .nlocs = p->nlocations,
        .maps = p->mappings,
        .nmaps = p->nmappings,
        .comments = p->comments,
        .ncomments = p->ncomments,
    };
}

/* --- public accessors --- */

const pprof_value_type *pprof_profile_sample_types(const pprof_profile *p, size_t *n)
{
    if (n)
        *n = p ? p->ntypes : 0;
    return p ? p->types : NULL;
}

const pprof_sample *pprof_profile_samples(const pprof_profile *p, size_t *n)
{
    if (n)
        *n = p && !p->b ? p->nsamples : 0;
    return p && !p->b ? p->samples : NULL;
}

const pprof_mapping *pprof_profile_mappings(const pprof_profile *p, size_t *n)
{
    if (n)
        *n = p ? p->nmappings : 0;
    return p ? p->mappings : NULL;
}

pprof_value_type pprof_profile_period_type(const pprof_profile *p)
{
    return p ? p->period_type : (pprof_value_type){"", ""};
}

int64_t pprof_profile_period(const pprof_profile *p) { return p ? p->period : 0; }
int64_t pprof_profile_time_nanos(const pprof_profile *p) { return p ? p->time_nanos : 0; }
int64_t pprof_profile_duration_nanos(const pprof_profile *p) { return p ? p->duration_nanos : 0; }

void pprof_profile_free(pprof_profile *p)
{
    if (!p)
        return;
    if (p->b) {
        free(p->b->pcs);
        free(p->b->npcs);
        pp_index_free(&p->b->samples);
        free(p->b);
    }
    pp_model_tables_free(p);
    free(p->samples);
    pp_arena_free(p->arena);
    free(p);
}
