/* prog_inline_linked.c: a program for the symbolization test. Its CPU goes
 * to a static function that the compiler inlines (blend_inlined_kernel)
 * inside another static function that it must not inline
 * (churn_static_outer). Built at -O2 -g and linked without -rdynamic, so
 * neither name is in the dynamic symbol table: only .symtab and DWARF know
 * them. The test reads the line numbers of the marked lines below.
 *
 *   argv[1]   HOST:PORT to serve /debug/pprof/ on (default 127.0.0.1:0)
 *
 * Prints "port=P" once serving; SIGTERM or SIGINT end it.
 */
#define _GNU_SOURCE
#include "pprof.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>

static _Atomic int stop;
static volatile double sink;

/* @inline-begin */
static inline __attribute__((always_inline)) double blend_inlined_kernel(double x)
{
    for (int i = 0; i < 20000; i++)
        x = x * 1.0000001 + 0.5 / (x + i);
    return x;
}
/* @inline-end */

__attribute__((noinline)) static void churn_static_outer(void)
{
    double x = 1.0;
    while (!stop) {
        x = blend_inlined_kernel(x); /* @call-site */
        sink = x;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    churn_static_outer();
    return NULL;
}

int main(int argc, char **argv)
{
    /* Ends with the test that started it, even one killed outright. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    pprof_server_config cfg = {.addr = argc > 1 ? argv[1] : "127.0.0.1:0"};
    int rc = pprof_server_start(&cfg);
    if (rc != 0) {
        fprintf(stderr, "prog_inline_linked: cannot serve: %s\n", pprof_strerror(rc));
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    printf("port=%d\n", pprof_server_port());
    fflush(stdout);

    int sig;
    sigwait(&set, &sig);
    stop = 1;
    pthread_join(t, NULL);
    pprof_server_stop();
    return 0;
}
