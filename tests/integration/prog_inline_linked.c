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
#include "serve.h"

#include <pthread.h>

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
    sigset_t set;
    serve_prepare(&set, NULL, 0);
    pprof_server_config cfg = {.addr = argc > 1 ? argv[1] : "127.0.0.1:0"};
    if (serve_start("prog_inline_linked", &cfg) != 0)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    serve_announce();

    serve_wait(&set);
    stop = 1;
    pthread_join(t, NULL);
    pprof_server_stop();
    return 0;
}
