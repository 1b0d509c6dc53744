/* test_sigmask.c: a wholesale signal mask leaves the profiling signal
 * open; one that names it is obeyed (interpose/signal_hooks.c).
 * test-labels: plain-only quick
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "check.h"

#include <pthread.h>
#include <signal.h>

static int blocked(int sig)
{
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    return sigismember(&now, sig) == 1;
}

static void *mask_of_thread(void *out)
{
    pthread_sigmask(SIG_BLOCK, NULL, out);
    return NULL;
}

static void set_mask(const sigset_t *s)
{
    pthread_sigmask(SIG_SETMASK, s, NULL);
}

int main(void)
{
    sigset_t all, none, prof, few;
    sigfillset(&all);
    sigemptyset(&none);
    sigemptyset(&prof);
    sigaddset(&prof, SIGSTKFLT);
    sigemptyset(&few);
    sigaddset(&few, SIGSTKFLT);
    sigaddset(&few, SIGUSR1);
    sigaddset(&few, SIGTERM);

    /* wholesale: everything but the profiling signal */
    CHECK(pthread_sigmask(SIG_BLOCK, &all, NULL) == 0);
    CHECK(blocked(SIGUSR1) && blocked(SIGTERM) && blocked(SIGINT) && !blocked(SIGSTKFLT));
    set_mask(&none);
    CHECK(pthread_sigmask(SIG_SETMASK, &all, NULL) == 0);
    CHECK(blocked(SIGUSR1) && !blocked(SIGSTKFLT));
    set_mask(&none);
    CHECK(sigprocmask(SIG_BLOCK, &all, NULL) == 0);
    CHECK(blocked(SIGHUP) && !blocked(SIGSTKFLT));
    set_mask(&none);

    /* APR's apr_setup_signal_thread (Apache httpd's children): every
     * signal but SIGPIPE and the seven synchronous ones, 23 of 1 to 31 */
    sigset_t apr = all;
    int sync_sigs[] = {SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGPIPE, SIGSYS};
    for (size_t i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++)
        sigdelset(&apr, sync_sigs[i]);
    CHECK(pthread_sigmask(SIG_SETMASK, &apr, NULL) == 0);
    CHECK(blocked(SIGUSR1) && blocked(SIGTERM) && !blocked(SIGPIPE) && !blocked(SIGSTKFLT));
    set_mask(&none);

    /* named: obeyed, and kept through a later wholesale mask */
    CHECK(pthread_sigmask(SIG_BLOCK, &prof, NULL) == 0 && blocked(SIGSTKFLT));
    set_mask(&all);
    CHECK(blocked(SIGSTKFLT) && blocked(SIGUSR1));
    set_mask(&none);
    CHECK(!blocked(SIGSTKFLT));
    set_mask(&few);
    CHECK(blocked(SIGSTKFLT) && blocked(SIGUSR1));
    set_mask(&none);

    /* a thread started under a wholesale mask has the profiling signal open */
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_t t;
    sigset_t seen;
    CHECK(pthread_create(&t, NULL, mask_of_thread, &seen) == 0 && pthread_join(t, NULL) == 0);
    CHECK(sigismember(&seen, SIGSTKFLT) == 0 && sigismember(&seen, SIGUSR2) == 1);
    set_mask(&none);

    /* the profiler's own exact calls pass through */
    CHECK(pp_sigmask_exact(SIG_SETMASK, &all, NULL) == 0);
    CHECK(blocked(SIGSTKFLT));
    pp_sigmask_exact(SIG_SETMASK, &none, NULL);
    CHECK(!blocked(SIGSTKFLT));
    return check_summary("test_sigmask");
}
