/* prog_tree_linked.c: a prefork program, for test_tree.
 *
 * The parent serves /debug/pprof/ (so it is the hub), then forks WORKERS
 * workers. Worker i keeps KEEP blocks of 1000 + i bytes from worker_keep
 * (labelled worker=<i>), waits for a mutex another of its threads holds
 * exactly CONTEND + 10 i times in worker_contend_wait (the holder keeps it
 * 20 ms after letting the waiter go, so every wait is contended), and
 * burns CPU in worker_burn; the parent itself
 * sleeps. Prints "port=P" and one "worker=<pid>" line per worker. On
 * SIGUSR1 it forks 500 children that exit at once (each may have joined
 * the tree) and prints "churned"; on SIGUSR2 it restarts the last worker
 * (ends it, forks a new one) and prints "restarted=<pid>"; on SIGTERM it
 * ends the workers and exits.
 *
 * With PROG_TREE_WORKER_UID=N the workers drop to user and group N as
 * they start, as a daemon's workers do. With PROG_TREE_DELAY_MS=N they
 * wait N ms before their work (test_history_tree: a forked child's
 * history starts 50 ms after the fork).
 *
 * With --collect DIR it does not serve: pprof_tree_start makes it the hub,
 * and on SIGUSR2 it writes pprof_tree_collect's "heap" and
 * "profile?seconds=1" to DIR/heap.pb.gz and DIR/cpu.pb.gz and prints
 * "collected" (or "collect failed: REASON").
 */
#define _GNU_SOURCE
#include "serve.h"

#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 2
#define KEEP 500
#define CONTEND 20

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

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static sem_t go, done;

/* Holds the mutex for 20 ms after each go, n rounds. */
static void *worker_hold(void *arg)
{
    for (long i = 0; i < (long)(intptr_t)arg; i++) {
        pthread_mutex_lock(&contended);
        sem_post(&go);
        usleep(20000);
        pthread_mutex_unlock(&contended);
        sem_wait(&done);
    }
    return NULL;
}

__attribute__((noinline)) static void worker_contend_wait(long rounds)
{
    for (long i = 0; i < rounds; i++) {
        sem_wait(&go);
        pthread_mutex_lock(&contended); /* held for 20 ms more: a contended wait */
        pthread_mutex_unlock(&contended);
        sem_post(&done);
    }
}

static void worker_contend(void *arg)
{
    long rounds = CONTEND + 10 * (long)(intptr_t)arg;
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, worker_hold, (void *)(intptr_t)rounds) == 0) {
        worker_contend_wait(rounds);
        pthread_join(t, NULL);
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
    char v[16];
    snprintf(v, sizeof v, "%d", i);
    pprof_label l = {"worker", v};
    pprof_labels *set;
    pprof_labels_new(&l, 1, &set);
    const char *delay = getenv("PROG_TREE_DELAY_MS");
    if (delay)
        usleep((useconds_t)atoi(delay) * 1000);
    pprof_do(set, worker_keep, (void *)(uintptr_t)i);
    pprof_do(set, worker_contend, (void *)(uintptr_t)i);
    worker_burn();
}

static int file_write(void *ctx, const void *data, size_t len)
{
    return fwrite(data, 1, len, ctx) == len ? 0 : -1;
}

/* Writes one pprof_tree_collect answer to DIR/NAME. */
static int collect_to(const char *dir, const char *request, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = pprof_tree_collect(request, (pprof_writer){file_write, f});
    fclose(f);
    if (rc)
        printf("collect failed: %s\n", pprof_last_error());
    return rc;
}

static pid_t start_worker(int i)
{
    pid_t pid = fork();
    if (pid == 0) {
        const char *uid = getenv("PROG_TREE_WORKER_UID");
        if (uid && (setresgid((gid_t)atoi(uid), (gid_t)atoi(uid), (gid_t)atoi(uid)) ||
                    setresuid((uid_t)atoi(uid), (uid_t)atoi(uid), (uid_t)atoi(uid))))
            _exit(3);
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, NULL); /* a worker ends on SIGTERM */
        worker(i);
        _exit(0);
    }
    return pid;
}

int main(int argc, char **argv)
{
    sigset_t set;
    int more[] = {SIGUSR1, SIGUSR2};
    serve_prepare(&set, more, 2);
    const char *collect = argc > 2 && !strcmp(argv[1], "--collect") ? argv[2] : NULL;
    pprof_server_config cfg = {.addr = argc > 1 && !collect ? argv[1] : "127.0.0.1:0"};
    if (collect ? pprof_tree_start() != 0 : serve_start("prog_tree_linked", &cfg) != 0)
        return 1;
    pid_t pids[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pids[i] = start_worker(i);
    if (!collect)
        serve_announce();
    for (int i = 0; i < WORKERS; i++)
        printf("worker=%d\n", (int)pids[i]);
    fflush(stdout);
    for (int sig; (sig = serve_wait(&set)) == SIGUSR1 || sig == SIGUSR2;) {
        if (sig == SIGUSR2 && !collect) {
            kill(pids[WORKERS - 1], SIGTERM);
            waitpid(pids[WORKERS - 1], NULL, 0);
            pids[WORKERS - 1] = start_worker(WORKERS - 1);
            printf("restarted=%d\n", (int)pids[WORKERS - 1]);
            fflush(stdout);
            continue;
        }
        if (sig == SIGUSR2) {
            if (collect_to(collect, "heap", "heap.pb.gz") == 0 &&
                collect_to(collect, "profile?seconds=1", "cpu.pb.gz") == 0)
                printf("collected\n");
            fflush(stdout);
            continue;
        }
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
