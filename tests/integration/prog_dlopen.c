/* prog_dlopen.c: a program that loads libpprof with dlopen (not linked,
 * not preloaded) and starts its server, for test_dlopen: no override of
 * libpprof's binds then, neither for the program nor for libpprof's own
 * calls.
 *
 *   prog_dlopen LIBPPROF_SO
 *
 * Starts a thread burning CPU in burn_before_dlopen, then loads the
 * library (RTLD_NOW | RTLD_LOCAL), starts the server on 127.0.0.1:0 and a
 * second thread burning in burn_after_dlopen, prints "port=N", and burns
 * and allocates (allocate_after_dlopen, 64 KiB blocks, each freed after
 * the next) until SIGTERM, then prints "done" and exits 0.
 */
#define _GNU_SOURCE
#include "../burn.h"
#include "pprof_server.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

/* Two factors, so that the compiler does not fold them into one. */
__attribute__((noinline)) void burn_before_dlopen(double s)
{
    burn_on(CLOCK_MONOTONIC, s, 1.0000001);
}

__attribute__((noinline)) void burn_after_dlopen(double s)
{
    burn_on(CLOCK_MONOTONIC, s, 1.0000002);
}

static void *before(void *arg)
{
    (void)arg;
    while (!stop)
        burn_before_dlopen(0.1);
    return NULL;
}

static void *after(void *arg)
{
    (void)arg;
    while (!stop)
        burn_after_dlopen(0.1);
    return NULL;
}

/* Allocates a block and frees the one before it. */
__attribute__((noinline)) void *allocate_after_dlopen(void *prev)
{
    void *p = malloc(65536);
    if (p)
        memset(p, 1, 65536);
    free(prev);
    return p;
}

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog_dlopen LIBPPROF_SO\n");
        return 2;
    }
    signal(SIGTERM, on_term);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, before, NULL);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "prog_dlopen: %s\n", dlerror());
        return 1;
    }
    int (*start)(const pprof_server_config *) = (int (*)(const pprof_server_config *))dlsym(lib, "pprof_server_start");
    int (*port)(void) = (int (*)(void))dlsym(lib, "pprof_server_port");
    const char *(*last_error)(void) = (const char *(*)(void))dlsym(lib, "pprof_last_error");
    pprof_server_config cfg = {.addr = "127.0.0.1:0"};
    if (!start || !port || !last_error || start(&cfg) != 0) {
        fprintf(stderr, "prog_dlopen: the server did not start: %s\n", last_error ? last_error() : dlerror());
        return 1;
    }
    pthread_create(&t2, NULL, after, NULL);
    printf("port=%d\n", port());
    fflush(stdout);
    void *p = NULL;
    while (!stop) {
        p = allocate_after_dlopen(p);
        usleep(1000);
    }
    free(p);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("done\n");
    return 0;
}
