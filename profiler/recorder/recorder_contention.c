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

static int64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static pp_ctab *table_of(const pprof_recorder *r)
{
    return r->kind == PP_KIND_MUTEX ? &pp_mutex_tab : &pp_block_tab;
}

static int new_contention(pp_kind kind, const pprof_contention_config *cfg, pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    int64_t rate = cfg ? cfg->rate : 0;
    if (rate < 0 || (kind == PP_KIND_MUTEX && rate > 1000000000))
        return pp_error_detail(PPROF_EINVAL, "rate must be >= 0 (0: the rate in force), not %lld", (long long)rate);
    pprof_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return pp_fail(PPROF_ENOMEM);
    r->kind = kind;
    r->cfg_rate = rate;
    r->from_start = cfg ? cfg->from_start : 0;
    *out = r;
    return 0;
}

int pprof_mutex_recorder_new(const pprof_contention_config *cfg, pprof_recorder **out)
{
    return new_contention(PP_KIND_MUTEX, cfg, out);
}

int pprof_block_recorder_new(const pprof_contention_config *cfg, pprof_recorder **out)
{
    return new_contention(PP_KIND_BLOCK, cfg, out);
}

static pprof_profile *build(pprof_recorder *r, const pp_ccount *base, size_t nbase, const pp_ccount *now,
                            size_t nnow)
{
    pprof_profile *p = pp_ctab_build(table_of(r), base, nbase, now, nnow);
    int64_t rate = r->kind == PP_KIND_MUTEX ? pp_mutex_fraction() : pp_block_rate();
    char c[96];
    /* The first comment names the kind and rate (the text format reads it). */
    snprintf(c, sizeof c, r->kind == PP_KIND_MUTEX ? "mutex profile, sampling period %lld"
                                                   : "block profile, rate %lld ns", (long long)rate);
    if (p)
        pp_profile_add_comment(p, c);
    if (p && !rate)
        pp_profile_add_comment(p, r->kind == PP_KIND_MUTEX
                                      ? "mutex profiling is off (LIBPPROF_MUTEX_FRACTION=0)"
                                      : "block profiling is off (LIBPPROF_BLOCK_RATE=0)");
    return p;
}

static int check_hooks(void)
{
#ifdef PPROF_NO_HOOKS
    return pp_error_detail(PPROF_ENOTSUP, "this build has no lock hooks (sanitizer builds intercept locks)");
#else
    return 0;
#endif
}

int pp_contention_start(pprof_recorder *r)
{
    int rc = check_hooks();
    if (rc)
        return rc;
    rc = pp_contention_join(r->kind == PP_KIND_BLOCK, r->cfg_rate, &r->turned_on);
    if (rc)
        return rc;
    r->cbase = NULL;
    r->ncbase = 0;
    rc = r->from_start ? 0 : pp_ctab_snap(table_of(r), &r->cbase, &r->ncbase);
    r->from_start = 0; /* only the first window */
    if (rc) {
        pp_contention_leave(r->kind == PP_KIND_BLOCK, r->turned_on);
        return rc;
    }
    r->window_mono_ns = now_ns(CLOCK_MONOTONIC);
    r->window_real_ns = now_ns(CLOCK_REALTIME);
    r->running = 1;
    return 0;
}

int pp_contention_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    if (out)
        *out = NULL;
    pp_ccount *now;
    size_t n;
    int rc = pp_ctab_snap(table_of(r), &now, &n);
    if (rc)
        return rc;
    pprof_profile *p = out ? build(r, r->cbase, r->ncbase, now, n) : NULL;
    if (p) {
        p->time_nanos = r->window_real_ns;
        p->duration_nanos = now_ns(CLOCK_MONOTONIC) - r->window_mono_ns;
    }
    free(r->cbase);
    r->cbase = NULL;
    if (reopen) {
        r->cbase = now;
        r->ncbase = n;
        r->window_mono_ns = now_ns(CLOCK_MONOTONIC);
        r->window_real_ns = now_ns(CLOCK_REALTIME);
    } else {
        free(now);
        pp_contention_leave(r->kind == PP_KIND_BLOCK, r->turned_on);
        r->turned_on = 0;
        r->running = 0;
    }
    if (out && !p)
        return pp_fail(PPROF_ENOMEM);
    return out ? pp_recorder_finish(p, out) : 0;
}

int pp_contention_write_to(pprof_recorder *r, pprof_profile **out)
{
    int rc = check_hooks();
    if (rc)
        return rc;
    pp_ccount *now;
    size_t n;
    rc = pp_ctab_snap(table_of(r), &now, &n);
    if (rc)
        return rc;
    pprof_profile *p = build(r, NULL, 0, now, n);
    free(now);
    if (!p)
        return pp_fail(PPROF_ENOMEM);
    p->time_nanos = now_ns(CLOCK_REALTIME);
    return pp_recorder_finish(p, out);
}
