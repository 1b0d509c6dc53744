/* burn.h: the busy loop the integration test programs burn CPU in, each
 * under a name of its own that its test looks for in profiles:
 * PP_BURN_FUNCTION(name) defines `void name(double seconds)`, which
 * computes for `seconds` of wall time (not static, never inlined). */
#ifndef PP_TEST_BURN_H
#define PP_TEST_BURN_H
#include <time.h>

static volatile double pp_burn_sink;

static inline double pp_burn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define PP_BURN_FUNCTION(name)                                                                                 \
    __attribute__((noinline)) void name(double seconds);                                                      \
    __attribute__((noinline)) void name(double seconds)                                                       \
    {                                                                                                          \
        double end = pp_burn_now() + seconds, x = 1.0;                                                         \
        while (pp_burn_now() < end) {                                                                          \
            for (int i = 0; i < 20000; i++)                                                                    \
                x = x * 1.0000001 + 0.5 / (x + i);                                                             \
            pp_burn_sink = x;                                                                                  \
        }                                                                                                      \
    }
#endif
