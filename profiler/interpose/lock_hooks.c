/* lock_hooks.c: pthread locks and waits, interposed for the mutex and
 * block profiles.
 *
 * While both profiles are off, each hook is one load and a branch in front
 * of the real function. While on, an acquisition is timed only when it
 * must wait. A normal mutex (the common case) is acquired by the hook
 * itself with glibc's own fast path (one compare-and-swap, see
 * pthread_mutex_lock below), so a failed swap is exactly a contention, at
 * no extra atomic operation; other mutex kinds, rwlocks and semaphores are
 * tried first (one more atomic operation, only while profiling) and timed
 * when the try finds them busy. No contention goes unseen. Condition
 * variable waits and joins are always waits and always timed. Every result
 * is passed through untouched (robust mutexes' EOWNERDEAD, error-checking
 * mutexes' EDEADLK, timeouts); only successful acquisitions are recorded.
 * The real functions are found at start-up (pthread_cond_* in their
 * current symbol version: pp_next_cond_symbol).
 */
#ifndef PPROF_NO_HOOKS /* sanitizer builds: their runtime intercepts these */
#define _GNU_SOURCE
#include "arch/arch.h"
#include "contention/contention.h"
#include "base/base.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))
#define OFF() __builtin_expect(!atomic_load_explicit(&pp_contention_on, memory_order_relaxed), 1)

typedef int (*lock_fn)(pthread_mutex_t *);
typedef int (*rw_fn)(pthread_rwlock_t *);
typedef int (*cwait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*ctwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*sem_fn)(sem_t *);
typedef int (*semt_fn)(sem_t *, const struct timespec *);
typedef int (*join_fn)(pthread_t, void **);

static struct {
    lock_fn lock, trylock;
    rw_fn rdlock, wrlock, tryrdlock, trywrlock;
    cwait_fn cwait;
    ctwait_fn ctwait;
    sem_fn semwait, semtrywait;
    semt_fn semtwait;
    join_fn join;
} real;

static __thread int my_tid;

/* Not malloc-safe (dlsym may allocate): the constructor runs it. Before
 * then the lock paths use glibc's compat names (EARLY); only a condition,
 * semaphore or join wait made before the constructor resolves lazily. */
static void resolve(void)
{
    real.lock = (lock_fn)pp_next_symbol("pthread_mutex_lock", NULL);
    real.trylock = (lock_fn)pp_next_symbol("pthread_mutex_trylock", NULL);
    real.rdlock = (rw_fn)pp_next_symbol("pthread_rwlock_rdlock", NULL);
    real.wrlock = (rw_fn)pp_next_symbol("pthread_rwlock_wrlock", NULL);
    real.tryrdlock = (rw_fn)pp_next_symbol("pthread_rwlock_tryrdlock", NULL);
    real.trywrlock = (rw_fn)pp_next_symbol("pthread_rwlock_trywrlock", NULL);
    real.semtrywait = (sem_fn)pp_next_symbol("sem_trywait", NULL);
    real.cwait = (cwait_fn)pp_next_cond_symbol("pthread_cond_wait");
    real.ctwait = (ctwait_fn)pp_next_cond_symbol("pthread_cond_timedwait");
    real.semwait = (sem_fn)pp_next_symbol("sem_wait", NULL);
    real.semtwait = (semt_fn)pp_next_symbol("sem_timedwait", NULL);
    real.join = (join_fn)pp_next_symbol("pthread_join", NULL);
}

__attribute__((constructor(102))) static void init(void)
{
    resolve();
}

#define REAL(f) (__builtin_expect(real.f != NULL, 1) ? real.f : (resolve(), real.f))
/* Locks may be taken inside an allocator (jemalloc's) before the
 * constructor has run, where dlsym (which may allocate) must not be
 * called: glibc's own exported names serve until then. */
#define GLIBC_COMPAT(local, name) __asm__(".symver " #local "," #name "@" PP_ARCH_GLIBC_BASE)
extern int glibc_mutex_lock(pthread_mutex_t *);
extern int glibc_mutex_trylock(pthread_mutex_t *);
extern int glibc_rwlock_rdlock(pthread_rwlock_t *);
extern int glibc_rwlock_wrlock(pthread_rwlock_t *);
extern int glibc_rwlock_tryrdlock(pthread_rwlock_t *);
extern int glibc_rwlock_trywrlock(pthread_rwlock_t *);
GLIBC_COMPAT(glibc_mutex_lock, __pthread_mutex_lock);
GLIBC_COMPAT(glibc_mutex_trylock, __pthread_mutex_trylock);
GLIBC_COMPAT(glibc_rwlock_rdlock, __pthread_rwlock_rdlock);
GLIBC_COMPAT(glibc_rwlock_wrlock, __pthread_rwlock_wrlock);
GLIBC_COMPAT(glibc_rwlock_tryrdlock, __pthread_rwlock_tryrdlock);
GLIBC_COMPAT(glibc_rwlock_trywrlock, __pthread_rwlock_trywrlock);
#define EARLY(f, g) (__builtin_expect(real.f != NULL, 1) ? real.f : g)

/* malloc-safe */
static int tid(void)
{
    if (!my_tid)
        my_tid = (int)syscall(SYS_gettid);
    return my_tid;
}

/* Runs `call` (an int expression), timed: a wait of `kind` is recorded
 * for the hooked function's `caller` when it returns 0, or always when
 * `always` (a condition wait that timed out waited too). malloc-safe */
#define TIMED(kind, always, caller, call)                                                      \
    ({                                                                                         \
        int64_t t0_ = pp_contention_now();                                                     \
        int rc_ = (call);                                                                      \
        if (rc_ == 0 || (always))                                                              \
            pp_contention_event(pp_contention_now() - t0_, (kind), (caller));                  \
        rc_;                                                                                   \
    })

/* malloc-safe */
__attribute__((noinline)) static int timed_lock(pthread_mutex_t *m, uint64_t caller)
{
    return TIMED(PP_WAIT_LOCK, 0, caller, EARLY(lock, glibc_mutex_lock)(m));
}

/* A normal mutex (kind 0: no recursion, error checking, robustness,
 * priority protocol or elision) is taken here exactly as glibc's fast
 * path takes it: one compare-and-swap of the lock word from 0 to 1, then
 * the owner and user count glibc's unlock expects. When that fails the
 * mutex is contended, and the real lock (which waits) is timed. Other
 * kinds are tried first (an acquisition, or EOWNERDEAD for a robust one,
 * is passed through as it is); EBUSY means contended (or, for an
 * error-checking mutex, held by this thread: the real lock then answers
 * EDEADLK, which is not recorded). */
/* malloc-safe */
API int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (OFF())
        return EARLY(lock, glibc_mutex_lock)(m);
    if (m->__data.__kind == 0) {
        int expected = 0;
        if (__atomic_compare_exchange_n(&m->__data.__lock, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            m->__data.__owner = tid();
            ++m->__data.__nusers;
            return 0;
        }
        return timed_lock(m, CALLER);
    }
    int rc = EARLY(trylock, glibc_mutex_trylock)(m);
    if (rc != EBUSY)
        return rc;
    return timed_lock(m, CALLER);
}

/* rwlocks: tried first, timed when the try finds them busy. */
/* malloc-safe */
__attribute__((noinline)) static int timed_rw(rw_fn f, pthread_rwlock_t *l, uint64_t caller)
{
    return TIMED(PP_WAIT_LOCK, 0, caller, f(l));
}

/* A read or write lock: tried first while profiling, timed when busy.
 * malloc-safe */
static inline __attribute__((always_inline)) int rw_acquire(pthread_rwlock_t *l, rw_fn lock, rw_fn trylock,
                                                            uint64_t caller)
{
    if (OFF())
        return lock(l);
    int rc = trylock(l);
    return rc != EBUSY ? rc : timed_rw(lock, l, caller);
}

/* malloc-safe */
API int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return rw_acquire(l, EARLY(rdlock, glibc_rwlock_rdlock), EARLY(tryrdlock, glibc_rwlock_tryrdlock), CALLER);
}

/* malloc-safe */
API int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return rw_acquire(l, EARLY(wrlock, glibc_rwlock_wrlock), EARLY(trywrlock, glibc_rwlock_trywrlock), CALLER);
}

/* malloc-safe */
API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    if (OFF())
        return REAL(cwait)(c, m);
    return TIMED(PP_WAIT_OTHER, 1, CALLER, REAL(cwait)(c, m));
}

/* malloc-safe */
API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
    if (OFF())
        return REAL(ctwait)(c, m, abs);
    return TIMED(PP_WAIT_OTHER, 1, CALLER, REAL(ctwait)(c, m, abs));
}

/* Semaphores are tried first and timed when the try would block: 1 if
 * the try took it, 0 if it would block (errno as it was), -1 for another
 * error (errno set). malloc-safe */
static int sem_try(sem_t *s)
{
    int saved = errno;
    if (REAL(semtrywait)(s) == 0)
        return 1;
    if (errno != EAGAIN)
        return -1;
    errno = saved;
    return 0;
}

/* malloc-safe */
API int sem_wait(sem_t *s)
{
    if (OFF())
        return REAL(semwait)(s);
    int got = sem_try(s);
    if (got)
        return got > 0 ? 0 : -1;
    return TIMED(PP_WAIT_OTHER, 0, CALLER, REAL(semwait)(s));
}

/* malloc-safe */
API int sem_timedwait(sem_t *s, const struct timespec *abs)
{
    if (OFF())
        return REAL(semtwait)(s, abs);
    int got = sem_try(s);
    if (got)
        return got > 0 ? 0 : -1;
    return TIMED(PP_WAIT_OTHER, 0, CALLER, REAL(semtwait)(s, abs));
}

/* malloc-safe */
API int pthread_join(pthread_t t, void **ret)
{
    if (OFF())
        return REAL(join)(t, ret);
    return TIMED(PP_WAIT_OTHER, 0, CALLER, REAL(join)(t, ret));
}
#endif
