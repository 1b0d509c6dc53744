/* timer_overrun.c: how many expirations of a thread's CPU timer the
 * kernel's overrun count reports, without libpprof.
 *
 * Two threads each burn 1.95 s of their own CPU (13 parts of 150 ms)
 * under a per-thread CPU timer (timer_create on the thread's CPU clock,
 * SIGEV_THREAD_ID, period 1/HZ); the handler sums 1 + si_overrun. Prints that sum against the 3.9 x HZ
 * expirations the CPU time holds, and how far apart (in the thread's CPU
 * time) the signals came: the widest gap and the time after the last one.
 * On a loaded machine the count falls short, which is why libpprof weighs
 * its samples by the thread's CPU clock instead; and the signals come far
 * apart, which is why an exiting thread counts its time after its last
 * one (bench/RESULTS.md). With SPINNERS, that many threads spin beside
 * the two (a crowd inside the process, as test_cpu makes), and each burner
 * also prints its signals per 150 ms of its CPU: a crowded thread can get
 * none, which is why the collector sends catch-up signals.
 *
 *   ./build/bench/timer_overrun [HZ [SPINNERS]]
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
static _Atomic int quit;
static __thread volatile double last_signal_s, widest_gap_s; /* the thread's CPU time (set in the handler) */
static __thread volatile long my_signals;

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
    my_signals++;
}

static void *spin(void *arg)
{
    (void)arg;
    while (!atomic_load(&quit))
        ;
    return NULL;
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
    char per[14 * 4 + 1] = "";
    int n = 0;
    for (int part = 0; part < 13; part++) { /* 13 parts of 150 ms: 1.95 s */
        long before = my_signals;
        for (double end = thread_cpu_s() + 0.15; thread_cpu_s() < end;)
            for (int i = 0; i < 1000; i++)
                x = x * 1.0000001 + 1.0 / (x + i);
        n += snprintf(per + n, sizeof per - (size_t)n, " %ld", my_signals - before);
    }
    timer_delete(t);
    printf("  thread: widest gap between signals %.1f ms of its CPU, %.1f ms after the last one; "
           "signals per 150 ms:%s\n",
           widest_gap_s * 1e3, (thread_cpu_s() - last_signal_s) * 1e3, per);
    return NULL;
}

int main(int argc, char **argv)
{
    int hz = argc > 1 ? atoi(argv[1]) : 1000, spinners = argc > 2 ? atoi(argv[2]) : 0;
    if (hz < 1 || hz > 10000)
        hz = 1000;
    if (spinners < 0 || spinners > 64)
        spinners = 0;
    pthread_t crowd[64];
    for (int i = 0; i < spinners; i++)
        pthread_create(&crowd[i], NULL, spin, NULL);
    struct sigaction sa = {0};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    pthread_t a, b;
    pthread_create(&a, NULL, burn, &hz);
    pthread_create(&b, NULL, burn, &hz);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    atomic_store(&quit, 1);
    for (int i = 0; i < spinners; i++)
        pthread_join(crowd[i], NULL);
    printf("hz %d, %d spinning: weight %ld (expect %d), signals %ld\n", hz, spinners, atomic_load(&weight),
           (int)(2 * 13 * 0.15 * hz), atomic_load(&signals));
    return 0;
}
