/* prog_tree_linked.c: a prefork program, for test_tree.
 *
 * The parent serves /debug/pprof/ (so it is the hub), then forks WORKERS
 * workers. Worker i keeps KEEP blocks of 1000 + i bytes from worker_keep
 * (labelled worker=<i>) and burns CPU in worker_burn; the parent itself
 * sleeps. Prints "port=P" and one "worker=<pid>" line per worker. On
 * SIGUSR1 it forks 500 children that exit at once (each may have joined
 * the tree) and prints "churned"; on SIGTERM it ends the workers and exits.
 */
#define _GNU_SOURCE
#include "serve.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 2
#define KEEP 500

static volatile unsigned long sink;
static void *kept[KEEP];

__attribute__((noinline)) static void worker_keep(void *arg)
{
    size_t size = 1000 + (size_t)(uintptr_t)arg;
    for (int i = 0; i < KEEP; i++) {
        kept[i] = malloc(size);
        memset(kept[i], 1, size);
    }
}

__attribute__((noinline)) static void worker_burn(void)
{
    for (;;)
        for (unsigned long i = 0; i < 100000; i++)
            sink += i * i;
}

static void worker(int i)
{
    char v[8];
    snprintf(v, sizeof v, "%d", i);
    pprof_label l = {"worker", v};
    pprof_labels *set;
    pprof_labels_new(&l, 1, &set);
    pprof_do(set, worker_keep, (void *)(uintptr_t)i);
    worker_burn();
}

int main(int argc, char **argv)
{
    sigset_t set;
    int more[] = {SIGUSR1};
    serve_prepare(&set, more, 1);
    pprof_server_config cfg = {.addr = argc > 1 ? argv[1] : "127.0.0.1:0"};
    if (serve_start("prog_tree_linked", &cfg) != 0)
        return 1;
    pid_t pids[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            sigset_t none;
            sigemptyset(&none);
            pthread_sigmask(SIG_SETMASK, &none, NULL); /* a worker ends on SIGTERM */
            worker(i);
            _exit(0);
        }
    }
    serve_announce();
    for (int i = 0; i < WORKERS; i++)
        printf("worker=%d\n", (int)pids[i]);
    fflush(stdout);
    while (serve_wait(&set) == SIGUSR1) {
        for (int i = 0; i < 500; i++) {
            pid_t c = fork();
            if (c == 0)
                _exit(0);
            if (c > 0)
                waitpid(c, NULL, 0);
        }
        printf("churned\n");
        fflush(stdout);
    }
    for (int i = 0; i < WORKERS; i++)
        kill(pids[i], SIGTERM);
    for (int i = 0; i < WORKERS; i++)
        waitpid(pids[i], NULL, 0);
    return 0;
}
