/* prog_leak.c: a known heap peak, and a slow leak among heavy churn, for
 * test_heap_views. Run under LD_PRELOAD=libpprof.so.
 *
 *   prog_leak peak    allocates 3,200 blocks of 64 KiB (204.8 MB) in
 *                     peak_build, frees 9 of every 10, prints
 *                     "peak_bytes=N" (its own count of live requested
 *                     bytes at the top) and "ready", then waits
 *   prog_leak leak    serves "requests" for ever, 1,000 a second: each
 *                     does 100 KiB of work in 1 KiB blocks (do_work,
 *                     freed) and keeps 1 KiB (leak_session); prints
 *                     "ready" first
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (64 * 1024)
#define NBLOCKS 3200

__attribute__((noinline)) static char **peak_build(size_t *live)
{
    char **b = malloc(NBLOCKS * sizeof *b);
    for (int i = 0; i < NBLOCKS; i++) {
        b[i] = malloc(BLOCK);
        memset(b[i], 1, BLOCK);
        *live += BLOCK;
    }
    return b;
}

__attribute__((noinline)) static void do_work(void)
{
    char *volatile w[100];
    for (int i = 0; i < 100; i++) {
        w[i] = malloc(1024);
        w[i][0] = (char)i;
    }
    for (int i = 0; i < 100; i++)
        free(w[i]);
}

static void *volatile *sessions;
static size_t nsessions;

__attribute__((noinline)) static void leak_session(void)
{
    void *s = malloc(1024);
    memset(s, 3, 1024);
    if (nsessions % 4096 == 0)
        sessions = realloc((void *)sessions, (nsessions + 4096) * sizeof *sessions);
    sessions[nsessions++] = s;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "peak")) {
        size_t live = 0;
        char **b = peak_build(&live);
        printf("peak_bytes=%zu\n", live);
        for (int i = 0; i < NBLOCKS; i++)
            if (i % 10) {
                free(b[i]);
                live -= BLOCK;
            }
        printf("after_bytes=%zu\nready\n", live);
        fflush(stdout);
        for (;;)
            pause();
    }
    printf("ready\n");
    fflush(stdout);
    struct timespec ms = {0, 1000000};
    for (;;) {
        do_work();
        leak_session();
        nanosleep(&ms, NULL);
    }
}
