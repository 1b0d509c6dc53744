/* plain.c: way 3 of README.md's "Three ways in", no rebuild: an ordinary
 * program that knows nothing of libpprof (nothing to include, nothing to
 * link), profiled by preloading the library.
 *
 *   cc -O2 -g examples/plain.c -o plain
 *   libpprof-run --addr 127.0.0.1:6060 -- ./plain 60
 *   LD_PRELOAD=/path/libpprof.so.0 LIBPPROF_ADDR=127.0.0.1:6060 ./plain 60   # by hand
 *   go tool pprof -top 'http://127.0.0.1:6060/debug/pprof/profile?seconds=5'
 *
 * Burns CPU in spin_numbers() for SECONDS (default 30) of wall time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

/* Not inlined, so that profiles show it by name. */
__attribute__((noinline)) void spin_numbers(long seconds)
{
    time_t end = time(NULL) + seconds;
    double x = 1.0;
    while (time(NULL) < end) {
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 0.5 / (x + i);
        sink = x;
    }
}

int main(int argc, char **argv)
{
    char *rest = "";
    long seconds = argc > 1 ? strtol(argv[1], &rest, 10) : 30;
    if (argc > 2 || *rest != '\0' || seconds < 0) {
        fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
        return 2;
    }
    spin_numbers(seconds);
    return 0;
}
