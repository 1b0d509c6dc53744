/* sched.c: deferred calls and the scheduler thread (see sched.h).
 *
 * The scheduler is one library thread, created on first use. It keeps the
 * calls in one list ordered by deadline and sleeps on a CLOCK_MONOTONIC
 * condition variable until the earliest deadline; each due call finishes
 * on a thread of its own. Transports that park a connection while a call
 * is pending (suspended MHD connections are not polled) register the
 * socket with pp_call_watch; while any call is watched, the scheduler also
 * wakes every 250 ms and peeks at those sockets so a client that went away
 * ends its profile early.
 *
 * A call is PENDING (in the list, waiting for its deadline), RUNNING (its
 * done or closed callback runs, without the lock held) or FINISHED. Only
 * PENDING calls are taken by the scheduler, pprof_http_cancel and
 * pp_call_cancel_owner, each under the lock, so exactly one of them runs a
 * call's end. A canceller that finds the call RUNNING waits for it to
 * finish; whoever sees the call FINISHED last frees it.
 *
 * Callbacks never run with the lock held, and nothing here takes the lock
 * of a transport while holding ours, so transports may call in while
 * holding their own locks. A forked child starts with no calls and no
 * scheduler thread (the parent's are not in the child).
 */
#define _GNU_SOURCE
#include "sched.h"
#include "base/base.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

enum { CALL_PENDING, CALL_RUNNING, CALL_FINISHED };

struct pprof_http_call {
    struct pprof_http_call *next; /* the list, ordered by deadline */
    int64_t deadline;             /* CLOCK_MONOTONIC, ns */
    int state;
    int waiters;                  /* cancellers waiting for FINISHED */
    int held;                     /* the caller holds the handle (until pprof_http_cancel) */
    pprof_recorder *rec;
    pp_finish_fn finish;
    const void *finish_arg;
    pp_output out;                /* the request's ?format= and its options */
    pprof_http_done done;
    void *ctx;
    int fd;                       /* watched socket, or -1 */
    void (*closed)(void *arg);
    void *closed_arg;
    const void *owner;
};

#define PEER_CHECK_NS 250000000LL

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* the scheduler: the list changed */
static pthread_cond_t idle; /* cancellers: a call finished */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pprof_http_call *calls; /* PENDING and RUNNING calls */
static int active;             /* reservations + calls not yet finished */
static int thread_running;
static int quit_idle; /* pp_call_release_thread: the scheduler ends once no call is left */

static void init_conds(void)
{
    pp_cond_init_monotonic(&wake);
    pp_cond_init_monotonic(&idle);
}

/* In a forked child the scheduler thread does not exist and the lock may
 * have been held by a parent thread: start over (the calls are leaked). */
static void after_fork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    init_conds();
    calls = NULL;
    active = 0;
    thread_running = 0;
}

static void init_once(void)
{
    init_conds();
    pp_atfork(NULL, NULL, after_fork_child);
}

static void unlink_locked(pprof_http_call *c)
{
    for (pprof_http_call **p = &calls; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            c->next = NULL;
            return;
        }
    }
}

/* Marks a RUNNING call finished; frees it unless a canceller waits. */
static void finish_locked(pprof_http_call *c)
{
    unlink_locked(c);
    c->state = CALL_FINISHED;
    active--;
    pthread_cond_broadcast(&idle);
    if (c->waiters == 0 && !c->held)
        free(c);
}

/* Waits (lock held) until a RUNNING call is finished, then frees it if this
 * was the last waiter. */
static void wait_finished_locked(pprof_http_call *c)
{
    c->waiters++;
    while (c->state != CALL_FINISHED)
        pp_cond_wait(&idle, &mu);
    if (--c->waiters == 0 && !c->held)
        free(c);
}

/* Ends a PENDING call (lock held on entry and exit, dropped meanwhile):
 * either completes it (stop the recorder, build the reply, call done) or,
 * when its peer is gone, discards the recorder and calls its closed hook. */
static void run_locked(pprof_http_call *c, int peer_gone)
{
    c->state = CALL_RUNNING;
    pthread_mutex_unlock(&mu);
    if (peer_gone) {
        pprof_recorder_free(c->rec);
        if (c->closed)
            c->closed(c->closed_arg);
    } else {
        pp_reply r;
        pp_reply_init(&r, 200);
        c->finish(c->rec, c->finish_arg, &c->out, &r);
        pprof_recorder_free(c->rec);
        pp_reply_deliver(&r, c->done, c->ctx);
    }
    c->rec = NULL;
    pthread_mutex_lock(&mu);
    finish_locked(c);
}

/* Whether the peer of a watched socket has closed it (or reset it). */
static int peer_closed(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0)
        return 1;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOTSOCK)
        return 1;
    return 0;
}

/* Ends the pending calls whose peers have gone (lock held on entry and
 * exit), so their places are free now rather than at the scheduler's next
 * check. */
static void reap_gone_locked(void)
{
    for (;;) {
        pprof_http_call *gone = NULL;
        for (pprof_http_call *c = calls; c && !gone; c = c->next)
            if (c->state == CALL_PENDING && c->fd >= 0 && peer_closed(c->fd))
                gone = c;
        if (!gone)
            return;
        run_locked(gone, 1);
    }
}

/* Finishes one due call (the scheduler marked it RUNNING). Inherits the
 * scheduler's signal mask, which leaves the host's signals to the host. */
static void *finisher_main(void *arg)
{
    pthread_setname_np(pthread_self(), "pprof-finish");
    pp_own_thread_started();
    pprof_labels_unref(pp_own_labels_begin()); /* no request's labels */
    pp_own_heap_enter(); /* its memory is the profiler's, for its life */
    pthread_mutex_lock(&mu);
    run_locked(arg, 0);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *scheduler_main(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "pprof-sched");
    pp_own_thread_started();
    pprof_labels_unref(pp_own_labels_begin()); /* not its creator's request labels */
    pp_own_heap_enter(); /* its memory, and its finishers', is the profiler's */
    int64_t next_check = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        int64_t now = pp_now_ns(CLOCK_MONOTONIC);
        pprof_http_call *first = NULL;
        int watched = 0;
        for (pprof_http_call *c = calls; c; c = c->next) {
            if (c->state != CALL_PENDING)
                continue;
            if (!first)
                first = c;
            watched |= c->fd >= 0;
        }
        if (first && first->deadline <= now) {
            /* Each due call finishes on a thread of its own, so that the
             * windows due together close together: one profile's
             * symbolizing and encoding must not lengthen the next one's. */
            first->state = CALL_RUNNING;
            pthread_t t;
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            if (pthread_create(&t, &attr, finisher_main, first) != 0)
                run_locked(first, 0);
            pthread_attr_destroy(&attr);
            continue;
        }
        if (watched && now >= next_check) {
            reap_gone_locked();
            next_check = now + PEER_CHECK_NS;
            continue; /* the list may have changed */
        }
        int64_t until = first ? first->deadline : INT64_MAX;
        if (watched && next_check < until)
            until = next_check;
        if (until == INT64_MAX && quit_idle && !calls) {
            thread_running = 0;
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        if (until == INT64_MAX) {
            pp_cond_wait(&wake, &mu);
        } else {
            pp_cond_wait_until(&wake, &mu, until);
        }
    }
    return NULL;
}

static int start_thread_locked(void)
{
    quit_idle = 0;
    if (thread_running)
        return 0;
    pthread_t t;
    pthread_attr_t attr;
    sigset_t old;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pp_block_host_signals(&old);
    int rc = pthread_create(&t, &attr, scheduler_main, NULL);
    pp_sigmask_exact(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return pp_fail(PPROF_ESYS);
    thread_running = 1;
    return 0;
}

void pp_call_keep_thread(void)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    start_thread_locked();
    pthread_mutex_unlock(&mu);
}

void pp_call_release_thread(void)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    quit_idle = 1;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&mu);
}

int pp_call_reserve(const pp_req *q)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    if (active >= q->cfg.max_concurrent)
        reap_gone_locked();
    int ok = active < q->cfg.max_concurrent;
    if (ok)
        active++;
    pthread_mutex_unlock(&mu);
    return ok ? 0 : PPROF_ELIMIT;
}

void pp_call_unreserve(void)
{
    pthread_mutex_lock(&mu);
    active--;
    pthread_mutex_unlock(&mu);
}

int pp_call_defer(pp_req *q, pprof_recorder *rec, int seconds, pp_finish_fn finish, const void *arg)
{
    pprof_http_call *c = calloc(1, sizeof *c);
    if (!c) {
        pp_call_unreserve();
        return pp_fail(PPROF_ENOMEM);
    }
    int64_t window = q->q.window_ms > 0 && q->q.window_ms < seconds * 1000 ? (int64_t)q->q.window_ms * 1000000
                                                                           : (int64_t)seconds * 1000000000;
    c->deadline = pp_now_ns(CLOCK_MONOTONIC) + window; /* window_ms: the rest of a tree's window */
    c->state = CALL_PENDING;
    c->rec = rec;
    c->finish = finish;
    c->finish_arg = arg;
    c->out = q->q.out;
    c->done = q->done;
    c->ctx = q->ctx;
    c->fd = -1;
    c->held = q->call != NULL;

    pthread_mutex_lock(&mu);
    int rc = start_thread_locked();
    if (rc != 0) {
        active--;
        pthread_mutex_unlock(&mu);
        free(c);
        return rc;
    }
    if (q->call)
        *q->call = c; /* before the scheduler can see the call */
    pprof_http_call **p = &calls;
    while (*p && (*p)->deadline <= c->deadline)
        p = &(*p)->next;
    c->next = *p;
    *p = c;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&mu);
    return 0;
}

void pp_call_finish_all_now(int64_t wait_ns)
{
    pthread_mutex_lock(&mu);
    for (;;) {
        pprof_http_call *c = calls;
        while (c && c->state != CALL_PENDING)
            c = c->next;
        if (!c)
            break;
        run_locked(c, 0); /* on this thread: the process may be about to end */
    }
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + wait_ns;
    while (calls) { /* finishers still delivering */
        int64_t now = pp_now_ns(CLOCK_MONOTONIC);
        if (now >= end)
            break;
        pp_cond_wait_until(&idle, &mu, end);
    }
    pthread_mutex_unlock(&mu);
}

/* Thread-safe. Waits for a done callback running on another thread; must
 * not be called from inside the call's own done callback. Releases the
 * caller's handle in every state. */
void pprof_http_cancel(pprof_http_call *call)
{
    if (!call)
        return;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    call->held = 0;
    if (call->state == CALL_FINISHED) {
        if (call->waiters == 0)
            free(call);
        pthread_mutex_unlock(&mu);
        return;
    }
    if (call->state == CALL_PENDING) {
        unlink_locked(call);
        call->state = CALL_FINISHED;
        active--;
        pthread_mutex_unlock(&mu);
        pprof_recorder_free(call->rec);
        free(call);
        return;
    }
    wait_finished_locked(call);
    pthread_mutex_unlock(&mu);
}

int pp_call_watch(pprof_http_call *call, int fd, void (*closed)(void *arg), void *arg, const void *owner)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    int rc = PPROF_ESTATE;
    if (call->state == CALL_PENDING) {
        call->fd = fd;
        call->closed = closed;
        call->closed_arg = arg;
        call->owner = owner;
        pthread_cond_signal(&wake);
        rc = 0;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

void pp_call_cancel_owner(const void *owner)
{
    if (!owner)
        return;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    for (;;) {
        pprof_http_call *pending = NULL, *running = NULL;
        for (pprof_http_call *c = calls; c; c = c->next) {
            if (c->owner != owner)
                continue;
            if (c->state == CALL_PENDING && !pending)
                pending = c;
            if (c->state == CALL_RUNNING && !running)
                running = c;
        }
        if (pending)
            run_locked(pending, 1);
        else if (running)
            wait_finished_locked(running);
        else
            break;
    }
    pthread_mutex_unlock(&mu);
}

void pp_block_host_signals(sigset_t *old)
{
    static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2,
                               SIGCHLD, SIGPIPE, SIGALRM, SIGWINCH, SIGTSTP, SIGTTIN,
                               SIGTTOU, SIGIO,   SIGURG};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&set, sigs[i]);
    sigdelset(&set, pp_profiling_signal()); /* SIGUSR2, say: it answers the profiler's requests */
    pp_sigmask_exact(SIG_BLOCK, &set, old);
}
