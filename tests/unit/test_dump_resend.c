/* test_dump_resend.c: a thread dump reaches a running thread whose
 * profiling signal was already pending when the dump asked (the kernel
 * drops the request then): the request goes again until the thread
 * answers, and its stack is the exact one (threads/thread_dump.c).
 * test-labels: plain-only timing
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "signals/signals.h"
#include "threads/threads.h"
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#define UNCLAIMED 0x7e57 /* a queued value no user of the signal takes */
#define HOLD_MS 30       /* well within the dump's 100 ms for a thread */

static _Atomic int tid, stage;

/* Runs with the profiling signal blocked and one of its kind pending
 * (stage 1), opens it HOLD_MS later, and runs on until stage 2. */
static void *spinner(void *arg)
{
    (void)arg;
    sigset_t old;
    pp_signal_block(&old);
    atomic_store(&tid, (int)syscall(SYS_gettid));
    pp_signal_queue(atomic_load(&tid), UNCLAIMED);
    atomic_store(&stage, 1);
    int64_t open_at = pp_now_ns(CLOCK_MONOTONIC) + HOLD_MS * 1000000ll;
    while (pp_now_ns(CLOCK_MONOTONIC) < open_at)
        ;
    pp_sigmask_exact(SIG_SETMASK, &old, NULL);
    while (atomic_load(&stage) < 2)
        ;
    return NULL;
}

int main(void)
{
    pp_threads_init();
    CHECK(pp_signal_install() == 0);
    for (int round = 0; round < 3; round++) {
        atomic_store(&stage, 0);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, spinner, NULL) == 0);
        while (atomic_load(&stage) < 1)
            ;
        pp_thread_stack *st = NULL;
        size_t n = 0;
        CHECK(pp_thread_dump(&st, &n) == 0);
        int how = 0;
        for (size_t i = 0; i < n; i++)
            if (st[i].tid == atomic_load(&tid))
                how = st[i].how;
        CHECKF(how == PP_DUMP_SIGNAL, "round %d: the thread's stack came as %d, not by signal (%d)", round, how,
               PP_DUMP_SIGNAL);
        pp_thread_dump_free(st, n);
        atomic_store(&stage, 2);
        pthread_join(t, NULL);
    }
    return check_summary("test_dump_resend");
}
