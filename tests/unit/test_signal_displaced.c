/* test_signal_displaced.c: a host that takes SIGPROF while a profile runs.
 * test-labels: plain-only timing
 *
 * A 1000 Hz CPU profile runs; then the host installs a SIGPROF handler of
 * its own and starts setitimer(ITIMER_PROF), as gperftools-style code
 * does. libpprof puts its handler back within 250 ms, so the function
 * that burns 0.6 s of CPU after the takeover still gets samples (with the
 * handler left displaced it got none), and the host's handler still gets
 * its own timer's signals through the chain. A second takeover before a
 * profile starts is undone when it starts. pprof_cpu_stats counts both.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "../burn.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>

static _Atomic int host_calls;
static void host_handler(int s) { (void)s; atomic_fetch_add(&host_calls, 1); }

static void take_sigprof(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = host_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
}

__attribute__((noinline)) static void before_takeover(void)
{
    burn_cpu(0.2, 1.0000001);
}

__attribute__((noinline)) static void after_takeover(void)
{
    burn_cpu(0.6, 1.0000003);
}

int main(void)
{
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    before_takeover();
    take_sigprof();
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_PROF, &it, NULL);
    after_takeover();
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    int64_t before = sum_of(p, "before_takeover", 0), after = sum_of(p, "after_takeover", 0);
    pprof_cpu_stats st;
    pprof_cpu_stats_get(&st);
    printf("samples before the takeover %lld, after %lld; host handler calls %d; handler put back %llu times\n",
           (long long)before, (long long)after, atomic_load(&host_calls), (unsigned long long)st.handler_reclaimed);
    CHECKF(before >= 100, "%lld samples for 0.2 s", (long long)before);
    CHECKF(after >= 150, "%lld samples for 0.6 s after the takeover (at most 0.25 s lost)", (long long)after);
    CHECK(atomic_load(&host_calls) >= 5); /* its own timer: 0.6 s at 100 Hz, chained */
    CHECK(st.handler_reclaimed == 1);
    pprof_profile_free(p);

    /* taken while no profile runs: put back when the next one starts */
    take_sigprof();
    CHECK(pprof_recorder_start(r) == 0);
    struct sigaction cur;
    sigaction(SIGPROF, NULL, &cur);
    CHECK((cur.sa_flags & SA_SIGINFO) && cur.sa_handler != host_handler);
    pprof_cpu_stats_get(&st);
    CHECK(st.handler_reclaimed == 2);
    CHECK(pprof_recorder_stop(r, NULL) == 0);
    pprof_recorder_free(r);
    return check_summary("test_signal_displaced");
}
