/* threads.c: thread creation and exit tracking, and the thread registry.
 *
 * interpose/ wraps pthread_create so every new thread runs a short
 * prologue (pp_threads_trampoline) before its start routine: it arms its own CPU timer if profiling is on
 * (no thread has to register itself) and takes its creator's label set.
 * A thread-specific key's destructor runs at thread exit, including
 * pthread_exit and cancellation, and deletes the thread's timer. Threads
 * created some other way (raw clone) are found by the collector's rescan of
 * /proc/self/task.
 *
 * The registry keeps, per live thread that started through the hook (and
 * the main thread), the stack that created it (threadcreate) and the
 * addresses of its current-labels and current-trace-context slots (thread
 * dumps and the wall sampler read them for threads they do not interrupt). Slots are keyed by tid; a starting thread takes
 * over a stale slot of its tid.
 */
#define _GNU_SOURCE
#include "threads.h"
#include "cpu/cpu.h"
#include "labels/labels.h"
#include "model/model.h"
#include "unwind/unwind.h"

#include "base/base.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct start {
    void *(*fn)(void *);
    void *arg;
    pprof_labels *labels; /* the creator's set, inherited */
    pp_trace_snap trace;  /* the creator's span, inherited */
    int own;              /* made by the profiler's own work: its allocations are the profiler's */
    int ncreate;
    uint64_t create[PP_CREATE_FRAMES + 1];
};

static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static pp_mutex reg_lock = PP_MUTEX_INIT;
static pp_thread_entry registry[PP_MAX_REGISTERED];
static int reg_high; /* slots in use are below this */

static __thread int registered; /* the calling thread has an entry (or the registry was full) */

/* Registers the calling thread (tid, labels and trace slots, creation stack). */
static void register_self(const uint64_t *create, int ncreate, int own)
{
    registered = 1;
    int tid = (int)syscall(SYS_gettid), free_slot = -1;
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high; i++) {
        if (registry[i].tid == tid || (registry[i].tid == 0 && free_slot < 0))
            free_slot = i;
        if (registry[i].tid == tid)
            break;
    }
    if (free_slot < 0 && reg_high < PP_MAX_REGISTERED)
        free_slot = reg_high++;
    if (free_slot >= 0) {
        pp_thread_entry *e = &registry[free_slot];
        e->tid = tid;
        e->labels_slot = pp_labels_slot();
        e->trace_slot = pp_trace_slot();
        e->ncreate = ncreate;
        e->own = own;
        e->stack_lo = e->stack_hi = 0;
        if (ncreate)
            memcpy(e->create, create, (size_t)ncreate * sizeof *create);
    }
    pp_mutex_unlock(&reg_lock);
}

/* Enters the calling thread's stack bounds (as the unwinder found them)
 * in its entry. */
static _Atomic int own_unsettled; /* own threads created whose stacks are not noted yet */

static void note_stack(void)
{
    int tid = (int)syscall(SYS_gettid);
    uintptr_t lo, hi;
    pp_unwind_thread_stack(&lo, &hi);
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high; i++)
        if (registry[i].tid == tid) {
            registry[i].stack_lo = lo;
            registry[i].stack_hi = hi;
        }
    pp_mutex_unlock(&reg_lock);
}

static void unregister_self(void)
{
    int tid = (int)syscall(SYS_gettid);
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high; i++)
        if (registry[i].tid == tid)
            registry[i].tid = 0;
    pp_mutex_unlock(&reg_lock);
}

pp_thread_entry *pp_threads_copy(size_t *n)
{
    *n = 0;
    pp_mutex_lock(&reg_lock);
    size_t cap = (size_t)reg_high + 16; /* slots in use are below reg_high; a few may start meanwhile */
    pp_mutex_unlock(&reg_lock);
    pp_thread_entry *out = malloc(cap * sizeof *out);
    if (!out)
        return NULL;
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high && *n < cap; i++)
        if (registry[i].tid)
            out[(*n)++] = registry[i];
    pp_mutex_unlock(&reg_lock);
    return out;
}

int pp_threads_list(int *tids, void *const **slots, void *const **trace_slots, int max)
{
    int n = 0;
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high && n < max; i++)
        if (registry[i].tid) {
            if (tids)
                tids[n] = registry[i].tid;
            if (slots)
                slots[n] = registry[i].labels_slot;
            if (trace_slots)
                trace_slots[n] = registry[i].trace_slot;
            n++;
        }
    pp_mutex_unlock(&reg_lock);
    return n;
}

int pp_threads_list_own(int *tids, int max)
{
    int n = 0;
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high && n < max; i++)
        if (registry[i].tid && registry[i].own)
            tids[n++] = registry[i].tid;
    pp_mutex_unlock(&reg_lock);
    return n;
}

/* The registered threads' ids (a pp_thread_lister for cpu/). */
static int list_registered(int *tids, int max)
{
    int n = 0;
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high && n < max; i++)
        if (registry[i].tid)
            tids[n++] = registry[i].tid;
    pp_mutex_unlock(&reg_lock);
    return n;
}

/* One own thread's stack, with the guard page below it. */
static size_t stack_bytes(const pp_thread_entry *e)
{
    return e->stack_hi > e->stack_lo ? e->stack_hi - e->stack_lo + (size_t)sysconf(_SC_PAGESIZE) : 0;
}

static size_t inherited_own_stacks; /* in a forked child: its parent's own threads' (reg_lock) */

size_t pp_threads_own_stack_bytes(void)
{
    size_t live = 0;
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high; i++)
        if (registry[i].tid && registry[i].own)
            live += stack_bytes(&registry[i]);
    size_t kept = inherited_own_stacks;
    pp_mutex_unlock(&reg_lock);
    return live > kept ? live : kept;
}

int pp_threads_own_stacks(uintptr_t *lo, uintptr_t *hi, int max)
{
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
    while (atomic_load(&own_unsettled) > 0 && pp_now_ns(CLOCK_MONOTONIC) < end) { /* their stacks are mapped */
        struct timespec t = {0, 200000};
        nanosleep(&t, NULL);
    }
    int n = 0;
    pp_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_high && n < max; i++)
        if (registry[i].tid && registry[i].own && stack_bytes(&registry[i])) {
            hi[n] = registry[i].stack_hi;
            lo[n++] = registry[i].stack_hi - stack_bytes(&registry[i]);
        }
    pp_mutex_unlock(&reg_lock);
    return n;
}

static int forking_tid; /* the forking thread's id in the parent (reg_lock) */

/* The child's one thread is the forking thread's entry, under its new id
 * (the lister gives it to cpu/ when /proc/self/task cannot be read). */
void pp_threads_fork_child(void)
{
    reg_lock = (pp_mutex)PP_MUTEX_INIT;
    pp_threads_creds_fork_child();
    int tid = (int)syscall(SYS_gettid);
    inherited_own_stacks = 0;
    atomic_store(&own_unsettled, 0); /* the parent's starting threads are not the child's */
    for (int i = 0; i < reg_high; i++) {
        if (registry[i].tid && registry[i].tid != forking_tid && registry[i].own)
            inherited_own_stacks += stack_bytes(&registry[i]);
        registry[i].tid = registry[i].tid == forking_tid ? tid : 0;
    }
}

void pp_threads_fork_prepare(void)
{
    pp_mutex_lock(&reg_lock);
    forking_tid = (int)syscall(SYS_gettid);
}
void pp_threads_fork_parent(void) { pp_mutex_unlock(&reg_lock); }

static void on_exit_key(void *v)
{
    (void)v;
    unregister_self();
    pp_cpu_thread_exit();
    pp_labels_thread_exit();
}

/* A thread of the profiler's that the pthread_create override did not
 * register (libpprof loaded with dlopen): registered as the profiler's
 * own now, and left at its exit (pp_own_thread_started). */
static void adopt_own(void)
{
    if (registered)
        return;
    register_self(NULL, 0, 1);
    pthread_setspecific(exit_key, (void *)1);
}

static void make_key(void)
{
    pthread_key_create(&exit_key, on_exit_key);
    pp_cpu_set_thread_lister(list_registered);
    pp_own_thread_hook_set(adopt_own);
}

void pp_threads_init(void)
{
    pthread_once(&key_once, make_key);
}

void pp_threads_register_main(void)
{
    register_self(NULL, 0, 0);
}

/* Runs the thread's function; its own frame is left out of every stack
 * (PP_HIDDEN_FRAME). */
PP_HIDDEN_FRAME void *pp_threads_trampoline(void *p)
{
    struct start s = *(struct start *)p;
    pthread_setspecific(exit_key, (void *)1);
    register_self(s.create, s.ncreate, s.own);
    if (s.own) {
        pp_threads_creds_starting(-1);
        pp_threads_creds_join();
    }
    free(p);
    pp_labels_adopt(s.labels);
    pp_trace_adopt(&s.trace);
    if (s.own) {
        pp_own_heap_enter(); /* for the thread's life */
        pp_own_stack_unlock();
    }
    pp_unwind_thread_prepare();
    note_stack();
    if (s.own)
        atomic_fetch_sub(&own_unsettled, 1);
    pp_cpu_thread_start((const void *)s.fn);
    return s.fn(s.arg);
}

void *pp_threads_start_new(void *(*fn)(void *), void *arg, uint64_t caller)
{
    pp_threads_init();
    int own = pp_own_work();
    pp_own_heap_enter(); /* the profiler's, though the program's thread asks */
    struct start *s = malloc(sizeof *s);
    pp_own_heap_leave();
    if (!s)
        return NULL;
    s->own = own;
    if (own) {
        pp_threads_creds_starting(1);
        atomic_fetch_add(&own_unsettled, 1);
    }
    s->fn = fn;
    s->arg = arg;
    s->labels = pprof_labels_current();
    pp_trace_capture(&s->trace);
    int end;
    s->ncreate = pp_unwind_here(caller, s->create, PP_CREATE_FRAMES, &end);
    if (end) /* deeper than PP_CREATE_FRAMES, or cut where the walk stopped */
        s->create[s->ncreate++] = pp_pc_stack_end(end);
    return s;
}

void pp_threads_start_free(void *p)
{
    struct start *s = p;
    if (s->own) {
        pp_threads_creds_starting(-1);
        atomic_fetch_sub(&own_unsettled, 1);
    }
    pprof_labels_unref(s->labels);
    free(s);
}
