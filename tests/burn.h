/* burn.h: CPU work for the test programs that take CPU profiles.
 *
 * burn_cpu computes for an amount of the calling thread's CPU time (unit
 * tests); PP_BURN_FUNCTION(name) defines `void name(double seconds)`,
 * never inlined and not static, which computes for `seconds` of wall time
 * under a name its test looks for in profiles (integration programs).
 *
 * burn_cpu is always inlined: a test that looks for a function by name in
 * its samples wraps it in a noinline function of that name, whose own code
 * then does the burning. Two such functions in one test pass different
 * factors, so that the compiler cannot fold them into one symbol. */
#ifndef PP_BURN_H
#define PP_BURN_H
#include <time.h>

static volatile double burn_sink;

/* clk's time, in seconds. */
static inline double burn_clock_s(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The calling thread's CPU time, in seconds. */
static inline double burn_thread_cpu_s(void)
{
    return burn_clock_s(CLOCK_THREAD_CPUTIME_ID);
}

/* Computes until clk has advanced by `s` seconds, in rounds of 1000 steps
 * of x = x * factor + 1 / (x + i). */
static inline __attribute__((always_inline)) void burn_on(clockid_t clk, double s, double factor)
{
    double end = burn_clock_s(clk) + s, x = 1;
    while (burn_clock_s(clk) < end)
        for (int i = 0; i < 1000; i++)
            x = x * factor + 1.0 / (x + i);
    burn_sink += x;
}

/* Computes for `s` seconds of the calling thread's CPU time. */
static inline __attribute__((always_inline)) void burn_cpu(double s, double factor)
{
    burn_on(CLOCK_THREAD_CPUTIME_ID, s, factor);
}

#define PP_BURN_FUNCTION(name)                                                                                 \
    __attribute__((noinline)) void name(double seconds);                                                      \
    __attribute__((noinline)) void name(double seconds)                                                       \
    {                                                                                                          \
        burn_on(CLOCK_MONOTONIC, seconds, 1.0000001);                                                          \
    }
#endif
