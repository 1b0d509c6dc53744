/* stacks.h: profiles of many distinct stacks for the benchmarks that
 * encode, merge or draw them: a custom profile whose entries are added from
 * the leaves of a binary call tree 17 levels deep (one program, one copy
 * of these functions: include it from one file). */
#ifndef PP_BENCH_STACKS_H
#define PP_BENCH_STACKS_H
#include "pprof.h"

#include <stdint.h>

#define BENCH_MAX_STACKS 100000

static pprof_custom *bench_custom;
static uintptr_t bench_keys[BENCH_MAX_STACKS];
static int bench_added, bench_wanted;

/* The leaf adds the entry; above it, two functions per level (17 levels:
 * bench_s0_0 .. bench_s16_1), each calling the next level's function of
 * its id's bit there: every id gets its own stack of distinct function
 * names. The constant in each body keeps the compiler from folding them. */
__attribute__((noinline)) static void bench_leaf(unsigned long id)
{
    (void)id;
    if (bench_added < bench_wanted)
        pprof_custom_add(bench_custom, &bench_keys[bench_added++]);
    __asm__ volatile("" ::: "memory");
}
#define BENCH_FN(name, k, n0, n1)                                   \
    __attribute__((noinline)) static void name(unsigned long id)    \
    {                                                               \
        __asm__ volatile("" ::"r"(k) : "memory");                   \
        if ((id >> ((k) / 2 + 1)) & 1)                              \
            n1(id);                                                 \
        else                                                        \
            n0(id);                                                 \
        __asm__ volatile("" ::: "memory");                          \
    }
#define BENCH_LEVEL(l, n0, n1) BENCH_FN(bench_s##l##_0, 2 * (l), n0, n1) BENCH_FN(bench_s##l##_1, 2 * (l) + 1, n0, n1)
BENCH_LEVEL(16, bench_leaf, bench_leaf)
BENCH_LEVEL(15, bench_s16_0, bench_s16_1)
BENCH_LEVEL(14, bench_s15_0, bench_s15_1)
BENCH_LEVEL(13, bench_s14_0, bench_s14_1)
BENCH_LEVEL(12, bench_s13_0, bench_s13_1)
BENCH_LEVEL(11, bench_s12_0, bench_s12_1)
BENCH_LEVEL(10, bench_s11_0, bench_s11_1)
BENCH_LEVEL(9, bench_s10_0, bench_s10_1)
BENCH_LEVEL(8, bench_s9_0, bench_s9_1)
BENCH_LEVEL(7, bench_s8_0, bench_s8_1)
BENCH_LEVEL(6, bench_s7_0, bench_s7_1)
BENCH_LEVEL(5, bench_s6_0, bench_s6_1)
BENCH_LEVEL(4, bench_s5_0, bench_s5_1)
BENCH_LEVEL(3, bench_s4_0, bench_s4_1)
BENCH_LEVEL(2, bench_s3_0, bench_s3_1)
BENCH_LEVEL(1, bench_s2_0, bench_s2_1)
BENCH_LEVEL(0, bench_s1_0, bench_s1_1)

/* The custom profile `name` with one entry added from each of n (at most
 * BENCH_MAX_STACKS) leaves of the call tree, in *out. 0 or an error code. */
static inline int bench_stacks_custom(const char *name, int n, pprof_custom **out)
{
    int rc = pprof_custom_new(name, &bench_custom);
    if (rc != 0)
        return rc;
    bench_added = 0;
    bench_wanted = n < BENCH_MAX_STACKS ? n : BENCH_MAX_STACKS;
    for (unsigned long id = 0; id < (unsigned long)bench_wanted; id++)
        (id & 1 ? bench_s0_1 : bench_s0_0)(id);
    *out = bench_custom;
    return 0;
}
#endif /* PP_BENCH_STACKS_H */
