/* threads.c: thread creation and exit tracking.
 *
 * pthread_create is interposed so every new thread runs a short prologue
 * before its start routine: it arms its own CPU timer if profiling is on
 * (no thread has to register itself) and takes its creator's label set.
 * A thread-specific key's destructor runs at thread exit, including
 * pthread_exit and cancellation, and deletes the thread's timer. Threads
 * created some other way (raw clone) are found by the collector's rescan of
 * /proc/self/task.
 */
#define _GNU_SOURCE
#include "threads.h"
#include "cpu.h"
#include "labels.h"
#include "unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct start {
    void *(*fn)(void *);
    void *arg;
    pprof_labels *labels; /* the creator's set, inherited */
};

static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void on_exit_key(void *v)
{
    (void)v;
    pp_cpu_thread_exit();
    pp_labels_thread_exit();
}

static void make_key(void)
{
    pthread_key_create(&exit_key, on_exit_key);
}

void pp_threads_init(void)
{
    pthread_once(&key_once, make_key);
}

static void *trampoline(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    pthread_setspecific(exit_key, (void *)1);
    pp_labels_adopt(s.labels);
    pp_unwind_thread_prepare();
    pp_cpu_thread_start();
    return s.fn(s.arg);
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *t, const pthread_attr_t *attr,
                                                          void *(*fn)(void *), void *arg)
{
    static create_fn real;
    if (!real)
        real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    pp_threads_init();
    struct start *s = malloc(sizeof *s);
    if (!s)
        return real(t, attr, fn, arg);
    s->fn = fn;
    s->arg = arg;
    s->labels = pprof_labels_current();
    int rc = real(t, attr, trampoline, s);
    if (rc) {
        pprof_labels_unref(s->labels);
        free(s);
    }
    return rc;
}
