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

/* Sorts ids; 0 when they are non-zero, distinct and below ID_LIMIT. */
static int sort_ids(uint64_t *ids, size_t n)
{
    qsort(ids, n, sizeof *ids, cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (ids[i] == 0 || ids[i] >= ID_LIMIT || (i && ids[i] == ids[i - 1]))
            return -1;
    return 0;
}

static int has(const uint64_t *ids, size_t n, uint64_t id)
{
    return bsearch(&id, ids, n, sizeof id, cmp_u64) != NULL;
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
    uint64_t *maps = ids, *fns = ids + nm, *locs = fns + nf;
    COLLECT(p->mapping, nm, maps);
    COLLECT(p->function, nf, fns);
    COLLECT(p->location, nl, locs);
    const char *bad = NULL;
    if (sort_ids(maps, nm) || sort_ids(fns, nf) || sort_ids(locs, nl))
        bad = "ids that are 0, repeated or too large";
    for (size_t i = 0; !bad && i < nl; i++) {
        const Perftools__Profiles__Location *l = p->location[i];
        if (l->mapping_id && !has(maps, nm, l->mapping_id))
            bad = "a location names a mapping that is not there";
        for (size_t k = 0; !bad && k < l->n_line; k++)
            if (l->line[k]->function_id && !has(fns, nf, l->line[k]->function_id))
                bad = "a line names a function that is not there";
    }
    for (size_t i = 0; !bad && i < p->n_sample; i++)
        for (size_t k = 0; !bad && k < p->sample[i]->n_location_id; k++)
            if (!has(locs, nl, p->sample[i]->location_id[k]))
                bad = "a sample names a location that is not there";
    if (!bad) {
        tops->mapping = nm ? maps[nm - 1] : 0;
        tops->function = nf ? fns[nf - 1] : 0;
        tops->location = nl ? locs[nl - 1] : 0;
    }
    free(ids);
    return bad ? pp_error_detail(PPROF_EINVAL, "%s", bad) : 0;
}
