/* merge_check.c: whether a decoded input of pprof_merge holds together.
 *
 * Inputs come from other processes (a process tree's members), so they are
 * checked before anything is copied: mapping, function and location ids
 * are non-zero, distinct and below 2^40 (so shifting them past other
 * inputs' cannot wrap), and every reference (a sample's locations, a
 * location's mapping, a line's function) names one that is there. A
 * profile that fails would make the merge one that go tool pprof refuses.
 */
#include "merge_check.h"

#include "base/base.h"

#include <stdlib.h>

#define ID_LIMIT (1ull << 40)

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Ids of one kind, sorted; dense when they are exactly 1..n (as libpprof
 * writes them), so membership is a comparison. */
typedef struct idset {
    uint64_t *v;
    size_t n;
    int dense;
} idset;

/* Sorts the ids (unless they already are); 0 when they are non-zero,
 * distinct and below ID_LIMIT. */
static int sort_ids(idset *s)
{
    size_t i = 1;
    while (i < s->n && s->v[i - 1] < s->v[i])
        i++;
    if (i < s->n)
        qsort(s->v, s->n, sizeof *s->v, cmp_u64);
    for (i = 0; i < s->n; i++)
        if (s->v[i] == 0 || s->v[i] >= ID_LIMIT || (i && s->v[i] == s->v[i - 1]))
            return -1;
    s->dense = s->n == 0 || s->v[s->n - 1] == s->n;
    return 0;
}

static int has(const idset *s, uint64_t id)
{
    if (s->dense)
        return id >= 1 && id <= s->n;
    return bsearch(&id, s->v, s->n, sizeof id, cmp_u64) != NULL;
}

#define COLLECT(arr, n, out)                        \
    do {                                            \
        for (size_t i_ = 0; i_ < (n); i_++)         \
            (out)[i_] = (arr)[i_]->id;              \
    } while (0)

int pp_merge_check(const Perftools__Profiles__Profile *p, pp_merge_tops *tops)
{
    size_t nm = p->n_mapping, nf = p->n_function, nl = p->n_location;
    uint64_t *ids = malloc((nm + nf + nl + 1) * sizeof *ids);
    if (!ids)
        return pp_fail(PPROF_ENOMEM);
    idset maps = {ids, nm, 0}, fns = {ids + nm, nf, 0}, locs = {ids + nm + nf, nl, 0};
    COLLECT(p->mapping, nm, maps.v);
    COLLECT(p->function, nf, fns.v);
    COLLECT(p->location, nl, locs.v);
    const char *bad = NULL;
    if (sort_ids(&maps) || sort_ids(&fns) || sort_ids(&locs))
        bad = "ids that are 0, repeated or too large";
    for (size_t i = 0; !bad && i < nl; i++) {
        const Perftools__Profiles__Location *l = p->location[i];
        if (l->mapping_id && !has(&maps, l->mapping_id))
            bad = "a location names a mapping that is not there";
        for (size_t k = 0; !bad && k < l->n_line; k++)
            if (l->line[k]->function_id && !has(&fns, l->line[k]->function_id))
                bad = "a line names a function that is not there";
    }
    for (size_t i = 0; !bad && i < p->n_sample; i++)
        for (size_t k = 0; !bad && k < p->sample[i]->n_location_id; k++)
            if (!has(&locs, p->sample[i]->location_id[k]))
                bad = "a sample names a location that is not there";
    if (!bad) {
        tops->mapping = nm ? maps.v[nm - 1] : 0;
        tops->function = nf ? fns.v[nf - 1] : 0;
        tops->location = nl ? locs.v[nl - 1] : 0;
    }
    free(ids);
    return bad ? pp_error_detail(PPROF_EINVAL, "%s", bad) : 0;
}
