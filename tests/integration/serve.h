/* serve.h: the start and the wait shared by the integration test programs
 * that serve /debug/pprof/ until a signal ends them (prog_*_linked.c).
 *
 * In main, before any thread starts:
 *     sigset_t set;
 *     serve_prepare(&set, NULL, 0);
 *     if (serve_start("prog_x", &cfg)) return 1;
 *     ... start the threads ...
 *     serve_announce();
 *     serve_wait(&set);
 * Include after defining _GNU_SOURCE. */
#ifndef PP_SERVE_H
#define PP_SERVE_H
#include "pprof.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>

/* Ends the program with the process that started it, even one killed
 * outright (SIGTERM at the parent's death). Fills *set with SIGTERM, SIGINT
 * and the n signals in more, and blocks them in the calling thread, so in
 * every thread started later too (the server's among them): only
 * serve_wait, or the caller's own sigwait, takes them. */
static inline void serve_prepare(sigset_t *set, const int *more, size_t n)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigemptyset(set);
    for (size_t i = 0; i < n; i++)
        sigaddset(set, more[i]);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    pthread_sigmask(SIG_BLOCK, set, NULL);
}

/* Starts serving /debug/pprof/ with cfg. On failure prints
 * "PROG: cannot serve on ADDR: ERROR" to stderr and returns the error. */
static inline int serve_start(const char *prog, const pprof_server_config *cfg)
{
    int rc = pprof_server_start(cfg);
    if (rc != 0)
        fprintf(stderr, "%s: cannot serve on %s: %s\n", prog, cfg->addr ? cfg->addr : "(default)",
                pprof_last_error());
    return rc;
}

/* Prints "port=P", the line the tests wait for, at once. */
static inline void serve_announce(void)
{
    printf("port=%d\n", pprof_server_port());
    fflush(stdout);
}

/* Waits for one of the signals in set; returns it. */
static inline int serve_wait(const sigset_t *set)
{
    int sig = 0;
    sigwait(set, &sig);
    return sig;
}
#endif
