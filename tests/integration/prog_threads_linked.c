/* prog_threads_linked.c: threads parked in known places, for thread dumps.
 *
 *   park-poll      poll() on a pipe that never becomes readable (labels
 *                  role=poller), 10 s timeout, again and again
 *   park-epoll     epoll_wait() on an empty epoll set, 10 s timeout
 *   park-sleep     nanosleep() of 10 s (labels role=sleeper)
 *   park-sem       sem_wait() on a semaphore nobody posts (until the end)
 *   spin-masked    busy loop with the profiling signal blocked by name
 *                  (a wholesale mask would leave it open)
 *
 * and a custom profile "open_files": two entries added by open_log_files,
 * one by open_config.
 *
 * Each blocking call counts EINTR returns: a thread dump must not
 * interrupt them. On SIGTERM/SIGINT it prints "eintr=N" (the total) and
 * exits. Prints "port=P" once serving.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "serve.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static _Atomic int eintr, stop;
static sem_t never;
static volatile unsigned long spins;

__attribute__((noinline)) static void park_in_poll(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    while (!stop)
        if (poll(&p, 1, 10000) < 0 && errno == EINTR)
            eintr++;
}

static void poller(void *arg)
{
    park_in_poll(*(int *)arg);
}

__attribute__((noinline)) static void park_in_epoll(void)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;
    while (!stop)
        if (epoll_wait(ep, &ev, 1, 10000) < 0 && errno == EINTR)
            eintr++;
    close(ep);
}

__attribute__((noinline)) static void park_in_nanosleep(void)
{
    while (!stop) {
        struct timespec ts = {10, 0};
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
            eintr++;
    }
}

static void sleeper(void *arg)
{
    (void)arg;
    park_in_nanosleep();
}

__attribute__((noinline)) static void park_in_sem_wait(void)
{
    while (sem_wait(&never) < 0)
        if (errno == EINTR)
            eintr++;
}

__attribute__((noinline)) static void park_in_pause(void)
{
    while (!stop)
        if (pause() < 0 && errno == EINTR)
            eintr++;
}

__attribute__((noinline)) static void spin_with_signals_blocked(void)
{
    sigset_t named;
    sigemptyset(&named);
    sigaddset(&named, SIGSTKFLT); /* the profiling signal, by name */
    sigaddset(&named, SIGUSR1);
    sigaddset(&named, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &named, NULL);
    while (!stop)
        spins++;
}

static int files[3];

__attribute__((noinline)) static void open_log_files(pprof_custom *c)
{
    pprof_custom_add(c, &files[0]);
    pprof_custom_add(c, &files[1]);
}

__attribute__((noinline)) static void open_config(pprof_custom *c)
{
    pprof_custom_add(c, &files[2]);
}

static pprof_labels *labels(const char *role)
{
    pprof_label l = {"role", role};
    pprof_labels *s;
    pprof_labels_new(&l, 1, &s);
    return s;
}

static void *run(void *arg)
{
    static const char *const names[] = {"park-poll", "park-epoll", "park-sleep",
                                        "park-sem", "spin-masked", "park-pause"};
    static void (*const park[])(void) = {NULL, park_in_epoll, NULL, park_in_sem_wait, spin_with_signals_blocked,
                                         park_in_pause};
    static int fds[2];
    long which = (long)arg;
    pthread_setname_np(pthread_self(), names[which]);
    if (which == 0) {
        if (pipe(fds) == 0)
            pprof_do(labels("poller"), poller, &fds[0]);
    } else if (which == 2) {
        pprof_do(labels("sleeper"), sleeper, NULL);
    } else {
        park[which]();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    sigset_t set;
    serve_prepare(&set, NULL, 0);
    sem_init(&never, 0, 0);

    pprof_server_config cfg = {.addr = argc > 1 ? argv[1] : "127.0.0.1:0"};
    if (serve_start("prog_threads_linked", &cfg) != 0)
        return 1;
    pprof_custom *c;
    if (pprof_custom_new("open_files", &c) == 0) {
        open_log_files(c);
        open_config(c);
    }
    pthread_t t[6];
    for (long i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, run, (void *)i);
    serve_announce();
    serve_wait(&set);
    printf("eintr=%d\n", atomic_load(&eintr));
    fflush(stdout);
    _exit(0); /* the parked threads never return */
}
