/* test_profile.c: the profile builder: merging, IDs, symbols, mappings.
 * test-labels: quick
 *
 * Samples with equal stacks and labels merge (values add up); different
 * labels keep samples apart; location IDs and mapping IDs run 1..N with no
 * gaps; addresses of this program's static functions resolve to their names
 * and source file; pseudo frames ("[truncated]", "[lost samples]") have no
 * mapping; has_functions stays true for a mapping whose locations all
 * resolved; named frames are one address per name in every profile and
 * become locations with no mapping named by their text.
 */
#define _GNU_SOURCE
#include "profile.h"
#include "check.h"

#include <string.h>

__attribute__((noinline)) static int alpha_function(int x) { return x * 3 + 1; }
__attribute__((noinline)) static int beta_function(int x) { return alpha_function(x) * 7; }

static const pprof_location *loc_named(const pprof_profile *p, const char *name)
{
    for (size_t i = 0; i < p->nlocations; i++)
        for (size_t j = 0; j < p->locations[i].nlines; j++)
            if (!strcmp(p->locations[i].lines[j].function, name))
                return &p->locations[i];
    return NULL;
}

int main(void)
{
    static const pprof_value_type types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    pprof_profile *p = pp_profile_new(types, 2, (pprof_value_type){"cpu", "nanoseconds"}, 10000000);
    CHECK(p != NULL);
    uint64_t a = (uint64_t)(uintptr_t)alpha_function + 4, b = (uint64_t)(uintptr_t)beta_function + 4;
    uint64_t s1[] = {a, b}, s2[] = {b}, s3[] = {a, b, PP_PC_TRUNCATED}, s4[] = {PP_PC_LOST};
    int64_t v1[] = {1, 10}, v2[] = {2, 20};
    pprof_label l1[] = {{"tenant", "a"}}, l2[] = {{"tenant", "b"}};
    CHECK(pp_profile_add(p, s1, 2, v1, NULL, 0) == 0);
    CHECK(pp_profile_add(p, s1, 2, v2, NULL, 0) == 0);      /* merges */
    CHECK(pp_profile_add(p, s1, 2, v1, l1, 1) == 0);        /* labels keep apart */
    CHECK(pp_profile_add(p, s1, 2, v1, l2, 1) == 0);
    CHECK(pp_profile_add(p, s2, 1, v1, NULL, 0) == 0);
    CHECK(pp_profile_add(p, s3, 3, v1, NULL, 0) == 0);
    CHECK(pp_profile_add(p, s4, 1, v2, NULL, 0) == 0);
    CHECK(pp_profile_add(NULL, s1, 2, v1, NULL, 0) == PPROF_EINVAL);
    CHECK(pp_profile_add(p, NULL, 2, v1, NULL, 0) == PPROF_EINVAL);
    /* many distinct stacks exercise the index growth */
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t st[] = {a, 0x1000 + i};
        CHECK(pp_profile_add(p, st, 2, v1, NULL, 0) == 0);
    }
    CHECK(pp_profile_finish(p, PPROF_SYMBOLIZE_DEFAULT, NULL) == 0);

    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    CHECKF(n == 6 + 5000, "%zu samples", n);
    CHECK(s[0].values[0] == 3 && s[0].values[1] == 30);
    CHECK(s[1].nlabels == 1 && !strcmp(s[1].labels[0].value, "a"));
    CHECK(s[2].nlabels == 1 && !strcmp(s[2].labels[0].value, "b"));

    for (size_t i = 0; i < p->nlocations; i++)
        CHECKF(p->locations[i].id == i + 1, "location %zu has id %llu", i, (unsigned long long)p->locations[i].id);
    size_t nm;
    const pprof_mapping *m = pprof_profile_mappings(p, &nm);
    CHECK(nm > 0);
    for (size_t i = 0; i < nm; i++) {
        CHECK(m[i].id == i + 1);
        if (i)
            CHECK(m[i].start >= m[i - 1].limit);
    }

    const pprof_location *la = loc_named(p, "alpha_function"), *lb = loc_named(p, "beta_function");
    CHECK(la && lb);
    if (la && lb) {
        CHECK(la->address == a && la->mapping_id > 0);
        CHECK(strstr(la->lines[la->nlines - 1].filename, "test_profile.c") != NULL);
        CHECK(la->lines[la->nlines - 1].line > 0);
        CHECK(s[0].locations[0] == la && s[0].locations[1] == lb);
        /* the test binary has addresses 0x1000+i in no mapping, so its own
         * mapping stays fully symbolized */
        CHECK(m[la->mapping_id - 1].has_functions);
    }
    const pprof_location *tr = loc_named(p, "[truncated]"), *lost = loc_named(p, "[lost samples]");
    CHECK(tr && tr->mapping_id == 0 && tr->address == 0);
    CHECK(lost && lost->mapping_id == 0);
    CHECK(beta_function(1) == 28);
    pprof_profile_free(p);

    /* _start has a name but no line (crt1's assembly): the executable's
     * mapping still says it has file names and line numbers, as the other
     * locations do, and functions, as every location has one */
    extern char _start[];
    p = pp_profile_new(types, 2, (pprof_value_type){"cpu", "nanoseconds"}, 1);
    uint64_t st[] = {a, (uint64_t)(uintptr_t)_start + 1};
    CHECK(p && pp_profile_add(p, st, 2, v1, NULL, 0) == 0 && pp_profile_finish(p, PPROF_SYMBOLIZE_DEFAULT, NULL) == 0);
    const pprof_location *ls = loc_named(p, "_start");
    la = loc_named(p, "alpha_function");
    m = pprof_profile_mappings(p, &nm);
    CHECK(ls && la && ls->mapping_id == la->mapping_id && ls->lines[0].line == 0);
    if (ls && la) {
        const pprof_mapping *exe = &m[la->mapping_id - 1];
        CHECKF(exe->has_functions && exe->has_filenames && exe->has_line_numbers, "%s: functions %d files %d lines %d",
               exe->path, exe->has_functions, exe->has_filenames, exe->has_line_numbers);
    }
    pprof_profile_free(p);

    uint64_t root = pp_frame_named("[memory: a root]"), leaf = pp_frame_named("[a leaf (with parentheses)]");
    CHECK(root == pp_frame_named("[memory: a root]") && root != leaf && pp_pc_is_pseudo(root));
    CHECK(!strcmp(pp_frame_name(leaf), "[a leaf (with parentheses)]") && !strcmp(pp_frame_name(PP_PC_LOST), "[lost samples]"));
    p = pp_profile_new(types, 2, (pprof_value_type){"cpu", "nanoseconds"}, 1);
    uint64_t named[] = {a, leaf, root};
    CHECK(p && pp_profile_add(p, named, 3, v1, NULL, 0) == 0 && pp_profile_finish(p, PPROF_SYMBOLIZE_DEFAULT, NULL) == 0);
    const pprof_location *lr = loc_named(p, "[memory: a root]"), *ll = loc_named(p, "[a leaf (with parentheses)]");
    CHECK(lr && ll && lr->mapping_id == 0 && ll->mapping_id == 0 && lr->address == 0 && loc_named(p, "alpha_function"));
    pprof_profile_free(p);
    pprof_profile_free(NULL);
    return check_summary("test_profile");
}
