/* prog_service_linked.c: a small service for the integration tests. It
 * serves /debug/pprof/ with pprof_server_start and runs threads whose kind
 * and number the command line chooses.
 *
 *   --addr HOST:PORT     where to serve (default 127.0.0.1:0, any free port)
 *   --max-concurrent N   the server's cap on concurrent profile requests
 *   --idle N             threads that wait without using CPU
 *   --busy N             threads that burn CPU in spin_for_tests()
 *   anything else        ignored (the cmdline test passes arguments of its own)
 *
 * On stdout, once serving: "port=P", "sym spin_for_tests 0x...",
 * "sym idle_thread_main 0x...", then "ready". SIGUSR1 starts one more idle
 * thread and prints "new-tid=T"; SIGUSR2 ends the newest idle thread and
 * prints "exited-tid=T"; SIGTERM or SIGINT stop the server and exit 0, as
 * does the end of the process that started it.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "serve.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_IDLE 256

typedef struct idle_thread {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int quit;
    int tid;
    int started;
} idle_thread;

static idle_thread idle[MAX_IDLE];
static int nidle;
static _Atomic int stop_busy;
static volatile double sink;

/* Burns CPU until the program stops. Not static, not inlined: tests look
 * for it by name. */
__attribute__((noinline)) void *spin_for_tests(void *arg)
{
    (void)arg;
    double x = 1.0;
    while (!stop_busy) {
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 0.5 / (x + i);
        sink = x;
    }
    return NULL;
}

/* Waits, using no CPU, until told to quit. */
__attribute__((noinline)) static void *idle_thread_main(void *arg)
{
    idle_thread *t = arg;
    pthread_mutex_lock(&t->mu);
    t->tid = (int)syscall(SYS_gettid);
    t->started = 1;
    pthread_cond_broadcast(&t->cv);
    while (!t->quit)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Starts one idle thread and returns its tid once it runs, or -1. */
static int idle_start(void)
{
    if (nidle == MAX_IDLE)
        return -1;
    idle_thread *t = &idle[nidle];
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    if (pthread_create(&t->thread, NULL, idle_thread_main, t) != 0)
        return -1;
    pthread_mutex_lock(&t->mu);
    while (!t->started)
        pthread_cond_wait(&t->cv, &t->mu);
    int tid = t->tid;
    pthread_mutex_unlock(&t->mu);
    nidle++;
    return tid;
}

/* Ends the newest idle thread and returns its tid, or -1. */
static int idle_end(void)
{
    if (nidle == 0)
        return -1;
    idle_thread *t = &idle[--nidle];
    pthread_mutex_lock(&t->mu);
    t->quit = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    return t->tid;
}

int main(int argc, char **argv)
{
    /* The signals are taken by sigwaitinfo below; every thread inherits the
     * blocked mask. */
    sigset_t set;
    serve_prepare(&set, (const int[]){SIGUSR1, SIGUSR2}, 2);
    pprof_server_config cfg = {.addr = "127.0.0.1:0"};
    int nbusy = 0, nidle_start = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--addr") && i + 1 < argc)
            cfg.addr = argv[++i];
        else if (!strcmp(argv[i], "--max-concurrent") && i + 1 < argc)
            cfg.max_concurrent = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--idle") && i + 1 < argc)
            nidle_start = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--busy") && i + 1 < argc)
            nbusy = atoi(argv[++i]);
    }

    if (serve_start("prog_service_linked", &cfg) != 0)
        return 1;
    pthread_t busy[64];
    if (nbusy > 64)
        nbusy = 64;
    for (int i = 0; i < nbusy; i++)
        pthread_create(&busy[i], NULL, spin_for_tests, NULL);
    for (int i = 0; i < nidle_start; i++)
        if (idle_start() < 0)
            fprintf(stderr, "prog_service_linked: cannot start an idle thread\n");

    printf("port=%d\n", pprof_server_port());
    printf("sym spin_for_tests %p\n", (void *)spin_for_tests);
    printf("sym idle_thread_main %p\n", (void *)idle_thread_main);
    printf("ready\n");
    fflush(stdout);

    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig == SIGUSR1) {
            printf("new-tid=%d\n", idle_start());
            fflush(stdout);
        } else if (sig == SIGUSR2) {
            printf("exited-tid=%d\n", idle_end());
            fflush(stdout);
        } else if (sig == SIGTERM || sig == SIGINT) {
            break;
        }
    }
    stop_busy = 1;
    for (int i = 0; i < nbusy; i++)
        pthread_join(busy[i], NULL);
    while (nidle > 0)
        idle_end();
    pprof_server_stop();
    return 0;
}
