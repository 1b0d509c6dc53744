/* timer_overrun.c: how many expirations of a thread's CPU timer the
 * kernel's overrun count reports, without libpprof.
 *
 * Two threads each burn 2 s of their own CPU under a per-thread CPU timer
 * (timer_create on the thread's CPU clock, SIGEV_THREAD_ID, period 1/HZ);
 * the handler sums 1 + si_overrun. Prints that sum against the 4 x HZ
 * expirations the CPU time holds, and how far apart (in the thread's CPU
 * time) the signals came: the widest gap and the time after the last one.
 * On a loaded machine the count falls short, which is why libpprof weighs
 * its samples by the thread's CPU clock instead; and the signals come far
 * apart, which is why an exiting thread counts its time after its last
 * one (bench/RESULTS.md).
 *
 *   ./build/bench/timer_overrun [HZ]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic long weight, signals;
static __thread volatile double last_signal_s, widest_gap_s; /* the thread's CPU time (set in the handler) */

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    atomic_fetch_add(&weight, 1 + (si->si_overrun > 0 ? si->si_overrun : 0));
    atomic_fetch_add(&signals, 1);
    double now = thread_cpu_s();
    if (now - last_signal_s > widest_gap_s)
        widest_gap_s = now - last_signal_s;
    last_signal_s = now;
}

static void *burn(void *arg)
{
    int hz = *(int *)arg;
    struct sigevent ev = {0};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev._sigev_un._tid = (int)syscall(SYS_gettid);
    clockid_t clock;
    timer_t t;
    if (pthread_getcpuclockid(pthread_self(), &clock) || timer_create(clock, &ev, &t))
        return NULL;
    long p = 1000000000L / hz;
    struct itimerspec its = {{p / 1000000000L, p % 1000000000L}, {p / 1000000000L, p % 1000000000L}};
    last_signal_s = thread_cpu_s();
    timer_settime(t, 0, &its, NULL);
    volatile double x = 1;
    for (double end = thread_cpu_s() + 2.0; thread_cpu_s() < end;)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1.0 / (x + i);
    timer_delete(t);
    printf("  thread: widest gap between signals %.1f ms of its CPU, %.1f ms after the last one\n",
           widest_gap_s * 1e3, (thread_cpu_s() - last_signal_s) * 1e3);
    return NULL;
}

int main(int argc, char **argv)
{
    int hz = argc > 1 ? atoi(argv[1]) : 1000;
    if (hz < 1 || hz > 10000)
        hz = 1000;
    struct sigaction sa = {0};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    pthread_t a, b;
    pthread_create(&a, NULL, burn, &hz);
    pthread_create(&b, NULL, burn, &hz);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("hz %d: weight %ld (expect %d), signals %ld\n", hz, atomic_load(&weight), 4 * hz, atomic_load(&signals));
    return 0;
}
