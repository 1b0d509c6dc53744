/* pace.c: when and how the wall sampler thread runs (sampler.c): the
 * random point of each period it wakes at, the short scheduler slice it
 * asks for, and the process CPU-time timer that makes reading the
 * process's clock cheap.
 */
#define _GNU_SOURCE
#include "wall.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A uniform draw in [0, 1) (xorshift64*; the sampler's own state). */
double pp_wall_uniform(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return (double)((*x * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* Asks the scheduler for a short slice (Linux 6.12 and later: a fair
 * thread with a shorter slice than the running one preempts it when it
 * wakes), so that a tick is taken when it is due rather than when a busy
 * CPU's current thread ends its slice. The thread's weight is unchanged;
 * older kernels ignore or refuse it, and the tick is then later on busy
 * machines. */
void pp_wall_short_slice(void)
{
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } attr = {.size = 48, .policy = SCHED_OTHER, .runtime = 100000};
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (errno == 0)
        attr.nice = nice;
    (void)syscall(SYS_sched_setattr, 0, &attr, 0);
}

/* Arms a process CPU-time timer that never fires (31 years of CPU; were it
 * to, its signal would stay pending on this thread, which blocks every
 * signal). While one is armed the kernel keeps the process's CPU time in a
 * running sum, and reading the process's clock costs the same whatever
 * the number of threads; without one, each read adds up every thread's
 * time (a fifth of the sampler's time with 1,000 threads: bench/RESULTS.md).
 * Returns whether it is armed. */
int pp_wall_process_timer(timer_t *t, int tid)
{
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGURG;
    ev._sigev_un._tid = tid;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, t) != 0)
        return 0;
    struct itimerspec it = {.it_value = {.tv_sec = 1000000000}};
    if (timer_settime(*t, 0, &it, NULL) == 0)
        return 1;
    timer_delete(*t);
    return 0;
}

