/* tree_fork.c: what being the hub of a process tree costs a fork.
 *
 * A worker process starts the server (so it is the hub, unless
 * LIBPPROF_TREE=0), then times 500 fork+exit and 200 fork+exec of
 * /bin/true. Each round runs the worker twice, tree on and off, in an
 * order that alternates; prints every round's raw figures and the medians
 * of the per-round ratios.
 *
 *   ./build/bench/tree_fork [ROUNDS]
 */
#define _GNU_SOURCE
#include "bench.h"
#include "pprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int worker(void)
{
    pprof_server_config c = {.addr = "127.0.0.1:0"};
    if (pprof_server_start(&c))
        return 1;
    double t0 = now_us();
    for (int i = 0; i < 500; i++) {
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        waitpid(p, NULL, 0);
    }
    double t1 = now_us();
    for (int i = 0; i < 200; i++) {
        pid_t p = fork();
        if (p == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(1);
        }
        waitpid(p, NULL, 0);
    }
    double t2 = now_us();
    printf("fork_exit_us=%.1f fork_exec_us=%.1f\n", (t1 - t0) / 500, (t2 - t1) / 200);
    return 0;
}

static void tree_off(void *arg)
{
    (void)arg;
    setenv("LIBPPROF_TREE", "0", 1);
}

static double num(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? atof(p + strlen(key)) : -1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "worker"))
        return worker();
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1 || rounds > 50)
        rounds = 5;
    char *wargv[] = {argv[0], "worker", NULL};
    double exit_ratio[50], exec_ratio[50], on_exit[50], off_exit[50], on_exec[50], off_exec[50];
    printf("# tree_fork: %d rounds of 500 fork+exit and 200 fork+exec of /bin/true in a serving process\n", rounds);
    for (int r = 0; r < rounds; r++) {
        char on[256], off[256];
        int first_on = r % 2 == 0;
        if ((first_on ? bench_run_self(wargv, NULL, NULL, -1, on, sizeof on)
                      : bench_run_self(wargv, tree_off, NULL, -1, off, sizeof off)) ||
            (first_on ? bench_run_self(wargv, tree_off, NULL, -1, off, sizeof off)
                      : bench_run_self(wargv, NULL, NULL, -1, on, sizeof on)))
            return 1;
        on_exit[r] = num(on, "fork_exit_us=");
        on_exec[r] = num(on, "fork_exec_us=");
        off_exit[r] = num(off, "fork_exit_us=");
        off_exec[r] = num(off, "fork_exec_us=");
        exit_ratio[r] = on_exit[r] / off_exit[r];
        exec_ratio[r] = on_exec[r] / off_exec[r];
        printf("raw round %d: tree on  %s", r + 1, on);
        printf("raw round %d: tree off %s", r + 1, off);
    }
    printf("median us: fork+exit %.1f (tree on) %.1f (off), fork+exec %.1f (on) %.1f (off); ratios on/off: "
           "fork+exit %.2f, fork+exec %.2f\n",
           bench_median(on_exit, rounds), bench_median(off_exit, rounds), bench_median(on_exec, rounds),
           bench_median(off_exec, rounds), bench_median(exit_ratio, rounds), bench_median(exec_ratio, rounds));
    return 0;
}
