/* test_fork.c: profiling across fork.
 * test-labels: plain-only timing
 *
 * While the parent profiles at 1000 Hz with a busy thread, the main thread
 * forks 200 times; every child exits at once with status 0 (fork neither
 * fails nor hangs with the profiling signal). Then a child that profiles
 * itself gets its samples: its collector state starts fresh, not copied
 * from the parent's (a copied "collector running" flag, ring position or
 * lock would lose them or hang), and its CPU profile holds at least 80% of
 * the samples its CPU time calls for. A dlclose in the child does not hang
 * on the parent's in-flight walk counters.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "../burn.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static _Atomic int quit;

__attribute__((noinline)) static void burn(double s) { burn_cpu(s, 1.0000001); }

static void *busy(void *arg)
{
    (void)arg;
    while (!atomic_load(&quit))
        burn(0.01);
    return NULL;
}

/* The child: profile 0.5 s of its own CPU and check the samples. */
static int child_profiles(void)
{
    void *h = dlopen("libz.so.1", RTLD_NOW);
    if (h)
        dlclose(h);
    pprof_recorder *r;
    if (pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) || pprof_recorder_start(r))
        return 2;
    double c0 = burn_thread_cpu_s();
    burn(0.5);
    double used = burn_thread_cpu_s() - c0;
    pprof_profile *p;
    if (pprof_recorder_stop(r, &p))
        return 3;
    int64_t total = profile_total(p);
    pprof_profile_free(p);
    pprof_recorder_free(r);
    printf("child: %lld samples for %.3f s of CPU\n", (long long)total, used);
    fflush(stdout);
    return total >= 0.8 * used * 1000 ? 0 : 4;
}

int main(void)
{
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    pthread_t t;
    pthread_create(&t, NULL, busy, NULL);
    int bad = 0;
    for (int i = 0; i < 200; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            bad++;
        burn(0.001);
    }
    CHECKF(bad == 0, "%d forks failed", bad);
    for (int i = 0; i < 3; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(child_profiles());
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: status %d", i, st);
    }
    atomic_store(&quit, 1);
    pthread_join(t, NULL);
    CHECK(pprof_recorder_stop(r, NULL) == 0);
    pprof_recorder_free(r);
    return check_summary("test_fork");
}
