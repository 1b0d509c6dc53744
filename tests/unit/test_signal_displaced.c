/* test_signal_displaced.c: a host that takes the profiling signal while
 * a profile runs.
 * test-labels: plain-only timing
 *
 * A 1000 Hz CPU profile runs. The host installs a handler of its own on
 * the profiling signal with sigaction: libpprof's stays in front
 * (signal_hooks.c), sigaction reports the host's handler back to the host,
 * the host's raise reaches the host's handler, and the samples go on
 * without a gap. Then the host replaces the handler behind the C
 * library's back (the raw rt_sigaction system call): libpprof puts its
 * handler back within 250 ms, so the function that burns 0.6 s of CPU
 * after that takeover still gets samples (with the handler left displaced
 * it got none), and the host's handler still gets the host's raise
 * through the chain. A takeover while no profile runs is undone when the
 * next one starts. pprof_cpu_stats counts the put-backs.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "../burn.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SIG SIGSTKFLT /* the profiling signal by default */

static _Atomic int host_calls;
static void host_handler(int s) { (void)s; atomic_fetch_add(&host_calls, 1); }

/* The kernel's struct sigaction, the same on x86-64 and arm64. */
struct ksigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

/* Installs host_handler with the raw system call, as a runtime that does
 * not go through the C library does. */
static void take_raw(void)
{
    struct ksigaction k, cur;
    syscall(SYS_rt_sigaction, SIG, NULL, &cur, sizeof k.mask);
    k = cur; /* keeps the C library's restorer (x86-64 needs one) */
    k.handler = host_handler;
    k.flags = (cur.flags & 0x04000000 /* SA_RESTORER */) | SA_RESTART;
    k.mask = 0;
    syscall(SYS_rt_sigaction, SIG, &k, NULL, sizeof k.mask);
}

__attribute__((noinline)) static void before_takeover(void)
{
    burn_cpu(0.2, 1.0000001);
}

__attribute__((noinline)) static void after_sigaction(void)
{
    burn_cpu(0.3, 1.0000002);
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

    struct sigaction sa, cur;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = host_handler;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIG, &sa, NULL) == 0);
    CHECK(sigaction(SIG, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == host_handler);
    raise(SIG);
    CHECK(atomic_load(&host_calls) == 1);
    after_sigaction();

    take_raw();
    after_takeover();
    raise(SIG);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    int64_t before = sum_of(p, "before_takeover", 0), mid = sum_of(p, "after_sigaction", 0),
            after = sum_of(p, "after_takeover", 0);
    pprof_cpu_stats st;
    pprof_cpu_stats_get(&st);
    printf("samples before the host's handler %lld, after its sigaction %lld, after its raw takeover %lld; "
           "host handler calls %d; handler put back %llu times\n",
           (long long)before, (long long)mid, (long long)after, atomic_load(&host_calls),
           (unsigned long long)st.handler_reclaimed);
    CHECKF(before >= 100, "%lld samples for 0.2 s", (long long)before);
    CHECKF(mid >= 150, "%lld samples for 0.3 s after the host's sigaction (no gap)", (long long)mid);
    CHECKF(after >= 150, "%lld samples for 0.6 s after the takeover (at most 0.25 s lost)", (long long)after);
    /* its own raises, chained; while its raw handler stood, libpprof's
     * ticks reached it too (up to 250 ms of them) */
    CHECK(atomic_load(&host_calls) >= 2);
    CHECK(st.handler_reclaimed == 1);
    pprof_profile_free(p);

    /* taken while no profile runs: put back when the next one starts */
    take_raw();
    CHECK(pprof_recorder_start(r) == 0);
    struct ksigaction k;
    syscall(SYS_rt_sigaction, SIG, NULL, &k, sizeof k.mask);
    CHECK((k.flags & SA_SIGINFO) && k.handler != host_handler);
    CHECK(sigaction(SIG, NULL, &cur) == 0 && cur.sa_handler == host_handler);
    pprof_cpu_stats_get(&st);
    CHECK(st.handler_reclaimed == 2);
    CHECK(pprof_recorder_stop(r, NULL) == 0);
    int calls = atomic_load(&host_calls);
    raise(SIG);
    CHECK(atomic_load(&host_calls) == calls + 1);
    pprof_recorder_free(r);
    return check_summary("test_signal_displaced");
}
