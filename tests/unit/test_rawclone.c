/* test_rawclone.c: a process made by clone through syscall(), as vsftpd
 * makes its sessions (in new namespaces), starts over as a forked child.
 * test-labels: plain-only quick
 *
 * - While another thread takes and gives back the profiler's own heap's
 *   lock without pause, 200 children made so each allocate from that heap
 *   and exit: none hangs (the fork handlers run around the clone, so no
 *   child starts with the lock held by a thread it does not have).
 * - A child made so does not serve (the parent's server is not its) and
 *   can start a server of its own.
 * Half the children are made with clone, half with clone3.
 */
#define _GNU_SOURCE
#include "check.h"
#include "heap/heap.h"
#include "pprof.h"

#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

static atomic_int stop;

static void *churn(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        void *p = pp_own_malloc(16, 64);
        pp_own_free(p);
    }
    return NULL;
}

/* Waits up to 5 s for pid; its exit status, or -1 when it hung (killed). */
static int reap(pid_t pid)
{
    for (int i = 0; i < 500; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static long raw_clone(int use_clone3)
{
    if (!use_clone3)
        return syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
    struct clone_args ca = {.exit_signal = SIGCHLD};
    return syscall(SYS_clone3, &ca, sizeof ca);
}

int main(void)
{
    unsetenv("LIBPPROF_ADDR");
    pprof_server_config c = {.addr = "127.0.0.1:0", .no_tree = 1};
    CHECK(pprof_server_start(&c) == 0);
    CHECK(pprof_server_port() > 0);

    pthread_t t;
    CHECK(pthread_create(&t, NULL, churn, NULL) == 0);
    int hung = 0, failed = 0;
    for (int i = 0; i < 200; i++) {
        long pid = raw_clone(i % 2);
        if (pid == 0) {
            void *p = pp_own_malloc(16, 4096);
            pp_own_free(p);
            _exit(p ? 0 : 1);
        }
        if (pid < 0) {
            failed++;
            continue;
        }
        int rc = reap((pid_t)pid);
        hung += rc == -1;
        failed += rc > 0;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    CHECKF(hung == 0 && failed == 0, "of 200 children: %d hung, %d failed", hung, failed);

    for (int use3 = 0; use3 < 2; use3++) {
        long pid = raw_clone(use3);
        if (pid == 0) {
            int ok = pprof_server_port() == PPROF_ESTATE;
            pprof_server_config mine = {.addr = "127.0.0.1:0", .no_tree = 1};
            ok = ok && pprof_server_start(&mine) == 0 && pprof_server_port() > 0 && pprof_server_stop() == 0;
            _exit(ok ? 0 : 1);
        }
        CHECKF(pid > 0 && reap((pid_t)pid) == 0, "clone%s: the child does not serve, and can", use3 ? "3" : "");
    }
    CHECK(pprof_server_port() > 0); /* the parent still serves */
    CHECK(pprof_server_stop() == 0);
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}
