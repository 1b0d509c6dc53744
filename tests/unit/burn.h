/* burn.h: CPU work for the unit tests that take CPU profiles: a loop that
 * computes for a given amount of the calling thread's CPU time.
 *
 * burn_cpu is always inlined: a test that looks for a function by name in
 * its samples wraps it in a noinline function of that name, whose own code
 * then does the burning. Two such functions in one test pass different
 * factors, so that the compiler cannot fold them into one symbol. */
#ifndef PP_BURN_H
#define PP_BURN_H
#include <time.h>

static volatile double burn_sink;

/* The calling thread's CPU time, in seconds. */
static inline double burn_thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Computes for `s` seconds of the calling thread's CPU time, in rounds of
 * 1000 steps of x = x * factor + 1 / (x + i). */
static inline __attribute__((always_inline)) void burn_cpu(double s, double factor)
{
    double end = burn_thread_cpu_s() + s, x = 1;
    while (burn_thread_cpu_s() < end)
        for (int i = 0; i < 1000; i++)
            x = x * factor + 1.0 / (x + i);
    burn_sink += x;
}
#endif
