/* onethread.c: an LD_PRELOAD shim with no hooks at all (pg_perf.sh's
 * onethread arm): it keeps one idle thread in every process, started by a
 * constructor and again in every forked child, as libpprof's member
 * thread does, to measure what being multi-threaded alone costs a service
 * (glibc's cancellation points and malloc leave their single-thread
 * paths; the kernel takes references on a shared descriptor table).
 * Built with -DFIRST_ONLY (the firstthread arm), only the first process
 * has the thread, as only a tree's hub would have its server's threads:
 * glibc 2.36 keeps a child forked from a multi-threaded process on its
 * multi-thread paths all the same. */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void start(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread blocks every signal */
    pthread_t t;
    if (pthread_create(&t, NULL, idle, NULL) == 0)
        pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

__attribute__((constructor)) static void init(void)
{
#ifndef FIRST_ONLY
    pthread_atfork(NULL, NULL, start);
#endif
    start();
}
