/* test_signal.c: a configurable profiling signal, and chaining to the host.
 * test-labels: plain-only timing
 *
 * The host owns SIGPROF (its handler counts calls) and has a handler on
 * SIGRTMIN+3 too. With pprof_cpu_set_signal(SIGRTMIN+3), a 1000 Hz profile
 * gets its samples through SIGRTMIN+3 timers, the host's SIGPROF handler
 * never runs, and a SIGRTMIN+3 that is not libpprof's (raise) still reaches
 * the host's handler. Changing the signal once profiling has started gives
 * PPROF_EBUSY; signals the system keeps give PPROF_EINVAL.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "../burn.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic int host_prof, host_rt;

static void on_prof(int s) { (void)s; atomic_fetch_add(&host_prof, 1); }
static void on_rt(int s) { (void)s; atomic_fetch_add(&host_rt, 1); }

static int timers_on(int signo)
{
    FILE *f = fopen("/proc/self/timers", "r");
    char line[256];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += !strncmp(line, "signal:", 7) && atoi(line + 7) == signo;
    if (f)
        fclose(f);
    return n;
}

int main(void)
{
    int rt = SIGRTMIN + 3;
    signal(SIGPROF, on_prof);
    signal(rt, on_rt);
    CHECK(pprof_cpu_set_signal(SIGKILL) == PPROF_EINVAL);
    CHECK(pprof_cpu_set_signal(SIGSEGV) == PPROF_EINVAL);
    CHECK(pprof_cpu_set_signal(0) == PPROF_EINVAL);
    CHECK(pprof_cpu_set_signal(100000) == PPROF_EINVAL);
    CHECK(pprof_cpu_set_signal(rt) == 0);

    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    CHECK(timers_on(rt) >= 1 && timers_on(SIGPROF) == 0);
    burn_cpu(0.3, 1.0000001);
    raise(rt); /* not a timer's: chained to the host */
    CHECK(pprof_cpu_set_signal(SIGPROF) == PPROF_EBUSY);
    CHECK(pprof_cpu_set_signal(rt) == 0);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    int64_t total = profile_total(p);
    printf("samples %lld, host SIGPROF calls %d, host SIGRTMIN+3 calls %d\n", (long long)total,
           atomic_load(&host_prof), atomic_load(&host_rt));
    CHECKF(total >= 240, "only %lld samples for 0.3 s at 1000 Hz", (long long)total);
    CHECK(atomic_load(&host_prof) == 0);
    CHECK(atomic_load(&host_rt) == 1);
    pprof_profile_free(p);
    pprof_recorder_free(r);
    return check_summary("test_signal");
}
