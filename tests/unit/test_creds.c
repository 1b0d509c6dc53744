/* test_creds.c: the profiler's threads take the caller's capabilities
 * before a setuid-family call even when the request meets a profiling
 * signal already pending on the thread, and an answer that comes after
 * the caller stopped waiting changes nothing (threads/creds.c); with a
 * real-time profiling signal (a second run of itself) a request is
 * queued once, not again every 2 ms. Needs root (capabilities to
 * change); skipped otherwise.
 * test-labels: plain-only quick
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "signals/signals.h"
#include "threads/threads.h"
#include "check.h"
#include "pprof.h"

#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#define UNCLAIMED 0x7e57 /* a queued value no user of the signal takes */

static _Atomic int tid, stage;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static int wait_stage(int want)
{
    for (int i = 0; i < 5000 && atomic_load(&stage) < want; i++)
        sleep_ms(1);
    return atomic_load(&stage) >= want;
}

static int caps_of(int t, struct __user_cap_data_struct caps[2])
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, t};
    return (int)syscall(SYS_capget, &h, caps);
}

static int has_chown(int t)
{
    struct __user_cap_data_struct caps[2];
    return caps_of(t, caps) == 0 && (caps[0].effective & (1u << CAP_CHOWN));
}

/* A thread of the profiler's: with the profiling signal blocked, a
 * signal of that kind queued to itself stays pending (stage 1), so the
 * kernel drops a request sent meanwhile; opens the signal after `hold_ms`
 * (stage 2), then idles until stage 3. */
static void *pending_first(void *arg)
{
    int hold_ms = (int)(intptr_t)arg;
    sigset_t old;
    pp_signal_block(&old);
    atomic_store(&tid, (int)syscall(SYS_gettid));
    pp_signal_queue(atomic_load(&tid), UNCLAIMED);
    atomic_store(&stage, 1);
    sleep_ms(hold_ms);
    pp_sigmask_exact(SIG_SETMASK, &old, NULL);
    atomic_store(&stage, 2);
    while (atomic_load(&stage) < 3)
        sleep_ms(1);
    return NULL;
}

/* A thread of the profiler's without CAP_CHOWN in its effective set that
 * keeps the profiling signal blocked past the caller's wait (stage 1),
 * then opens it (stage 2) and idles until stage 3. */
static void *late(void *arg)
{
    (void)arg;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    caps_of(0, caps);
    caps[0].effective &= ~(1u << CAP_CHOWN);
    syscall(SYS_capset, &h, caps); /* past the interposed capset: no match */
    sigset_t old;
    pp_signal_block(&old);
    atomic_store(&tid, (int)syscall(SYS_gettid));
    atomic_store(&stage, 1);
    while (atomic_load(&stage) < 2)
        sleep_ms(1);
    pp_sigmask_exact(SIG_SETMASK, &old, NULL); /* the request, late */
    sleep_ms(50);
    atomic_store(&stage, 3);
    while (atomic_load(&stage) < 4)
        sleep_ms(1);
    return NULL;
}

/* The signals queued and not yet taken for this process's real user
 * (SigQ: every process of that user counts). */
static int queued(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "SigQ: %d/", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* A thread of the profiler's that keeps the signal blocked past the
 * caller's wait: it does not count as matched, and the answer it takes
 * afterwards changes nothing. With a real-time profiling signal, which is
 * queued every time, the request was sent once: the user's queued signals
 * grew by `most` at most while the thread blocked them (by about 500, a
 * request every 2 ms for a second, when every copy was queued). */
static void late_case(int most)
{
    atomic_store(&stage, 0);
    CHECK(pp_spawn_detached(late, NULL, NULL) == 0);
    CHECK(wait_stage(1));
    int t = atomic_load(&tid);
    CHECK(!has_chown(t) && has_chown(0));
    int q0 = queued();
    CHECKF(pp_threads_creds_match() > 0, "the thread that blocks the signal counted as matched");
    int q = queued() - q0;
    CHECKF(most < 0 || (q0 >= 0 && q <= most), "%d more signals queued while the thread blocks them (%d at most)", q,
           most);
    atomic_store(&stage, 2);
    CHECK(wait_stage(3));
    CHECKF(!has_chown(t), "the late answer took the state of a request no one waited for");
    atomic_store(&stage, 4);
}

int main(int argc, char **argv)
{
    if (geteuid() != 0 || !has_chown(0)) {
        printf("test_creds: skipped (needs root with CAP_CHOWN)\n");
        return 0;
    }
    pp_threads_init();
    if (argc > 1 && !strcmp(argv[1], "rt")) { /* run again with a real-time profiling signal */
        CHECK(pprof_cpu_set_signal(SIGRTMIN + 2) == 0);
        CHECK(pp_signal_install() == 0);
        late_case(20);
        return check_summary("test_creds rt");
    }
    CHECK(pp_signal_install() == 0);

    /* A request that meets a pending profiling signal is sent again. */
    atomic_store(&stage, 0);
    CHECK(pp_spawn_detached(pending_first, (void *)(intptr_t)100, NULL) == 0);
    CHECK(wait_stage(1));
    int own[8], n = pp_threads_list_own(own, 8), listed = 0;
    for (int i = 0; i < n; i++)
        listed |= own[i] == atomic_load(&tid);
    CHECKF(listed, "the thread of the profiler's (%d) is not among the %d listed", atomic_load(&tid), n);
    CHECKF(pp_threads_creds_match() == 0, "a thread did not answer: its request was lost");
    atomic_store(&stage, 3);
    sleep_ms(20);

    late_case(-1);

    pid_t child = fork();
    if (child == 0) {
        execl("/proc/self/exe", argv[0], "rt", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the run with a real-time signal failed (%d)", status);

    return check_summary("test_creds");
}
