/* lock.h: the profiler's internal mutex, built on futex, not pthread.
 *
 * The lock profiler interposes pthread mutexes, so the profiler's own locks
 * must not be pthread mutexes. These locks are never taken in a signal
 * handler or inside malloc hooks' fast paths; they guard the thread
 * registry, the recorder list and similar slow-path state.
 *
 * Fork: the profiler's prepare handler takes its locks so the child gets
 * consistent tables, and holds them while the other libraries' prepare
 * handlers run, which may wait for the program's own mutexes. A thread
 * holding such a mutex must then never wait for a profiler lock, or the
 * fork deadlocks. So the locks that hooks take (malloc, pthread locks) are
 * taken with pp_mutex_lock_hook: while a fork is under way it gives up
 * instead of waiting, and the hook drops its sample or defers its update
 * (heap frees). Waiters sleep at most 1 ms between looks at the fork flag.
 */
#ifndef PP_LOCK_H
#define PP_LOCK_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
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
        syscall(SYS_futex, &m->state, FUTEX_WAIT_PRIVATE, 2, (void *)NULL, (void *)NULL, 0);
        c = atomic_exchange(&m->state, 2);
    }
}

static inline void pp_mutex_unlock(pp_mutex *m)
{
    if (atomic_exchange(&m->state, 0) == 2)
        syscall(SYS_futex, &m->state, FUTEX_WAKE_PRIVATE, 1, (void *)NULL, (void *)NULL, 0);
}

/* Whether m is held, by this thread or another: for PP_ASSERT in the
 * functions that run under a lock. async-signal-safe */
static inline int pp_mutex_held(pp_mutex *m)
{
    return atomic_load_explicit(&m->state, memory_order_relaxed) != 0;
}

/* Nonzero from the profiler's fork prepare handler until its parent or
 * child handler has released everything (lifecycle.c). */
extern _Atomic int pp_fork_pending;

/* Takes m and returns 1, or returns 0 without it when m is held while a
 * fork is under way (see the top of this file). malloc-safe */
static inline int pp_mutex_lock_hook(pp_mutex *m)
{
    int c = 0;
    if (atomic_compare_exchange_strong(&m->state, &c, 1))
        return 1;
    for (;;) {
        if (atomic_exchange(&m->state, 2) == 0)
            return 1; /* taken; marked contended, which costs at most a spare wake */
        if (atomic_load(&pp_fork_pending))
            return 0;
        struct timespec ms = {0, 1000000};
        syscall(SYS_futex, &m->state, FUTEX_WAIT_PRIVATE, 2, &ms, (void *)NULL, 0);
    }
}

#endif
