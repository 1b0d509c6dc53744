/* prog_locks_linked.c: a program that contends, for the mutex and block
 * profiles over HTTP: two labeled threads (stage=ingest) fight over one
 * mutex in contend_on_lock, holding it for 200 us sleeps; another waits on
 * a condition variable in wait_on_condition, signalled every 5 ms.
 * Prints "port=P" once serving; runs until SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "serve.h"

#include <pthread.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER, cmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile int ticket;

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void contend_on_lock(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        nap(200000);
        pthread_mutex_unlock(&mu);
        nap(20000);
    }
}

static void *fighter(void *arg)
{
    pprof_do(arg, contend_on_lock, NULL);
    return NULL;
}

__attribute__((noinline)) static void wait_on_condition(void)
{
    pthread_mutex_lock(&cmu);
    int seen = ticket;
    while (ticket == seen)
        pthread_cond_wait(&cv, &cmu);
    pthread_mutex_unlock(&cmu);
}

static void *waiter(void *arg)
{
    (void)arg;
    for (;;)
        wait_on_condition();
    return NULL;
}

static void *signaller(void *arg)
{
    (void)arg;
    for (;;) {
        nap(5000000);
        pthread_mutex_lock(&cmu);
        ticket++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&cmu);
    }
    return NULL;
}

int main(void)
{
    sigset_t set;
    serve_prepare(&set, NULL, 0);
    pprof_server_config cfg = {.addr = "127.0.0.1:0"};
    if (serve_start("prog_locks_linked", &cfg) != 0)
        return 1;
    pprof_label l = {"stage", "ingest"};
    pprof_labels *s;
    pprof_labels_new(&l, 1, &s);
    pthread_t t;
    for (int i = 0; i < 2; i++)
        pthread_create(&t, NULL, fighter, s);
    pthread_create(&t, NULL, waiter, NULL);
    pthread_create(&t, NULL, signaller, NULL);
    serve_announce();
    serve_wait(&set);
    return 0;
}
