/* check.h: the tiny assertion helpers the C unit tests share. */
#ifndef PP_CHECK_H
#define PP_CHECK_H
#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (cond) {                                                                 \
            check_passed++;                                                         \
        } else {                                                                    \
            check_failed++;                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                           \
    } while (0)

#define CHECKF(cond, ...)                                                           \
    do {                                                                            \
        if (cond) {                                                                 \
            check_passed++;                                                         \
        } else {                                                                    \
            check_failed++;                                                         \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
        }                                                                           \
    } while (0)

#ifdef PPROF_H
/* The sum of every sample's first value (the sample count of a CPU profile). */
static inline int64_t profile_total(const pprof_profile *p)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += s[i].values[0];
    return total;
}
#endif

/* Prints "name: N passed, M failed" and returns the exit status. */
static inline int check_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed ? 1 : 0;
}
#endif
