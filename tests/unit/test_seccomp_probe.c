/* test_seccomp_probe.c: a probe of the kernel's seccomp support is not
 * the process entering a sandbox.
 * test-labels: plain-only quick
 *
 * libseccomp (chronyd's -F 1, tor's Sandbox 1) first calls seccomp(2)
 * with strict mode and a flag, and with a filter and no program, to learn
 * what the kernel supports; Chromium probes with prctl(PR_SET_SECCOMP)
 * and no program. Those calls fail, and profiling must go on after them
 * (before, the first probe stopped it, and the reason said "strict mode").
 * A child that then installs a filter (one that allows everything) does
 * stop profiling first, with the reason "entered a seccomp filter".
 */
#define _GNU_SOURCE
#include "check.h"
#include "base/base.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

int main(void)
{
    errno = 0;
    CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 1, NULL) == -1 && errno == EINVAL);
    CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, NULL) == -1 && errno == EFAULT);
    CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0) == -1 && errno == EFAULT);
    const char *why = pp_sandboxed();
    CHECKF(why == NULL, "after three probes, profiling stopped: %s", why);

    pid_t pid = fork();
    if (pid == 0) {
        struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = {1, &allow};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
            _exit(2);
        const char *w = pp_sandboxed();
        _exit(w && !strcmp(w, "entered a seccomp filter") ? 0 : 1);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a real filter: status %d", status);
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}
