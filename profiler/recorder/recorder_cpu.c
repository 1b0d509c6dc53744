/* recorder_cpu.c: the CPU recorder.
 *
 * Windows are pprof_profile builders that the collector adds samples to,
 * so closing a window is a pointer swap under the collector lock followed
 * by symbolization outside it. Several CPU recorders share one sampler,
 * which runs at the highest rate they ask for: a recorder gets its
 * samples at its own rate or more, each weighing its CPU time (the
 * window's comments say when the rate was not its own).
 */
#define _GNU_SOURCE
#include "collector.h"
#include "cpu/cpu.h"
#include "base/base.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cpu_recorder {
    pprof_recorder base;
    int cfg_hz, cfg_frames; /* as configured (0: join / default) */
    int cfg_trace_id;       /* as configured (0: LIBPPROF_TRACE_ID_LABEL) */
    int hz;                 /* in effect while running */
    pp_cpu_window w;        /* the open window (collector lock) */
    int exiting;            /* it was opened as the process exits (cpu_start_exiting) */
    uint64_t unlisted;      /* pp_cpu_unlisted when the window opened */
} cpu_recorder;

static pprof_profile *new_cpu_window(cpu_recorder *c)
{
    static const pprof_value_type types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    return pp_profile_new(types, 2, (pprof_value_type){"cpu", "nanoseconds"}, c->w.period_ns);
}

/* Makes `next` the open window from now (collector lock held) and returns
 * the window it replaces with its duration set. */
static pprof_profile *swap_window_locked(cpu_recorder *c, pprof_profile *next)
{
    pprof_profile *p = c->w.profile;
    int64_t now = pp_now_ns(CLOCK_MONOTONIC);
    uint64_t unlisted = pp_cpu_unlisted();
    if (p && unlisted > c->unlisted)
        pp_profile_add_comment(p, "the thread list (/proc/self/task) could not be read (no file descriptor left, "
                                  "or /proc out of reach after a chroot): only the main thread and threads "
                                  "started through pthread_create were sampled");
    if (p)
        pp_profile_say_rates(p, c->hz, c->w.hz_min, c->w.hz_max, "cpu/nanoseconds is exact");
    if (p && c->w.at_exit_ns) {
        char text[240];
        snprintf(text, sizeof text, "%.1f ms (%.1f%% of the CPU time) are of threads that exited before their first "
                 "sample: counted at their exit, on the function each started (the frame \"[not sampled: ...]\")",
                 c->w.at_exit_ns / 1e6, c->w.ns ? 100.0 * (double)c->w.at_exit_ns / (double)c->w.ns : 0.0);
        pp_profile_add_comment(p, text);
    }
    c->w.hz_min = c->w.hz_max = 0;
    c->w.ns = c->w.at_exit_ns = 0;
    c->unlisted = unlisted;
    if (p)
        p->duration_nanos = now - c->base.window_mono_ns;
    if (next)
        next->time_nanos = p ? p->time_nanos + p->duration_nanos : pp_now_ns(CLOCK_REALTIME);
    c->base.window_mono_ns = now;
    c->w.profile = next;
    return p;
}

/* Starts the sampler, or joins it and raises its rate to the recorder's
 * (collector lock held). */
static int join_sampler_locked(cpu_recorder *c)
{
    int hz = c->cfg_hz ? c->cfg_hz : pp_env_cpu_hz();
    if (hz == 0)
        return pp_error_detail(PPROF_ENOTSUP, "CPU profiling is off (LIBPPROF_CPU_HZ=0)");
    int frames = c->cfg_frames ? c->cfg_frames : PPROF_DEFAULT_MAX_FRAMES;
    int running = pp_cpu_hz();
    if (running && c->cfg_frames && c->cfg_frames != pp_cpu_max_frames())
        return pp_error_detail(PPROF_ERATE, "CPU profiling is running with max_frames %d", pp_cpu_max_frames());
    int rc = !running ? pp_cpu_enable(hz, frames) : hz > running ? pp_cpu_set_rate(hz) : 0;
    if (rc)
        return rc == PPROF_ESYS ? pp_error_detail(rc, "cannot create CPU timers") : rc;
    c->hz = hz;
    return 0;
}

/* After a recorder left: the sampler runs at the highest rate the others
 * ask for, or stops (collector lock held). */
static void settle_sampler_locked(void)
{
    int hz = pp_collector_rate_locked();
    if (!hz)
        pp_cpu_disable();
    else if (hz < pp_cpu_hz())
        pp_cpu_set_rate(hz);
}

static int cpu_start(pprof_recorder *r)
{
    cpu_recorder *c = (cpu_recorder *)r;
    pp_collector_lock();
    PP_ASSERT(!r->running && !c->w.profile); /* a stopped recorder has no window to lose */
    uint64_t unlisted = pp_cpu_unlisted(); /* the sampler's start lists the threads */
    int rc = join_sampler_locked(c);
    if (rc == 0) {
        c->w.hz = c->hz;
        c->w.period_ns = 1000000000ll / c->hz;
        c->w.trace_id = c->cfg_trace_id ? c->cfg_trace_id > 0 : pp_env_trace_id_label();
        c->w.units = r->units;
        pprof_profile *w = new_cpu_window(c);
        swap_window_locked(c, w);
        c->unlisted = unlisted;
        rc = w ? pp_collector_attach_locked(&c->w) : pp_fail(PPROF_ENOMEM);
        if (rc) {
            pprof_profile_free(c->w.profile);
            c->w.profile = NULL;
        }
        if (rc) {
            pp_collector_detach_locked(&c->w);
            settle_sampler_locked();
        }
    }
    if (rc == 0)
        r->running = 1;
    pp_collector_unlock();
    return rc;
}

/* A window of an exiting process: no sampler to join (its timers are
 * gone); it holds what pprof_recorder_add_unsampled_cpu adds (a tree's
 * member asked for the rest of a window as it ends). */
static int cpu_start_exiting(pprof_recorder *r)
{
    cpu_recorder *c = (cpu_recorder *)r;
    c->hz = c->cfg_hz ? c->cfg_hz : pp_env_cpu_hz();
    if (c->hz <= 0)
        return pp_error_detail(PPROF_ESTATE, "the process is exiting");
    pp_collector_lock();
    c->w.hz = c->hz;
    c->w.period_ns = 1000000000ll / c->hz;
    pprof_profile *w = new_cpu_window(c);
    if (w) {
        swap_window_locked(c, w);
        c->exiting = 1;
        r->running = 1;
    }
    pp_collector_unlock();
    return w ? 0 : pp_fail(PPROF_ENOMEM);
}

static int cpu_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    cpu_recorder *c = (cpu_recorder *)r;
    pprof_profile *next = NULL;
    if (c->exiting) { /* attached to no collector, no sampler */
        pp_collector_lock();
        pprof_profile *p = swap_window_locked(c, NULL);
        r->running = 0;
        c->exiting = 0;
        pp_collector_unlock();
        return pp_recorder_finish(r, p, out);
    }
    if (reopen && !(next = new_cpu_window(c)))
        return pp_fail(PPROF_ENOMEM);
    pp_cpu_flush(); /* the threads' time since their last signals is this window's */
    pp_collector_lock();
    if (reopen) {
        pp_collector_drain_locked();
    } else {
        pp_collector_detach_locked(&c->w);
        settle_sampler_locked();
        r->running = 0;
    }
    pprof_profile *p = swap_window_locked(c, next);
    pp_collector_unlock();
    return pp_recorder_finish(r, p, out);
}

static const pp_recorder_ops cpu_ops;

int pp_cpu_recorder_cut(pprof_recorder *r, pprof_profile **raw)
{
    cpu_recorder *c = (cpu_recorder *)r;
    *raw = NULL;
    if (r->ops != &cpu_ops || !r->running || c->exiting)
        return pp_fail(PPROF_ESTATE);
    pprof_profile *next = new_cpu_window(c);
    if (!next)
        return pp_fail(PPROF_ENOMEM);
    pp_cpu_flush();
    pp_collector_lock();
    pp_collector_drain_locked();
    *raw = swap_window_locked(c, next);
    pp_collector_unlock();
    return 0;
}

int pp_cpu_recorder_peek(pprof_recorder *r, int (*fn)(const pprof_profile *w, int64_t dur_ns, void *arg), void *arg)
{
    cpu_recorder *c = (cpu_recorder *)r;
    if (r->ops != &cpu_ops || !r->running || c->exiting)
        return pp_fail(PPROF_ESTATE);
    pp_collector_lock();
    pp_collector_drain_locked();
    int rc = fn(c->w.profile, pp_now_ns(CLOCK_MONOTONIC) - c->base.window_mono_ns, arg);
    pp_collector_unlock();
    return rc;
}

int pprof_recorder_add_unsampled_cpu(pprof_recorder *r, uint64_t ns)
{
    cpu_recorder *c = (cpu_recorder *)r;
    if (!r || r->ops != &cpu_ops)
        return pp_error_detail(PPROF_EINVAL, "not a CPU recorder");
    pp_collector_lock();
    int rc = r->running && c->w.profile ? 0 : pp_error_detail(PPROF_ESTATE, "the recorder is not running");
    if (rc == 0 && ns > 0) {
        uint64_t pc = PP_PC_BEFORE;
        uint64_t period = (uint64_t)c->w.period_ns;
        int64_t v[2] = {(int64_t)((ns + period / 2) / period), (int64_t)ns};
        rc = pp_profile_add(c->w.profile, &pc, 1, v, NULL, 0);
    }
    pp_collector_unlock();
    return rc;
}

static int64_t cpu_rate(const pprof_recorder *r)
{
    return r->running ? ((const cpu_recorder *)r)->hz : 0;
}

static const pp_recorder_ops cpu_ops = {
    .start = cpu_start, .start_exiting = cpu_start_exiting, .end = cpu_end, .rate = cpu_rate};

int pp_recorder_check_new(pprof_recorder **out, int64_t hz, int max)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    if (hz < 0 || hz > max)
        return pp_error_detail(PPROF_EINVAL, "hz must be from 1 to %d (0: the rate in force), not %lld", max,
                               (long long)hz);
    return 0;
}

int pprof_cpu_recorder_new(const pprof_cpu_config *cfg, pprof_recorder **out)
{
    pprof_cpu_config c = cfg ? *cfg : (pprof_cpu_config){0};
    int rc = pp_recorder_check_new(out, c.hz, PPROF_CPU_MAX_HZ);
    if (rc)
        return rc;
    if (c.max_frames < 0 || c.max_frames > PPROF_MAX_FRAMES)
        return pp_error_detail(PPROF_EINVAL, "max_frames must be from 1 to %d (0: 64), not %d",
                               PPROF_MAX_FRAMES, c.max_frames);
    if (c.trace_id_label < -1 || c.trace_id_label > 1)
        return pp_error_detail(PPROF_EINVAL, "trace_id_label must be 1, -1 or 0 (the default), not %d",
                               c.trace_id_label);
    cpu_recorder *r = (cpu_recorder *)pp_recorder_new(sizeof *r, &cpu_ops);
    if (!r)
        return PPROF_ENOMEM;
    r->cfg_hz = (int)c.hz;
    r->cfg_frames = c.max_frames;
    r->cfg_trace_id = c.trace_id_label;
    *out = &r->base;
    return 0;
}
