/* ui_host.c: the host of bench/ui/run.sh. Serves the endpoint on ADDR with
 * two custom profiles of many distinct stacks (stacks.h): ui_10k (10,000)
 * and ui_100k (100,000), for the flame-graph page to draw; prints
 * "port=N", then waits until stdin closes.
 *
 *   ./build/bench/ui_host 127.0.0.1:0 </dev/tty
 */
#include "pprof.h"
#include "stacks.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ui_host ADDR\n");
        return 2;
    }
    pprof_custom *a, *b;
    pprof_server_config cfg = {.addr = argv[1]};
    if (bench_stacks_custom("ui_10k", 10000, &a) != 0 || bench_stacks_custom("ui_100k", 100000, &b) != 0 ||
        pprof_server_start(&cfg) != 0) {
        fprintf(stderr, "ui_host: %s\n", pprof_last_error());
        return 1;
    }
    printf("port=%d\n", pprof_server_port());
    fflush(stdout);
    while (getchar() != EOF)
        ;
    return 0;
}
