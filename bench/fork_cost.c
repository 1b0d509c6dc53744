/* fork_cost.c: what a running CPU profile adds to fork.
 *
 * A thread burns CPU throughout (a busy host). Rounds alternate between
 * no profile and a CPU profile running at the given rate; each round times
 * N fork + _exit + waitpid in the main thread. Prints every round's
 * microseconds per fork and the median of the per-round ratios.
 * Usage: fork_cost [rounds (5)] [forks per round (300)] [hz (100)]
 */
#define _GNU_SOURCE
#include "bench.h"
#include "pprof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static _Atomic int stop;


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Microseconds per fork + _exit + waitpid, over n. */
static double time_forks(int n)
{
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid) {
            perror("fork");
            exit(1);
        }
    }
    return (now_s() - t0) * 1e6 / n;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5, n = argc > 2 ? atoi(argv[2]) : 300;
    int hz = argc > 3 ? atoi(argv[3]) : 100;
    if (rounds < 1 || rounds > 100 || n < 1 || hz < 1) {
        fprintf(stderr, "usage: fork_cost [rounds 1-100] [forks per round] [hz]\n");
        return 2;
    }
    pthread_t t;
    pthread_create(&t, NULL, bench_burn, &stop);
    double off[100], on[100], ratio[100];
    printf("# fork_cost: %d rounds of %d forks, a busy thread throughout, profile at %d Hz\n", rounds, n, hz);
    for (int r = 0; r < rounds; r++) {
        off[r] = time_forks(n);
        pprof_recorder *rec;
        if (pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = hz}, &rec) || pprof_recorder_start(rec)) {
            fprintf(stderr, "cannot start a CPU profile: %s\n", pprof_last_error());
            return 1;
        }
        on[r] = time_forks(n);
        pprof_profile *p = NULL;
        pprof_recorder_stop(rec, getenv("FORK_COST_NO_SYMBOLS") ? NULL : &p);
        pprof_profile_free(p);
        pprof_recorder_free(rec);
        ratio[r] = on[r] / off[r];
        printf("raw round %d: no profile %.1f us/fork, profile running %.1f us/fork, ratio %.2f\n", r + 1, off[r],
               on[r], ratio[r]);
    }
    printf("median us per fork: no profile %.1f, profile running %.1f; median ratio %.2f (target <= 1.2)\n",
           bench_median(off, rounds), bench_median(on, rounds), bench_median(ratio, rounds));
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    return 0;
}
