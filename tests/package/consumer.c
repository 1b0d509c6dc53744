/* consumer.c: a program built against libpprof the ways its users build
 * (pkg-config, the installed CMake package, add_subdirectory), by
 * test_package.sh. It serves on argv[1] (HOST:PORT) and spends its time in
 * consumer_burn (CPU) and consumer_alloc (a heap that stays live). */
#include <pprof.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile double sink;
static void *live[4096];

__attribute__((noinline)) static void consumer_burn(void)
{
    double x = 0;
    for (int i = 1; i < 2000000; i++)
        x += 1.0 / i;
    sink = x;
}

__attribute__((noinline)) static void consumer_alloc(unsigned i)
{
    free(live[i % 4096]);
    live[i % 4096] = malloc(4096);
    memset(live[i % 4096], 1, 64);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: consumer HOST:PORT\n");
        return 2;
    }
    pprof_server_config cfg = {.addr = argv[1]};
    if (pprof_server_start(&cfg) != 0) {
        fprintf(stderr, "consumer: cannot serve on %s: %s\n", argv[1], pprof_last_error());
        return 1;
    }
    printf("consumer: libpprof %s (header %s) on port %d\n", pprof_version(), PPROF_VERSION_STRING,
           pprof_server_port());
    fflush(stdout);
    for (unsigned i = 0;; i++) {
        consumer_burn();
        for (int j = 0; j < 64; j++)
            consumer_alloc(i * 64 + j);
    }
}
