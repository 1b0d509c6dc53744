/* prog_burst.c: a program that knows nothing of libpprof and computes in
 * one burst of known CPU time, for the CPU history's test
 * (test_history.sh preloads libpprof with LIBPPROF_HISTORY).
 *
 *   prog_burst burst IDLE SECONDS
 *       prints "pid=PID" and "start=UNIX" (the wall-clock time main
 *       began, in seconds with decimals), sleeps IDLE seconds, prints
 *       "burst_start=UNIX", computes in burst_spin() on the main thread for
 *       SECONDS of wall time, then prints "burst_end=UNIX",
 *       "burst_cpu_ns=N" (the main thread's CPU time over the burst, from
 *       CLOCK_THREAD_CPUTIME_ID, read just around the call), then
 *       allocates 50,000 blocks of 4096 bytes in burst_alloc() and frees
 *       all but 2,000 of them (kept live to the end), printing
 *       "alloc_bytes=N" and "live_bytes=N", then "done", and sleeps until
 *       killed. SECONDS 0: no burst (an idle program).
 *   prog_burst stacks THREADS
 *       prints "pid=PID", then THREADS threads compute until killed
 *       through many distinct stacks: each round walks 30 calls deep, each
 *       call into stack_a or stack_b as one bit of a counter says (2^30
 *       stacks), computing a little at the bottom.
 */
#define _GNU_SOURCE
#include "../burn.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The burst: `seconds` of wall time computing, found by name in profiles. */
PP_BURN_FUNCTION(burst_spin)

#define ALLOCS 50000
#define LIVE 2000
#define BLOCK 4096
static void *volatile kept[LIVE];

/* The allocation burst: ALLOCS blocks, LIVE of them kept. */
__attribute__((noinline)) void burst_alloc(void)
{
    for (int i = 0; i < ALLOCS; i++) {
        char *p = malloc(BLOCK);
        if (!p)
            abort();
        p[0] = (char)i;
        if (i < LIVE)
            kept[i] = p;
        else
            free(p);
    }
}

static double now_s(void)
{
    return burn_clock_s(CLOCK_REALTIME);
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* --- stacks: two functions calling each other as the bits say. Different
 * constants keep the compiler from folding them into one; the use of the
 * callee's result after the call keeps the calls from being tail calls. */
static volatile uint64_t stack_sink;
__attribute__((noinline)) uint64_t stack_a(unsigned depth, uint64_t bits);
__attribute__((noinline)) uint64_t stack_b(unsigned depth, uint64_t bits);

static inline __attribute__((always_inline)) uint64_t stack_leaf(uint64_t x, uint64_t k)
{
    for (int i = 0; i < 2000; i++)
        x = x * k + (x >> 7) + (uint64_t)i;
    return x;
}

/* One call of the walk: the bottom computes, the others call on; the work
 * after the call keeps it from being a tail call, so every level stays on
 * the stack. */
static inline __attribute__((always_inline)) uint64_t stack_step(unsigned depth, uint64_t bits, uint64_t k,
                                                                 uint64_t m)
{
    uint64_t r = depth == 0 ? stack_leaf(bits, k) : (bits & 1 ? stack_a : stack_b)(depth - 1, bits >> 1);
    return r * m + depth;
}

__attribute__((noinline)) uint64_t stack_a(unsigned depth, uint64_t bits)
{
    return stack_step(depth, bits, 6364136223846793005ull, 3);
}

__attribute__((noinline)) uint64_t stack_b(unsigned depth, uint64_t bits)
{
    return stack_step(depth, bits, 2862933555777941757ull, 5);
}

static void *stacks_thread(void *arg)
{
    /* a different walk through the 2^30 stacks on each thread */
    uint64_t n = (uintptr_t)arg * 40503u;
    for (;;) {
        n = n * 2654435761u + 1;
        stack_sink += stack_a(30, (n >> 20) & ((1u << 30) - 1));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("pid=%d\n", (int)getpid());
    if (argc == 3 && strcmp(argv[1], "stacks") == 0) {
        int n = atoi(argv[2]);
        for (int i = 1; i < n; i++) {
            pthread_t t;
            if (pthread_create(&t, NULL, stacks_thread, (void *)(uintptr_t)i) != 0) {
                perror("pthread_create");
                return 1;
            }
        }
        stacks_thread((void *)(uintptr_t)0);
        return 0;
    }
    if (argc != 4 || strcmp(argv[1], "burst") != 0) {
        fprintf(stderr, "usage: prog_burst burst IDLE SECONDS | prog_burst stacks THREADS\n");
        return 2;
    }
    double idle = atof(argv[2]), seconds = atof(argv[3]);
    printf("start=%.6f\n", now_s());
    sleep_s(idle);
    if (seconds > 0) {
        printf("burst_start=%.6f\n", now_s());
        int64_t c0 = thread_cpu_ns();
        burst_spin(seconds);
        int64_t c1 = thread_cpu_ns();
        printf("burst_end=%.6f\nburst_cpu_ns=%lld\n", now_s(), (long long)(c1 - c0));
        burst_alloc();
        printf("alloc_bytes=%d\nlive_bytes=%d\n", ALLOCS * BLOCK, LIVE * BLOCK);
    }
    printf("done\n");
    for (;;)
        sleep_s(3600);
}
