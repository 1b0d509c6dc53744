/* abuse_host.c: the host of bench/abuse/run.sh. Serves the endpoint with
 * the built-in server on ADDR and does CPU work on one thread for SECONDS,
 * printing how many units of work it did in each second: the figure an
 * attack on the endpoint must not lower.
 *
 *   abuse_host ADDR SECONDS
 */
#include <pprof.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void unit_of_work(void)
{
    double x = 1;
    for (int i = 1; i < 20000; i++)
        x += 1.0 / i;
    sink = x;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: abuse_host ADDR SECONDS\n");
        return 2;
    }
    pprof_server_config cfg = {.addr = argv[1]};
    if (pprof_server_start(&cfg) != 0) {
        fprintf(stderr, "abuse_host: %s\n", pprof_last_error());
        return 1;
    }
    printf("port=%d\n", pprof_server_port());
    fflush(stdout);
    int seconds = atoi(argv[2]);
    for (int s = 0; s < seconds; s++) {
        double end = now() + 1;
        long units = 0;
        while (now() < end) {
            unit_of_work();
            units++;
        }
        printf("units=%ld\n", units);
        fflush(stdout);
    }
    return 0;
}
