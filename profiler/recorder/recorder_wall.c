/* recorder_wall.c: the wall-clock recorder kind (pprof_wall_recorder_new).
 *
 * A window is a pprof_profile builder that the wall sampler (wall/) adds
 * samples to; closing one is a swap in the sampler, which first counts
 * every pending sample into the windows attached, so snapshots leave no
 * gap and count nothing twice. Several wall recorders share one sampler,
 * as CPU recorders do: it runs at the highest rate they ask for (rate 0
 * joins the rate in force), and each window's profile keeps its own
 * period and says when its samples came faster.
 */
#define _GNU_SOURCE
#include "recorder.h"
#include "base/base.h"
#include "model/model.h"
#include "wall/wall.h"

#include <stdlib.h>

typedef struct wall_recorder {
    pprof_recorder base;
    pprof_wall_config cfg;
    int hz;               /* in force while running */
    pp_wall_window w;     /* the open window (the sampler's lock) */
} wall_recorder;

static int wall_start(pprof_recorder *r);
static int wall_end(pprof_recorder *r, int reopen, pprof_profile **out);
static int64_t wall_rate(const pprof_recorder *r);
static const pp_recorder_ops wall_ops = {.start = wall_start, .end = wall_end, .rate = wall_rate};

static pprof_profile *new_wall_window(const wall_recorder *c, int hz)
{
    static const pprof_value_type native[] = {{"samples", "count"}, {"wall", "nanoseconds"}};
    static const pprof_value_type fg[] = {{"samples", "count"}, {"time", "nanoseconds"}};
    int64_t period = 1000000000ll / hz;
    return c->cfg.fgprof ? pp_profile_new(fg, 2, (pprof_value_type){"wallclock", "nanoseconds"}, period)
                         : pp_profile_new(native, 2, (pprof_value_type){"wall", "nanoseconds"}, period);
}

static int wall_start(pprof_recorder *r)
{
    wall_recorder *c = (wall_recorder *)r;
    int hz = c->cfg.hz ? (int)c->cfg.hz : pp_wall_hz();
    hz = hz ? hz : PPROF_WALL_DEFAULT_HZ;
    c->w.state = (int)c->cfg.state;
    c->w.units = r->units;
    c->w.profile = new_wall_window(c, hz);
    if (!c->w.profile)
        return pp_fail(PPROF_ENOMEM);
    int rc = pp_wall_attach(&c->w, hz);
    if (rc) {
        pprof_profile_free(c->w.profile);
        c->w.profile = NULL;
        return rc;
    }
    c->hz = hz;
    pp_recorder_window_begin(r);
    c->w.profile->time_nanos = r->window_real_ns; /* a field the sampler never writes */
    return 0;
}

static int wall_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    wall_recorder *c = (wall_recorder *)r;
    pprof_profile *next = NULL;
    if (reopen && !(next = new_wall_window(c, c->hz)))
        return pp_fail(PPROF_ENOMEM);
    pprof_profile *p = pp_wall_swap(&c->w, next);
    pp_recorder_window_end(r, p, reopen);
    return pp_recorder_finish(r, p, out);
}

int pp_wall_recorder_cut(pprof_recorder *r, pprof_profile **raw)
{
    wall_recorder *c = (wall_recorder *)r;
    *raw = NULL;
    if (r->ops != &wall_ops || !r->running)
        return pp_fail(PPROF_ESTATE);
    pprof_profile *next = new_wall_window(c, c->hz);
    if (!next)
        return pp_fail(PPROF_ENOMEM);
    pprof_profile *p = pp_wall_swap(&c->w, next);
    int64_t now = pp_now_ns(CLOCK_MONOTONIC);
    p->time_nanos = r->window_real_ns;
    p->duration_nanos = now - r->window_mono_ns;
    r->window_real_ns = p->time_nanos + p->duration_nanos; /* the next begins where this one ends */
    r->window_mono_ns = now;
    next->time_nanos = r->window_real_ns; /* fields the sampler never writes */
    *raw = p;
    return 0;
}

typedef struct peek_arg {
    const pprof_recorder *r;
    int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg);
    void *arg;
} peek_arg;

static int peek_window(const pprof_profile *p, void *arg)
{
    peek_arg *a = arg;
    return a->fn(p, pp_now_ns(CLOCK_MONOTONIC) - a->r->window_mono_ns, a->arg);
}

int pp_wall_recorder_peek(pprof_recorder *r, int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg), void *arg)
{
    if (r->ops != &wall_ops || !r->running)
        return pp_fail(PPROF_ESTATE);
    peek_arg a = {r, fn, arg};
    return pp_wall_peek(&((wall_recorder *)r)->w, peek_window, &a);
}

static int64_t wall_rate(const pprof_recorder *r)
{
    return r->running ? ((const wall_recorder *)r)->hz : 0;
}


/* Thread-safe. */
int pprof_wall_recorder_new(const pprof_wall_config *cfg, pprof_recorder **out)
{
    pprof_wall_config c = cfg ? *cfg : (pprof_wall_config){0};
    int rc = pp_recorder_check_new(out, c.hz, PPROF_WALL_MAX_HZ);
    if (rc)
        return rc;
    if (c.state != PPROF_WALL_ALL && c.state != PPROF_WALL_OFF_CPU && c.state != PPROF_WALL_ON_CPU)
        return pp_error_detail(PPROF_EINVAL, "state must be PPROF_WALL_ALL, _OFF_CPU or _ON_CPU, not %d",
                               (int)c.state);
    if (c.fgprof != 0 && c.fgprof != 1)
        return pp_error_detail(PPROF_EINVAL, "fgprof must be 0 or 1, not %d", c.fgprof);
    wall_recorder *r = (wall_recorder *)pp_recorder_new(sizeof *r, &wall_ops);
    if (!r)
        return PPROF_ENOMEM;
    r->cfg = c;
    *out = &r->base;
    return 0;
}
