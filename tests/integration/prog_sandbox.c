/* prog_sandbox.c: children that sandbox themselves, as sshd's pre-auth
 * child does.
 *
 * It knows nothing of libpprof (test_sandbox.sh preloads it). The parent
 * forks, every 0.5 s for SECONDS, a child that lowers RLIMIT_NOFILE to 0
 * and then narrows what it may do: a seccomp filter (prctl, with no new
 * privileges) that allows only the calls it makes (read, write,
 * clock_nanosleep, nanosleep, exit_group, exit, rt_sigreturn) and kills
 * the process on any other, or, every other child, seccomp strict mode
 * through syscall(SYS_seccomp) (read, write, exit, rt_sigreturn). The
 * child then alternates 20 ms of computing and 10 ms of sleep for 1.5 s
 * (the strict child computes about as long, with no clock: strict mode
 * turns the TSC off) and exits 0. The parent computes too.
 * The parent prints "child PID filter|strict" when it forks one, "ready
 * pid=PID" once, and at the end "children=N ok=N killed=N" (killed: ended
 * by a signal, SIGSYS when a filter refused a call).
 * Usage: prog_sandbox SECONDS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

static volatile double sink;

__attribute__((noinline)) static void sandboxed_compute(double ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0); /* the vDSO: no system call */
    double x = 1;
    do {
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
    sink = x;
}

__attribute__((noinline)) static void strict_compute(void)
{
    double x = 1;
    for (long i = 0; i < 300000000; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static int filter(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read),
        ALLOW(SYS_write),
        ALLOW(SYS_clock_nanosleep),
#ifdef SYS_nanosleep
        ALLOW(SYS_nanosleep),
#endif
        ALLOW(SYS_exit_group),
        ALLOW(SYS_exit),
        ALLOW(SYS_rt_sigreturn),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void child(int strict)
{
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_NOFILE, &none);
    if (strict) {
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 0, NULL))
            _exit(3);
        strict_compute(); /* strict mode turns the TSC off: no clock reads */
        syscall(SYS_exit, 0); /* exit_group is not allowed in strict mode */
    }
    if (filter())
        _exit(3);
    for (int i = 0; i < 50; i++) {
        sandboxed_compute(20);
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    _exit(0);
}

__attribute__((noinline)) static void parent_compute(double ms)
{
    sandboxed_compute(ms);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    int children = 0, ok = 0, killed = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        int strict = children % 2;
        pid_t pid = fork();
        if (pid == 0)
            child(strict);
        if (pid > 0) {
            children++;
            printf("child %d %s\n", pid, strict ? "strict" : "filter");
            fflush(stdout);
        }
        parent_compute(500);
        int st;
        pid_t done;
        while ((done = waitpid(-1, &st, WNOHANG)) > 0) {
            ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
            killed += WIFSIGNALED(st);
            if (!WIFEXITED(st) || WEXITSTATUS(st))
                printf("child %d ended: %s %d\n", done, WIFSIGNALED(st) ? "signal" : "status",
                       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    int st;
    pid_t done;
    while ((done = wait(&st)) > 0) {
        ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
        killed += WIFSIGNALED(st);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            printf("child %d ended: %s %d\n", done, WIFSIGNALED(st) ? "signal" : "status",
                   WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    printf("children=%d ok=%d killed=%d\n", children, ok, killed);
    fflush(stdout);
    return 0;
}
