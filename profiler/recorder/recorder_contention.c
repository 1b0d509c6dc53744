/* recorder_contention.c: the mutex and block recorders.
 *
 * Both read the cumulative tables of contention.c: write_to gives the
 * totals since start-up, a window the difference of the records' counts
 * and delays between its start and its end (all-zero records dropped).
 * Rates compose like the CPU recorder's: a config rate of 0 joins the rate
 * in force; a rate when the profile is off turns it on until the last
 * recorder that asked for it stops; another rate gets PPROF_ERATE. A
 * profile that is off gives an empty profile with a comment saying so.
 */
#include "contention/contention.h"
#include "base/base.h"
#include "model/model.h"
#include "recorder.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct contention_recorder {
    pprof_recorder base;
    int block;          /* 1: block profile, 0: mutex profile */
    int64_t cfg_rate;   /* as configured (0: join) */
    int from_start;     /* the first window begins at process start */
    int turned_on;      /* this recorder turned the profile on */
    pp_store_snap snap; /* the counts at the open window's start */
} contention_recorder;

static pp_store *table_of(const contention_recorder *c)
{
    return c->block ? &pp_block_tab : &pp_mutex_tab;
}

static int64_t contention_rate(const pprof_recorder *r)
{
    return ((const contention_recorder *)r)->block ? pp_block_rate() : pp_mutex_fraction();
}

static pprof_profile *build(contention_recorder *c, const pp_store_snap *base, const pp_store_snap *now)
{
    pprof_profile *p = pp_contention_build(table_of(c), base, now);
    int64_t rate = contention_rate(&c->base);
    char text[96];
    /* The first comment names the kind and rate (the text format reads it). */
    snprintf(text, sizeof text, c->block ? "block profile, rate %lld ns" : "mutex profile, sampling period %lld",
             (long long)rate);
    if (p)
        pp_profile_add_comment(p, text);
    if (p && !rate)
        pp_profile_add_comment(p, c->block ? "block profiling is off (LIBPPROF_BLOCK_RATE=0)"
                                           : "mutex profiling is off (LIBPPROF_MUTEX_FRACTION=0)");
    return p;
}

static int check_hooks(void)
{
#ifdef PPROF_NO_HOOKS
    return pp_error_detail(PPROF_ENOTSUP, "this build has no lock hooks (libpprof_nohooks.a, sanitizer builds)");
#else
    return 0;
#endif
}

static int contention_start(pprof_recorder *r)
{
    contention_recorder *c = (contention_recorder *)r;
    int rc = check_hooks();
    if (rc)
        return rc;
    rc = pp_contention_join(c->block, c->cfg_rate, &c->turned_on);
    if (rc)
        return rc;
    c->snap = (pp_store_snap){0};
    int from_start = c->from_start;
    rc = from_start ? 0 : pp_store_snap_take(table_of(c), &c->snap);
    c->from_start = 0; /* only the first window */
    if (rc) {
        pp_contention_leave(c->block, c->turned_on);
        return rc;
    }
    if (from_start)
        pp_recorder_window_begin_at_start(r);
    else
        pp_recorder_window_begin(r);
    return 0;
}

static int contention_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    contention_recorder *c = (contention_recorder *)r;
    pp_store_snap now = {0};
    int rc = pp_store_snap_take(table_of(c), &now);
    if (rc && reopen)
        return rc;
    pprof_profile *p = out && !rc ? build(c, &c->snap, &now) : NULL;
    pp_recorder_window_end(r, p, reopen);
    pp_store_snap_free(&c->snap);
    if (reopen) {
        c->snap = now;
    } else {
        pp_store_snap_free(&now);
        pp_contention_leave(c->block, c->turned_on);
        c->turned_on = 0;
    }
    if (rc) /* a stop without its profile still ends the sampling */
        return rc;
    if (out && !p)
        return pp_fail(PPROF_ENOMEM);
    return out ? pp_recorder_finish(r, p, out) : 0;
}

static int contention_write_to(pprof_recorder *r, pprof_profile **out)
{
    contention_recorder *c = (contention_recorder *)r;
    int rc = check_hooks();
    if (rc)
        return rc;
    pp_store_snap now;
    rc = pp_store_snap_take(table_of(c), &now);
    if (rc)
        return rc;
    pprof_profile *p = build(c, NULL, &now);
    pp_store_snap_free(&now);
    if (!p)
        return pp_fail(PPROF_ENOMEM);
    p->time_nanos = pp_now_ns(CLOCK_REALTIME);
    return pp_recorder_finish(r, p, out);
}

/* The open window so far. */
static int contention_peek(pprof_recorder *r, pprof_profile **raw)
{
    contention_recorder *c = (contention_recorder *)r;
    pp_store_snap now;
    int rc = pp_store_snap_take(table_of(c), &now);
    if (rc)
        return rc;
    *raw = build(c, &c->snap, &now);
    pp_store_snap_free(&now);
    return *raw ? 0 : pp_fail(PPROF_ENOMEM);
}

static void contention_release(pprof_recorder *r)
{
    pp_store_snap_free(&((contention_recorder *)r)->snap);
}

static const pp_recorder_ops contention_ops = {.start = contention_start,
                                               .end = contention_end,
                                               .write_to = contention_write_to,
                                               .rate = contention_rate,
                                               .release = contention_release,
                                               .peek = contention_peek};

static int new_contention(int block, const pprof_contention_config *cfg, pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    int64_t rate = cfg ? cfg->rate : 0;
    if (rate < 0 || (!block && rate > 1000000000))
        return pp_error_detail(PPROF_EINVAL, "rate must be >= 0 (0: the rate in force), not %lld", (long long)rate);
    contention_recorder *c = (contention_recorder *)pp_recorder_new(sizeof *c, &contention_ops);
    if (!c)
        return PPROF_ENOMEM;
    c->block = block;
    c->cfg_rate = rate;
    c->from_start = cfg ? cfg->from_start : 0;
    *out = &c->base;
    return 0;
}

int pprof_mutex_recorder_new(const pprof_contention_config *cfg, pprof_recorder **out)
{
    return new_contention(0, cfg, out);
}

int pprof_block_recorder_new(const pprof_contention_config *cfg, pprof_recorder **out)
{
    return new_contention(1, cfg, out);
}
