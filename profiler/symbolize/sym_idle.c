/* sym_idle.c: the symbolizer gives its memory back when it is idle.
 *
 * The Dwfl with its ELF and DWARF data (heap, and debug sections mapped
 * from the files), the symbol tables and the caches grow with what the
 * profiles asked for. They are kept for the next profile, and released
 * once no session has run for LIBPPROF_SYMBOLIZER_IDLE seconds (30 by
 * default, at least 1): a detached thread, the
 * profiler's own work with every signal blocked, sleeps until then, takes
 * the session lock, releases it all and asks malloc to return free memory
 * to the system. The next session builds it again. The thread exists only
 * while something is waiting to be released.
 */
#define _GNU_SOURCE
#include "sym_internal.h"
#include "labels/labels.h"

#include <malloc.h>
#include <signal.h>
#include <time.h>

static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static int sweeper_running;
static uint64_t sessions;       /* sessions ended, under idle_mu */
static int64_t last_end_s;      /* CLOCK_MONOTONIC, under idle_mu */
static int idle_s = -1;         /* LIBPPROF_SYMBOLIZER_IDLE, read once */
static int forked;              /* this process is a forked child */

static int64_t now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

static void *sweeper(void *arg)
{
    struct pp_sym_session *s = arg;
    pthread_setname_np(pthread_self(), "pprof-symidle");
    pprof_labels_unref(pp_own_begin());
    pthread_mutex_lock(&idle_mu);
    for (;;) {
        int64_t due = last_end_s + idle_s;
        if (now_s() < due) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += due - now_s();
            pp_cond_timedwait(&idle_cv, &idle_mu, &ts);
            continue;
        }
        uint64_t seen = sessions;
        pthread_mutex_unlock(&idle_mu);
        pthread_mutex_lock(&s->mu);
        pthread_mutex_lock(&idle_mu);
        if (sessions == seen) { /* none ran meanwhile */
            pp_sym_release(s);
            s->n_idle_releases++;
            pp_sym_publish(s);
            malloc_trim(0);
            break;
        }
        pthread_mutex_unlock(&s->mu);
    }
    sweeper_running = 0;
    pthread_mutex_unlock(&idle_mu);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void pp_sym_idle_note(struct pp_sym_session *s)
{
    if (idle_s < 0)
        idle_s = pp_env_int("LIBPPROF_SYMBOLIZER_IDLE", 30, 1, 86400);
    pthread_mutex_lock(&idle_mu);
    sessions++;
    last_end_s = now_s();
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer cannot start threads in the child of a
     * multi-threaded fork: there the memory stays until exit. */
    if (forked) {
        pthread_mutex_unlock(&idle_mu);
        return;
    }
#endif
    if (!sweeper_running)
        sweeper_running = pp_spawn_detached(sweeper, s, NULL) == 0;
    pthread_mutex_unlock(&idle_mu);
}

void pp_sym_idle_fork_child(void)
{
    idle_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    idle_cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    sweeper_running = 0;
    forked = 1;
}
