/* exec_cost.c: what libpprof adds to each exec of a small program.
 *
 *   exec_cost [ROUNDS [PROGRAM ARGS...]]     (default 5, /bin/true)
 *
 * A worker (this program again) runs PROGRAM 200 times by fork, execve
 * and waitpid, and prints the wall time and the children's CPU time
 * (RUSAGE_CHILDREN) per exec. Each round runs the worker four ways, in
 * an order that rotates:
 *   plain   without libpprof
 *   noaddr  libpprof preloaded, LIBPPROF_ADDR unset (nothing serves)
 *   member  libpprof preloaded with LIBPPROF_ADDR=127.0.0.1:0: the worker
 *           serves and is the hub, each exec'd program joins its tree
 *   alone   the same with LIBPPROF_TREE=0: each exec'd program starts a
 *           server of its own on a port of its own
 * and prints every round's figures, then the medians over the rounds of
 * each way's difference from plain, in ms per exec.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXECS 200
#define WAYS 4
static const char *const ways[WAYS] = {"plain", "noaddr", "member", "alone"};

static double now_ms(void)
{
    return bench_now_ns() / 1e6;
}

static double cpu_ms(const struct rusage *u)
{
    return (u->ru_utime.tv_sec + u->ru_stime.tv_sec) * 1e3 + (u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1e3;
}

static int worker(char **prog)
{
    extern char **environ;
    struct rusage u0, u1;
    getrusage(RUSAGE_CHILDREN, &u0);
    double t0 = now_ms();
    for (int i = 0; i < EXECS; i++) {
        pid_t p = fork();
        if (p == 0) {
            int null = open("/dev/null", 1);
            dup2(null, 1);
            dup2(null, 2);
            execve(prog[0], prog, environ);
            _exit(127);
        }
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) == 127)
            return 1;
    }
    double t1 = now_ms();
    getrusage(RUSAGE_CHILDREN, &u1);
    printf("wall_ms=%.3f cpu_ms=%.3f\n", (t1 - t0) / EXECS, (cpu_ms(&u1) - cpu_ms(&u0)) / EXECS);
    return 0;
}

static void set_way(void *arg)
{
    int way = *(int *)arg;
    unsetenv("LD_PRELOAD");
    unsetenv("LIBPPROF_ADDR");
    unsetenv("LIBPPROF_TREE");
    unsetenv("LIBPPROF_HUB");
    if (way > 0)
        setenv("LD_PRELOAD", PPROF_LIB, 1);
    if (way > 1)
        setenv("LIBPPROF_ADDR", "127.0.0.1:0", 1);
    if (way > 2)
        setenv("LIBPPROF_TREE", "0", 1);
}

static double num(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? atof(p + strlen(key)) : -1;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "worker"))
        return worker(argv + 2);
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1 || rounds > 50)
        rounds = 5;
    char *wargv[64] = {argv[0], "worker"};
    int n = 2;
    for (int i = 2; i < argc && n < 63; i++)
        wargv[n++] = argv[i];
    if (n == 2)
        wargv[n++] = "/bin/true";
    wargv[n] = NULL;
    printf("# exec_cost: %d rounds of %d execs of %s", rounds, EXECS, wargv[2]);
    for (int i = 3; i < n; i++)
        printf(" %s", wargv[i]);
    printf("\n# round way wall_ms cpu_ms (per exec)\n");
    double wall[WAYS][50], cpu[WAYS][50];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < WAYS; k++) {
            int way = (k + r) % WAYS;
            char out[256];
            if (bench_run_self(wargv, set_way, &way, -1, out, sizeof out) != 0) {
                fprintf(stderr, "exec_cost: the %s worker failed\n", ways[way]);
                return 1;
            }
            wall[way][r] = num(out, "wall_ms=");
            cpu[way][r] = num(out, "cpu_ms=");
        }
        for (int w = 0; w < WAYS; w++)
            printf("%d %-6s %.3f %.3f\n", r, ways[w], wall[w][r], cpu[w][r]);
    }
    printf("# median over the rounds of each way's difference from plain, ms per exec\n");
    for (int w = 1; w < WAYS; w++) {
        double dw[50], dc[50];
        for (int r = 0; r < rounds; r++) {
            dw[r] = wall[w][r] - wall[0][r];
            dc[r] = cpu[w][r] - cpu[0][r];
        }
        printf("%-6s wall +%.3f cpu +%.3f\n", ways[w], bench_median(dw, rounds), bench_median(dc, rounds));
    }
    return 0;
}
