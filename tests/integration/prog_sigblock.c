/* prog_sigblock.c: a server's signal start-up: every signal blocked
 * before the workers start, one thread takes them with sigwait
 * (test_lifecycle.sh).
 *
 *   prog_sigblock SECONDS
 *
 * Blocks every signal in the main thread (sigfillset, pthread_sigmask
 * SIG_BLOCK), then starts two workers that burn CPU in
 * sigblock_worker_burn() for SECONDS and a thread that waits in sigwait
 * for every signal: it prints "sigwait=N" for each signal N it receives,
 * and ends the program on SIGTERM. Prints "ready pid=PID" once the workers
 * run, "mask_profiling_blocked=0|1 mask_usr1_blocked=0|1" (whether a
 * worker's mask blocks SIGSTKFLT, the profiling signal, and SIGUSR1) when they end or SIGTERM came,
 * and "done".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static _Atomic int quit;
static volatile double sink;
static _Atomic int mask_checked, profiling_blocked, usr1_blocked;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Not static: the test looks for it by name. */
__attribute__((noinline)) void sigblock_worker_burn(double until)
{
    double x = 1.0;
    while (now_seconds() < until && !atomic_load(&quit)) {
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 0.5 / (x + i);
        sink = x;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    if (!atomic_exchange(&mask_checked, 1))
    {
        atomic_store(&profiling_blocked, sigismember(&now, SIGSTKFLT) == 1);
        atomic_store(&usr1_blocked, sigismember(&now, SIGUSR1) == 1);
    }
    sigblock_worker_burn(now_seconds() + seconds);
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    for (;;) {
        int sig = 0;
        if (sigwait(&all, &sig) != 0)
            continue;
        printf("sigwait=%d\n", sig);
        if (sig == SIGTERM) {
            atomic_store(&quit, 1);
            return NULL;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog_sigblock SECONDS\n");
        return 2;
    }
    seconds = atof(argv[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_t w[2], s;
    pthread_create(&s, NULL, waiter, NULL);
    pthread_detach(s);
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i], NULL, worker, NULL);
    printf("ready pid=%d\n", (int)getpid());
    for (int i = 0; i < 2; i++)
        while (!atomic_load(&quit) && pthread_tryjoin_np(w[i], NULL) != 0)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    printf("mask_profiling_blocked=%d mask_usr1_blocked=%d\n", atomic_load(&profiling_blocked),
           atomic_load(&usr1_blocked));
    printf("done\n");
    return 0;
}
