/* wait_cost.c: what the wrapped waits cost a call that is not broken
 * (profiler/interpose/wait_hooks.c, sock_hooks.c): a clock read and two
 * thread-local writes in front of the C library's call.
 *
 *   wait_cost [ROUNDS]          (default 5)
 *
 * Each round runs a worker (this program again) without libpprof and
 * then with it preloaded (no endpoint, no profile), and prints each
 * one's nanoseconds per call, the median of the round's worker runs, and
 * their difference:
 *   poll0   poll(1 fd, timeout 0) on a readable pipe (no clock read)
 *   poll1   poll(1 fd, timeout 1000 ms) on a readable pipe (returns at once)
 *   epoll   epoll_wait(timeout 1000 ms) with one event ready
 *   recv    a 1-byte send and its recv on a socket pair (recv wrapped)
 * and the last lines the medians over the rounds.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CALLS 2000000
#define KINDS 4
static const char *const names[KINDS] = {"poll0", "poll1", "epoll", "recv"};


static int worker(void)
{
    int p[2], s[2], ep = epoll_create1(0);
    if (pipe(p) || socketpair(AF_UNIX, SOCK_STREAM, 0, s) || ep < 0 || write(p[1], "x", 1) != 1)
        return 1;
    struct epoll_event ev = {.events = EPOLLIN}, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
    struct pollfd pf = {p[0], POLLIN, 0};
    double ns[KINDS];
    for (int k = 0; k < KINDS; k++) {
        double t0 = bench_now_ns();
        char c;
        for (int i = 0; i < CALLS; i++) {
            switch (k) {
            case 0:
                poll(&pf, 1, 0);
                break;
            case 1:
                poll(&pf, 1, 1000);
                break;
            case 2:
                epoll_wait(ep, &out, 1, 1000);
                break;
            default:
                if (send(s[0], "y", 1, 0) != 1 || recv(s[1], &c, 1, 0) != 1)
                    return 1;
            }
        }
        ns[k] = (bench_now_ns() - t0) / CALLS;
    }
    for (int k = 0; k < KINDS; k++)
        printf("%s%.1f", k ? " " : "", ns[k]);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "worker"))
        return worker();
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1)
        rounds = 5;
    double base[64][KINDS], with[64][KINDS];
    if (rounds > 64)
        rounds = 64;
    printf("# wait_cost: %d rounds of %d calls of each kind, without libpprof / with it preloaded (ns per call)\n",
           rounds, CALLS);
    char *args[] = {argv[0], "worker", NULL};
    for (int r = 0; r < rounds; r++) {
        char out[256];
        for (int w = 0; w < 2; w++) {
            if (bench_run_self(args, bench_preload, w ? PPROF_LIB : NULL, -1, out, sizeof out)) {
                fprintf(stderr, "wait_cost: a worker failed\n");
                return 1;
            }
            double *v = w ? with[r] : base[r];
            if (sscanf(out, "%lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3]) != KINDS)
                return 1;
        }
        printf("round %d:", r + 1);
        for (int k = 0; k < KINDS; k++)
            printf("  %s %.1f / %.1f (%+.1f)", names[k], base[r][k], with[r][k], with[r][k] - base[r][k]);
        printf("\n");
    }
    for (int k = 0; k < KINDS; k++) {
        double b[64], w[64], d[64];
        for (int r = 0; r < rounds; r++) {
            b[r] = base[r][k];
            w[r] = with[r][k];
            d[r] = with[r][k] - base[r][k];
        }
        printf("median %s: %.1f ns without, %.1f ns with, %+.1f ns a call\n", names[k], bench_median(b, rounds),
               bench_median(w, rounds), bench_median(d, rounds));
    }
    return 0;
}
