/* bench.h: helpers the benchmark drivers share: sorting and medians of
 * their figures, a thread that burns CPU (a busy host), and running one
 * worker as a child process (this program again, /proc/self/exe) to read
 * the line it prints. */
#ifndef PP_BENCH_H
#define PP_BENCH_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC now, in nanoseconds. */
static inline double bench_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v[0..n) in increasing order. */
static inline void bench_sort(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
}

/* The median of v[0..n) (sorted in place): the middle value, or the mean of
 * the two middle values when n is even. NAN-free input; n >= 1. */
static inline double bench_median(double *v, int n)
{
    bench_sort(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A gate that threads wait at (on a condition variable) until it opens:
 * idle threads. */
typedef struct bench_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
} bench_gate;
#define BENCH_GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}

/* A thread body that waits at the bench_gate `gate` until it opens. */
static inline void *bench_wait_gate(void *gate)
{
    bench_gate *g = gate;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static inline void bench_open_gate(bench_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* A thread body that burns CPU in floating-point work until *(_Atomic int *)stop
 * is set. */
static inline void *bench_burn(void *stop)
{
    double x = 1;
    while (!atomic_load_explicit((_Atomic int *)stop, memory_order_relaxed))
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 1e-9;
    __asm__ volatile("" : : "x"(x)); /* the work is not optimized away */
    return NULL;
}

/* A bench_run_self setup: the child runs with the library at path `lib`
 * preloaded, or without libpprof when lib is NULL; it serves nothing. */
static inline void bench_preload(void *lib)
{
    if (lib)
        setenv("LD_PRELOAD", lib, 1);
    else
        unsetenv("LD_PRELOAD");
    unsetenv("LIBPPROF_ADDR");
}

/* Runs /proc/self/exe with argv in a child process and waits for it. In
 * the child, setup(arg) runs first when setup is not NULL (to set its
 * environment), its stdout goes to a pipe and its stderr to err_fd when
 * err_fd >= 0. What the child writes to stdout is read until it closes it:
 * the first outsz - 1 bytes into out, NUL-terminated, the rest dropped.
 * Returns 0 when the child exited with status 0, else -1. */
static inline int bench_run_self(char *const argv[], void (*setup)(void *), void *arg, int err_fd,
                                 char *out, size_t outsz)
{
    int pfd[2];
    if (pipe(pfd))
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        if (err_fd >= 0) {
            dup2(err_fd, 2);
            if (err_fd != 2)
                close(err_fd);
        }
        if (setup)
            setup(arg);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t len = 0;
    ssize_t k;
    char drain[256];
    while ((k = read(pfd[0], len < outsz - 1 ? out + len : drain,
                     len < outsz - 1 ? outsz - 1 - len : sizeof drain)) > 0)
        if (len < outsz - 1)
            len += (size_t)k;
    out[len] = 0;
    close(pfd[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
#endif
