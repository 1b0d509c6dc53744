/* prog_stripped.c: a CPU burner for the debuginfod test
 * (test_debuginfod.sh), which runs a copy of it stripped of everything but
 * its dynamic symbol table, its debug file served by a debuginfod. Its CPU
 * goes to static functions found only in .symtab and DWARF:
 * hidden_round calls hidden_sift_rows and hidden_weave_cols (never
 * inlined), and hidden_inlined_mix is inlined into hidden_weave_cols. The
 * test reads the line numbers of the marked lines below.
 *
 *   prog_stripped [SECONDS]   computes for SECONDS (0 or none: until SIGTERM)
 *
 * Each round of its loop also allocates and frees and walks the loaded
 * objects (dl_iterate_phdr): locks the profiler could hold while it
 * fetches. It times its rounds: on SIGUSR1, and before it exits, it prints
 * "max_gap_us=N rounds=M", the longest time between two rounds' starts
 * since the previous report (a round takes about 30 us). Prints
 * "pid=PID" and "ready" first; SIGTERM or SIGINT end it (status 0).
 *
 * With STRIPPED_ROOT=DIR in its environment (run as root), SIGUSR2 confines
 * it as a daemon confines itself after start: chroot into DIR, chdir "/",
 * then setgroups, setgid and setuid to 65534; it prints "confined uid=U"
 * (or "confine failed: ERROR").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t report_asked, stop_asked, confine_asked;
static volatile double sink;

static void on_usr1(int sig)
{
    (void)sig;
    report_asked = 1;
}

static void on_usr2(int sig)
{
    (void)sig;
    confine_asked = 1;
}

/* chroot into STRIPPED_ROOT and become user 65534 */
static void confine(void)
{
    const char *root = getenv("STRIPPED_ROOT");
    if (!root || chroot(root) != 0 || chdir("/") != 0 || setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
        setuid(65534) != 0)
        printf("confine failed: %s\n", root ? strerror(errno) : "no STRIPPED_ROOT");
    else
        printf("confined uid=%d\n", (int)getuid());
    fflush(stdout);
}

static void on_stop(int sig)
{
    (void)sig;
    stop_asked = 1;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* @inline-begin */
static inline __attribute__((always_inline)) double hidden_inlined_mix(double x)
{
    for (int i = 0; i < 3000; i++)
        x = x * 1.0000003 + 0.25 / (x + i);
    return x;
}
/* @inline-end */

__attribute__((noinline)) static double hidden_sift_rows(double x)
{
    for (int i = 0; i < 2000; i++)
        x = x * 0.9999997 + 0.5 / (x + i + 1);
    return x;
}

__attribute__((noinline)) static double hidden_weave_cols(double x)
{
    x = hidden_inlined_mix(x); /* @call-site */
    sink = x;
    return x;
}

static int count_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info;
    (void)size;
    ++*(int *)data;
    return 0;
}

__attribute__((noinline)) static void hidden_round(unsigned n)
{
    double x = 1.0 + n % 7;
    x = hidden_sift_rows(x);
    x = hidden_weave_cols(x);
    char *p = malloc(64 + n % 4096);
    if (p) {
        memset(p, (int)n, 64);
        sink += p[n % 64];
        free(p);
    }
    int objects = 0;
    dl_iterate_phdr(count_object, &objects);
    sink += x + objects;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    printf("pid=%d\nready\n", (int)getpid());
    fflush(stdout);
    double start = now_us(), last = start, max_gap = 0;
    unsigned long rounds = 0;
    for (;;) {
        double t = now_us();
        if (t - last > max_gap)
            max_gap = t - last;
        last = t;
        if (report_asked || stop_asked || (seconds > 0 && t - start >= seconds * 1e6)) {
            printf("max_gap_us=%.0f rounds=%lu\n", max_gap, rounds);
            fflush(stdout);
            if (!report_asked)
                break;
            report_asked = 0;
            max_gap = 0;
            rounds = 0;
            last = now_us();
        }
        if (confine_asked) {
            confine_asked = 0;
            confine();
        }
        hidden_round((unsigned)rounds++);
    }
    return 0;
}
