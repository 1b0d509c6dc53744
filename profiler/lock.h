/* lock.h: the profiler's internal mutex, built on futex, not pthread.
 *
 * The lock profiler interposes pthread mutexes, so the profiler's own locks
 * must not be pthread mutexes. These locks are never taken in a signal
 * handler or inside malloc hooks' fast paths; they guard the thread
 * registry, the recorder list and similar slow-path state.
 */
#ifndef PP_LOCK_H
#define PP_LOCK_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct pp_mutex {
    _Atomic int state; /* 0 free, 1 locked, 2 locked with waiters */
} pp_mutex;

#define PP_MUTEX_INIT {0}

static inline void pp_mutex_lock(pp_mutex *m)
{
    int c = 0;
    if (atomic_compare_exchange_strong(&m->state, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(&m->state, 2);
    while (c != 0) {
        syscall(SYS_futex, &m->state, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange(&m->state, 2);
    }
}

static inline void pp_mutex_unlock(pp_mutex *m)
{
    if (atomic_exchange(&m->state, 0) == 2)
        syscall(SYS_futex, &m->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#endif
