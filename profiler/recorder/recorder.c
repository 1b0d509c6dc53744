/* recorder.c: the public recorder API.
 *
 * A recorder is configured once; start opens a window, snapshot closes it
 * and opens the next with no gap, stop closes it, write_to gives the state
 * now. The public calls here check their arguments and the recorder's
 * state and dispatch to its kind's operations (recorder.h), which each
 * kind fills in its own file with its own state (recorder_cpu.c,
 * recorder_heap.c, ...).
 */
#define _GNU_SOURCE
#include "recorder.h"
#include "base/base.h"
#include "model/model.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

pprof_recorder *pp_recorder_new(size_t size, const pp_recorder_ops *ops)
{
    pprof_recorder *r = calloc(1, size);
    if (!r) {
        pp_fail(PPROF_ENOMEM);
        return NULL;
    }
    r->ops = ops;
    return r;
}

void pp_recorder_window_begin(pprof_recorder *r)
{
    r->running = 1;
    r->window_mono_ns = pp_now_ns(CLOCK_MONOTONIC);
    r->window_real_ns = pp_now_ns(CLOCK_REALTIME);
}

void pp_recorder_window_begin_at_start(pprof_recorder *r)
{
    r->running = 1;
    r->window_mono_ns = pp_start_ns(0);
    r->window_real_ns = pp_start_ns(1);
}

void pp_recorder_window_end(pprof_recorder *r, pprof_profile *p, int reopen)
{
    PP_ASSERT(r->running); /* recorder.h: the window that closes is a running recorder's */
    if (p) {
        p->time_nanos = r->window_real_ns;
        p->duration_nanos = pp_now_ns(CLOCK_MONOTONIC) - r->window_mono_ns;
    }
    if (reopen)
        pp_recorder_window_begin(r);
    else
        r->running = 0;
}

int pp_recorder_finish(const pprof_recorder *r, pprof_profile *p, pprof_profile **out)
{
    if (!out) {
        pprof_profile_free(p);
        return 0;
    }
    if (r->raw) {
        *out = p;
        return 0;
    }
    int rc = pp_profile_finish(p, r->symbolize, r->leave_maps);
    if (rc) {
        pprof_profile_free(p);
        *out = NULL;
        return rc;
    }
    *out = p;
    return 0;
}

int pp_recorder_cut(pprof_recorder *r, pprof_profile **raw)
{
    *raw = NULL;
    if (!r->running || !r->ops->peek)
        return pp_fail(PPROF_ESTATE);
    r->raw = 1;
    int rc = r->ops->end(r, 1, raw);
    r->raw = 0;
    return rc;
}

int pp_recorder_peek(pprof_recorder *r, int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg), void *arg)
{
    pprof_profile *p = NULL;
    if (!r->running || !r->ops->peek)
        return pp_fail(PPROF_ESTATE);
    int rc = r->ops->peek(r, &p);
    if (rc == 0) {
        p->time_nanos = r->window_real_ns;
        rc = fn(p, pp_now_ns(CLOCK_MONOTONIC) - r->window_mono_ns, arg);
    }
    pprof_profile_free(p);
    return rc;
}

/* --------------------------------------------------------- the public API */

int pprof_recorder_start(pprof_recorder *r)
{
    if (!r)
        return pp_fail(PPROF_EINVAL);
    if (r->running)
        return pp_fail(PPROF_EBUSY);
    if (!r->ops->start)
        return pp_error_detail(PPROF_ENOTSUP, "an instant recorder: use pprof_recorder_write_to");
    if (pp_shutting_down() && !r->ops->start_exiting)
        return pp_error_detail(PPROF_ESTATE, "the process is exiting");
    int rc = pp_shutting_down() ? r->ops->start_exiting(r) : r->ops->start(r);
    PP_ASSERT(rc != 0 || r->running); /* a start that succeeded left it running */
    return rc;
}

/* stop (reopen 0) or snapshot (reopen 1) */
static int end_window(pprof_recorder *r, int reopen, pprof_profile **out)
{
    if (out)
        *out = NULL;
    if (!r)
        return pp_fail(PPROF_EINVAL);
    if (!r->running)
        return pp_error_detail(PPROF_ESTATE, "the recorder is not running");
    int rc = r->ops->end(r, reopen, out);
    PP_ASSERT(rc != 0 || r->running == reopen); /* a stop stopped it, a snapshot kept it running */
    return rc;
}

int pprof_recorder_stop(pprof_recorder *r, pprof_profile **out)
{
    return end_window(r, 0, out);
}

int pprof_recorder_snapshot(pprof_recorder *r, pprof_profile **out)
{
    return end_window(r, 1, out);
}

int pprof_recorder_write_to(pprof_recorder *r, pprof_profile **out)
{
    if (!r || !out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    if (!r->ops->write_to)
        return pp_error_detail(PPROF_ENOTSUP, "a windowed recorder: use start, snapshot and stop");
    return r->ops->write_to(r, out);
}

PPROF_API int pprof_recorder_leave_shared(pprof_recorder *r, const char *maps)
{
    if (!r)
        return pp_fail(PPROF_EINVAL);
    char *copy = maps ? strdup(maps) : NULL;
    if (maps && !copy)
        return pp_fail(PPROF_ENOMEM);
    free(r->leave_maps);
    r->leave_maps = copy;
    return 0;
}

int pprof_recorder_set_symbolize(pprof_recorder *r, pprof_symbolize how)
{
    if (!r || how < PPROF_SYMBOLIZE_DEFAULT || how > PPROF_SYMBOLIZE_NONE)
        return pp_fail(PPROF_EINVAL);
    r->symbolize = how;
    return 0;
}

int64_t pprof_recorder_rate(const pprof_recorder *r)
{
    return r && r->ops->rate ? r->ops->rate(r) : 0;
}

void pprof_recorder_free(pprof_recorder *r)
{
    if (!r)
        return;
    if (r->running)
        pprof_recorder_stop(r, NULL);
    if (r->ops->release)
        r->ops->release(r);
    pprof_profile_free(r->snap);
    free(r->leave_maps);
    free(r);
}
