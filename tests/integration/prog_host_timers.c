/* prog_host_timers.c: a program that times itself with the signals and
 * timers a profiler could use, as PHP, Python and gperftools do.
 *
 * It knows nothing of libpprof (test_host_timers.sh preloads it). Two
 * threads burn CPU for the seconds given. The program's own timers:
 * setitimer(ITIMER_PROF) and setitimer(ITIMER_VIRTUAL) every 10 ms of
 * process CPU (SIGPROF, SIGVTALRM), and a timer_create timer on the
 * process's CPU clock every 10 ms that sends SIGRTMIN+2 with the value
 * 4242. Like PHP at each request, the main thread installs its SIGPROF,
 * SIGVTALRM and SIGRTMIN+2 handlers again every 20 ms. Each handler
 * counts its deliveries and those that are not the program's own (a
 * SIGPROF or SIGVTALRM that the kernel's itimer did not send, a
 * SIGRTMIN+2 without the timer's value). It also installs a handler on
 * SIGSTKFLT (libpprof's profiling signal by default) at each request and
 * raises it once. Printed at the end:
 *   prof=N prof_foreign=N vtalrm=N vtalrm_foreign=N rt=N rt_foreign=N
 *   rt_overrun=N raised=N stkflt=N stkflt_foreign=N cpu_ms=N user_ms=N
 * cpu_ms is the process's CPU time (what ITIMER_PROF and the CPU-clock
 * timer count), user_ms its user time (ITIMER_VIRTUAL's).
 * Usage: prog_host_timers SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define VALUE 4242

static _Atomic long prof, prof_foreign, vtalrm, vtalrm_foreign, rt, rt_foreign, rt_overrun, raised, stkflt,
    stkflt_foreign;
static _Atomic int stop;
static timer_t timer;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    atomic_fetch_add(si->si_code == SI_KERNEL ? &prof : &prof_foreign, 1);
}

static void on_vtalrm(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    atomic_fetch_add(si->si_code == SI_KERNEL ? &vtalrm : &vtalrm_foreign, 1);
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    if (si->si_code == SI_TIMER && si->si_value.sival_int == VALUE) {
        atomic_fetch_add(&rt, 1);
        atomic_fetch_add(&rt_overrun, timer_getoverrun(timer));
    } else {
        atomic_fetch_add(&rt_foreign, 1);
    }
}

static void on_stkflt(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    atomic_fetch_add(si->si_code == SI_TKILL && si->si_pid == getpid() ? &stkflt : &stkflt_foreign, 1);
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL)) {
        perror("sigaction");
        exit(1);
    }
}

static void install_all(void)
{
    install(SIGPROF, on_prof);
    install(SIGVTALRM, on_vtalrm);
    install(SIGRTMIN + 2, on_rt);
    install(SIGSTKFLT, on_stkflt);
}

static volatile double sink;

__attribute__((noinline)) static void burn(void)
{
    double x = 1;
    for (int i = 0; i < 20000; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

static void *worker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        burn();
    return NULL;
}

static long ms(struct timeval tv)
{
    return tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    install_all();
    struct itimerval it = {{0, 10000}, {0, 10000}};
    if (setitimer(ITIMER_PROF, &it, NULL) || setitimer(ITIMER_VIRTUAL, &it, NULL)) {
        perror("setitimer");
        return 1;
    }
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGRTMIN + 2;
    ev.sigev_value.sival_int = VALUE;
    struct itimerspec its = {{0, 10000000}, {0, 10000000}};
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &timer) || timer_settime(timer, 0, &its, NULL)) {
        perror("timer_create");
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    struct timespec next = start;
    do {
        while (1) { /* a "request": 20 ms of work on the main thread */
            burn();
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((now.tv_sec - next.tv_sec) * 1000000000L + (now.tv_nsec - next.tv_nsec) >= 20000000)
                break;
        }
        next = now;
        install_all();
        raise(SIGSTKFLT);
        raised++;
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    setitimer(ITIMER_VIRTUAL, &off, NULL);
    timer_delete(timer);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    struct timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    printf("prof=%ld prof_foreign=%ld vtalrm=%ld vtalrm_foreign=%ld rt=%ld rt_foreign=%ld rt_overrun=%ld "
           "raised=%ld stkflt=%ld stkflt_foreign=%ld cpu_ms=%ld user_ms=%ld\n",
           atomic_load(&prof), atomic_load(&prof_foreign), atomic_load(&vtalrm), atomic_load(&vtalrm_foreign),
           atomic_load(&rt), atomic_load(&rt_foreign), atomic_load(&rt_overrun),
           atomic_load(&raised), atomic_load(&stkflt), atomic_load(&stkflt_foreign),
           cpu.tv_sec * 1000 + cpu.tv_nsec / 1000000, ms(ru.ru_utime));
    fflush(stdout);
    return 0;
}
