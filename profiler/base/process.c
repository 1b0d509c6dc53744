/* process.c: process-wide state of the core: a fork in progress, the
 * shutdown, narrow and exec hooks (see process.h and lock.h). */
#include "lock.h"
#include "error.h"
#include "own_labels.h"
#include "process.h"
#include "pprof.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

_Atomic int pp_fork_pending;

#define MAX_HOOKS 8
static void (*_Atomic hooks[MAX_HOOKS])(void);
static void (*_Atomic narrow_hooks[MAX_HOOKS])(void);
static void (*_Atomic no_threads_hooks[MAX_HOOKS])(void);
static _Atomic int shut_down;

static int hook_add(void (*_Atomic *list)(void), void (*fn)(void))
{
    for (int i = 0; i < MAX_HOOKS; i++) {
        void (*expected)(void) = NULL;
        if (atomic_compare_exchange_strong(&list[i], &expected, fn) || expected == fn)
            return 0;
    }
    return -1;
}

int pp_shutdown_hook_add(void (*fn)(void))
{
    return hook_add(hooks, fn);
}

static void hooks_run(void (*_Atomic *list)(void))
{
    for (int i = 0; i < MAX_HOOKS; i++) {
        void (*fn)(void) = atomic_load(&list[i]);
        if (fn)
            fn();
    }
}

int pp_narrow_hook_add(void (*fn)(void))
{
    return hook_add(narrow_hooks, fn);
}

void pp_narrow_run(void)
{
    hooks_run(narrow_hooks);
}

int pp_no_threads_hook_add(void (*fn)(void))
{
    return hook_add(no_threads_hooks, fn);
}

void pp_no_threads_run(void)
{
    hooks_run(no_threads_hooks);
}

static void (*_Atomic exec_hook)(const char *);

void pp_exec_hook_set(void (*fn)(const char *why))
{
    atomic_store(&exec_hook, fn);
}

void pp_exec_note(const char *why)
{
    void (*fn)(const char *) = atomic_load(&exec_hook);
    if (fn)
        fn(why);
}

void pp_shutdown_run(void (*first)(void))
{
    if (atomic_exchange(&shut_down, 1))
        return;
    if (first)
        first();
    for (int i = 0; i < MAX_HOOKS; i++) {
        void (*fn)(void) = atomic_load(&hooks[i]);
        if (fn)
            fn();
    }
}

static _Atomic int64_t start_mono, start_real;

int64_t pp_now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int pp_thread_off_cpu(int tid, uint64_t *ns)
{
    struct timespec a, b;
    clockid_t c = pp_thread_cpu_clock(tid);
    int ok = clock_gettime(c, &a) == 0 && clock_gettime(c, &b) == 0;
    if (ns)
        *ns = ok ? (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec : 0;
    return ok && a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

void pp_mark_start(void)
{
    atomic_store(&start_real, pp_now_ns(CLOCK_REALTIME));
    atomic_store(&start_mono, pp_now_ns(CLOCK_MONOTONIC));
}

int64_t pp_start_ns(int realtime)
{
    int64_t t = atomic_load(realtime ? &start_real : &start_mono);
    return t ? t : pp_now_ns(realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC);
}

static const char *_Atomic sandbox_why;

/* async-signal-safe */
void pp_sandbox_set(const char *why)
{
    const char *none = NULL;
    atomic_compare_exchange_strong(&sandbox_why, &none, why);
}

/* async-signal-safe */
const char *pp_sandboxed(void)
{
    return atomic_load_explicit(&sandbox_why, memory_order_acquire);
}

int pp_shutting_down(void)
{
    return atomic_load(&shut_down);
}

__thread int pp_sigmask_exact_depth;

int pp_sigmask_exact(int how, const sigset_t *set, sigset_t *old)
{
    pp_sigmask_exact_depth++;
    int rc = pthread_sigmask(how, set, old);
    pp_sigmask_exact_depth--;
    return rc;
}

static _Atomic int profiling_signal = PP_DEFAULT_SIGNAL;

/* async-signal-safe */
int pp_profiling_signal(void)
{
    return atomic_load(&profiling_signal);
}

void pp_profiling_signal_set(int sig)
{
    atomic_store(&profiling_signal, sig);
}

void pp_cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

/* async-signal-safe */
void pp_own_thread_mask(sigset_t *set)
{
    static const int open[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    sigfillset(set);
    sigdelset(set, pp_profiling_signal());
    for (size_t i = 0; i < sizeof open / sizeof open[0]; i++)
        sigdelset(set, open[i]);
}

static void (*_Atomic own_thread_hook)(void);

void pp_own_thread_hook_set(void (*fn)(void))
{
    atomic_store(&own_thread_hook, fn);
}

void pp_own_thread_started(void)
{
    void (*fn)(void) = atomic_load(&own_thread_hook);
    if (fn)
        fn();
}

static _Atomic int isolated;

/* async-signal-safe */
int pp_process_isolated(void)
{
    return atomic_load(&isolated);
}

/* async-signal-safe */
void pp_process_isolated_set(void)
{
    atomic_store(&isolated, 1);
}

#define MAX_OWN_OBJECTS 8
static const char *_Atomic own_objects[MAX_OWN_OBJECTS];

void pp_own_object_add(const char *soname)
{
    for (int i = 0; i < MAX_OWN_OBJECTS; i++) {
        const char *none = NULL, *had = atomic_load(&own_objects[i]);
        if (had && strcmp(had, soname) == 0)
            return;
        if (!had && atomic_compare_exchange_strong(&own_objects[i], &none, soname))
            return;
    }
}

const char *pp_own_object(int i)
{
    return i >= 0 && i < MAX_OWN_OBJECTS ? atomic_load(&own_objects[i]) : NULL;
}

/* async-signal-safe */
int pp_capable(int cap)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (syscall(SYS_capget, &h, d) != 0)
        return 1;
    return (d[cap / 32].effective >> (cap % 32)) & 1;
}

#define MAX_ATFORK 16
static struct {
    void (*fn[3])(void); /* prepare, parent, child */
} atfork[MAX_ATFORK];
static _Atomic int natfork;

int pp_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    int i = atomic_fetch_add(&natfork, 1);
    if (i >= MAX_ATFORK) {
        atomic_store(&natfork, MAX_ATFORK);
        return -1;
    }
    atfork[i].fn[PP_FORK_PREPARE] = prepare;
    atfork[i].fn[PP_FORK_PARENT] = parent;
    atfork[i].fn[PP_FORK_CHILD] = child;
    return pthread_atfork(prepare, parent, child) == 0 ? 0 : -1;
}

void pp_atfork_run(int stage)
{
    int n = atomic_load(&natfork);
    n = n < MAX_ATFORK ? n : MAX_ATFORK;
    for (int k = 0; k < n; k++) {
        int i = stage == PP_FORK_PREPARE ? n - 1 - k : k;
        if (atfork[i].fn[stage])
            atfork[i].fn[stage]();
    }
}

/* What a spawned thread runs. */
typedef struct spawned {
    void *(*fn)(void *);
    void *arg;
} spawned;

static void *spawned_main(void *p)
{
    spawned s = *(spawned *)p;
    free(p); /* the own heap's, as the thread's allocations are */
    pp_own_thread_started();
    return s.fn(s.arg);
}

int pp_spawn_detached(void *(*fn)(void *), void *arg, pthread_t *out)
{
    pthread_attr_t attr;
    sigset_t all, old;
    pp_own_thread_mask(&all);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pp_sigmask_exact(SIG_SETMASK, &all, &old);
    pthread_t t;
    pp_own_heap_enter(); /* the thread is the profiler's: its allocations too */
    pprof_labels *prev = pp_own_labels_begin(); /* and its samples: wall and CPU profiles leave it out */
    spawned *s = malloc(sizeof *s);
    int rc = s ? 0 : ENOMEM;
    if (s) {
        *s = (spawned){fn, arg};
        rc = pthread_create(&t, &attr, spawned_main, s);
        if (rc)
            free(s);
    }
    pp_own_labels_end(prev);
    pp_own_heap_leave();
    pp_sigmask_exact(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (!rc && out)
        *out = t;
    if (rc == EAGAIN)
        return pp_error_detail(PPROF_ESYS, "a thread of the profiler's could not start: the process may start no "
                                           "more threads (its RLIMIT_NPROC, or the system's limit)");
    return rc ? pp_error_detail(PPROF_ESYS, "a thread of the profiler's could not start (error %d)", rc) : 0;
}

static const pp_own_heap_ops *_Atomic own_heap;

void pp_own_heap_register(const pp_own_heap_ops *ops)
{
    atomic_store(&own_heap, ops);
}

void pp_own_heap_enter(void)
{
    const pp_own_heap_ops *o = atomic_load(&own_heap);
    if (o)
        o->enter();
}

void pp_own_heap_leave(void)
{
    const pp_own_heap_ops *o = atomic_load(&own_heap);
    if (o)
        o->leave();
}

int pp_own_work(void)
{
    const pp_own_heap_ops *o = atomic_load(&own_heap);
    return o ? o->active() : 0;
}

static _Atomic pp_gzip_encoder gzip_encoder;

void pp_gzip_encoder_register(pp_gzip_encoder fn)
{
    atomic_store(&gzip_encoder, fn);
}

int pp_write_gzip_profile(const struct pprof_profile *p, int fd)
{
    pp_gzip_encoder fn = atomic_load(&gzip_encoder);
    return fn ? fn(p, fd) : pp_error_detail(PPROF_ENOTSUP, "this library has no profile encoder");
}
