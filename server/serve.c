/* serve.c: answering with a profile (see endpoints.h).
 *
 * The profile kinds' endpoints end here: a profile now (write_to), a
 * window of N seconds that the scheduler ends (sched.h), or godeltaprof's
 * change since the previous call. The profile is written as the request
 * asked: the endpoint's own format, ?format=proto, or folded stacks.
 */
#include "auth.h"
#include "base/base.h"
#include "endpoints.h"
#include "sched.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void pp_write_profile(pp_reply *r, pprof_profile *p, const pp_output *o, pprof_format fmt, const char *what,
                      const char *disposition)
{
    if (o->format == PP_OUT_PROTO)
        fmt = PPROF_FORMAT_PROTO;
    else if (o->format == PP_OUT_FOLDED)
        fmt = PPROF_FORMAT_FOLDED;
    int rc;
    if (o->format == PP_OUT_FOLDED) {
        pprof_folded_config fc = {o->sample_index, o->labels};
        rc = pprof_profile_write_folded(p, &fc, pp_reply_writer(r));
    } else {
        rc = pprof_profile_write(p, fmt, pp_reply_writer(r));
    }
    pprof_profile_free(p);
    if (rc != 0 && !r->failed) {
        pprof_buffer_free(&r->resp.body);
        if (rc == PPROF_ENOTFOUND) /* sample_index */
            pp_reply_set_error(r, 400, "invalid value for \"sample_index\" - %s", pp_why(rc));
        else
            pp_reply_set_error(r, 500, "Could not write the %s profile: %s", what, pp_why(rc));
        return;
    }
    if (fmt == PPROF_FORMAT_PROTO_GZIP || fmt == PPROF_FORMAT_PROTO) {
        pp_reply_header(r, "Content-Type", "application/octet-stream");
        pp_reply_header(r, "Content-Disposition", disposition);
    } else {
        pp_reply_header(r, "Content-Type", "text/plain; charset=utf-8");
    }
}

/* Ends a window: stop, then the profile as the request asked (gzipped
 * protobuf by default). `arg` is the Content-Disposition value. Runs on
 * the scheduler thread. */
static void finish_window(pprof_recorder *rec, const void *arg, const pp_output *o, pp_reply *out)
{
    pprof_profile *p = NULL;
    int rc = pprof_recorder_stop(rec, &p);
    if (rc != 0) {
        pp_reply_set_error(out, 500, "Could not stop profiling: %s", pp_why(rc));
        return;
    }
    pp_write_profile(out, p, o, PPROF_FORMAT_PROTO_GZIP, "requested", (const char *)arg);
}

/* How rec's profiles are symbolized: as the query says; a member asked
 * by its hub with hub_names=1 leaves the files the hub maps too to it
 * (the hub sent its maps with the request). */
static char *(*_Atomic hub_maps)(void);

void pp_serve_hub_maps_provider(char *(*maps)(void))
{
    atomic_store(&hub_maps, maps);
}

static void set_symbolize(pprof_recorder *rec, const pp_req *q)
{
    pprof_recorder_set_symbolize(rec, q->q.symbolize);
    char *(*provider)(void) = atomic_load(&hub_maps);
    char *maps = q->q.hub_names && provider ? provider() : NULL;
    pprof_recorder_leave_shared(rec, maps);
    free(maps);
}

int pp_serve_window(pp_req *q, pprof_recorder *rec, int seconds, const char *what, const char *disposition)
{
    if (seconds > q->cfg.max_seconds)
        seconds = q->cfg.max_seconds;
    if (pp_call_reserve(q) != 0) {
        pprof_recorder_free(rec);
        pp_auth_refused(503, NULL);
        return pp_reply_error(q, 503, "too many profile requests at once (limit %d); try again later",
                              q->cfg.max_concurrent);
    }
    set_symbolize(rec, q);
    int rc = pprof_recorder_start(rec);
    if (rc != 0) {
        char why[PP_ERROR_MAX];
        snprintf(why, sizeof why, "%s", pp_why(rc)); /* before free can touch it */
        pprof_recorder_free(rec);
        pp_call_unreserve();
        return pp_reply_error(q, rc == PPROF_EBUSY ? 503 : 500, "Could not enable %s profiling: %s", what, why);
    }
    struct timespec cpu;
    if (q->q.window_ms > 0 && clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0) /* it started in the window */
        pprof_recorder_add_unsampled_cpu(rec, (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec);
    rc = pp_call_defer(q, rec, seconds, finish_window, disposition);
    if (rc != 0) {
        pprof_recorder_free(rec);
        return pp_reply_error(q, 500, "Could not schedule the profile: %s", pp_why(rc));
    }
    return 0;
}

int pp_send_profile(pp_req *q, pprof_profile *p, pprof_format fmt, const char *what, const char *disposition)
{
    pp_reply r;
    pp_reply_init(&r, 200);
    pp_write_profile(&r, p, &q->q.out, fmt, what, disposition);
    return pp_reply_send(q, &r);
}

int pp_serve_recorder(pp_req *q, pprof_recorder *rec, pprof_format fmt, const char *what, const char *disposition,
                      const char *delta_disposition)
{
    if (q->q.has_seconds)
        return pp_serve_window(q, rec, q->q.seconds, what, delta_disposition);
    pprof_profile *p = NULL;
    set_symbolize(rec, q);
    int rc = pprof_recorder_write_to(rec, &p);
    pprof_recorder_free(rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not write the %s profile: %s", what, pp_why(rc));
    return pp_send_profile(q, p, fmt, what, disposition);
}

static pthread_mutex_t delta_lock = PTHREAD_MUTEX_INITIALIZER;
static pprof_recorder **delta_changing; /* the state being served, while delta_lock is held */
static pthread_once_t delta_once = PTHREAD_ONCE_INIT;

/* A forked child (a member of the tree) answers delta requests of its own,
 * but a parent thread may have held delta_lock at the fork: the lock
 * starts over, and the state that thread was changing may be half-done,
 * so that one begins afresh in the child (the parent's copy is left as
 * it is). */
static void delta_after_fork_child(void)
{
    if (delta_changing)
        *delta_changing = NULL;
    delta_changing = NULL;
    pthread_mutex_init(&delta_lock, NULL);
}

static void delta_init(void)
{
    pp_atfork(NULL, NULL, delta_after_fork_child);
}

int pp_serve_delta(pp_req *q, pprof_recorder **state, int (*make)(pprof_recorder **out), const char *what,
                   const char *disposition)
{
    pthread_once(&delta_once, delta_init);
    pthread_mutex_lock(&delta_lock);
    delta_changing = state;
    int rc = 0;
    if (!*state) {
        rc = make(state);
        if (rc == 0 && (rc = pprof_recorder_start(*state)) != 0) {
            pprof_recorder_free(*state);
            *state = NULL;
        }
    }
    pprof_profile *p = NULL;
    if (rc == 0)
        set_symbolize(*state, q);
    if (rc == 0)
        rc = pprof_recorder_snapshot(*state, &p);
    char why[PP_ERROR_MAX];
    if (rc != 0)
        snprintf(why, sizeof why, "%s", pp_why(rc)); /* before the lock goes */
    delta_changing = NULL;
    pthread_mutex_unlock(&delta_lock);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not write the %s profile: %s", what, why);
    return pp_send_profile(q, p, PPROF_FORMAT_PROTO_GZIP, what, disposition);
}
