/* recorder.c: the public recorder API and the CPU recorder.
 *
 * A recorder is configured once; start opens a window, snapshot closes it
 * and opens the next with no gap, stop closes it. Windows are pprof_profile
 * builders that the collector adds samples to, so closing a window is a
 * pointer swap under the collector lock followed by symbolization outside
 * it. Several CPU recorders share one sampler: the first sets the rate,
 * later ones join it (config rate 0 or the same rate) or fail with
 * PPROF_ERATE, naming the rate in force.
 */
#define _GNU_SOURCE
#include "collector.h"
#include "sampling/sampling.h"
#include "base/base.h"
#include "model/model.h"

#include <stdlib.h>
#include <time.h>

static int64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int pprof_cpu_recorder_new(const pprof_cpu_config *cfg, pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    pprof_cpu_config c = cfg ? *cfg : (pprof_cpu_config){0};
    if (c.hz < 0 || c.hz > PPROF_CPU_MAX_HZ)
        return pp_error_detail(PPROF_EINVAL, "hz must be from 1 to %d (0: the rate in force), not %lld",
                               PPROF_CPU_MAX_HZ, (long long)c.hz);
    if (c.max_frames < 0 || c.max_frames > PPROF_MAX_FRAMES)
        return pp_error_detail(PPROF_EINVAL, "max_frames must be from 1 to %d (0: 64), not %d",
                               PPROF_MAX_FRAMES, c.max_frames);
    pprof_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return pp_fail(PPROF_ENOMEM);
    r->kind = PP_KIND_CPU;
    r->cfg_hz = (int)c.hz;
    r->cfg_frames = c.max_frames;
    *out = r;
    return 0;
}

static pprof_profile *new_cpu_window(pprof_recorder *r)
{
    static const pprof_value_type types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
    return pp_profile_new(types, 2, (pprof_value_type){"cpu", "nanoseconds"}, r->period_ns);
}

/* Makes `next` the open window from now (collector lock held) and returns
 * the window it replaces with its duration set. */
static pprof_profile *swap_window_locked(pprof_recorder *r, pprof_profile *next)
{
    pprof_profile *p = r->window;
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (p)
        p->duration_nanos = now - r->window_mono_ns;
    if (next)
        next->time_nanos = p ? p->time_nanos + p->duration_nanos : clock_ns(CLOCK_REALTIME);
    r->window_mono_ns = now;
    r->window = next;
    return p;
}

/* Joins the sampler in force or starts it (collector lock held). */
static int join_sampler_locked(pprof_recorder *r)
{
    int hz = pp_cpu_hz();
    int frames = r->cfg_frames ? r->cfg_frames : PPROF_DEFAULT_MAX_FRAMES;
    if (hz) {
        if (r->cfg_hz && r->cfg_hz != hz)
            return pp_error_detail(PPROF_ERATE, "CPU profiling is running at %d Hz; ask for %d or 0", hz, hz);
        if (r->cfg_frames && r->cfg_frames != pp_cpu_max_frames())
            return pp_error_detail(PPROF_ERATE, "CPU profiling is running with max_frames %d",
                                   pp_cpu_max_frames());
        r->hz = hz;
        return 0;
    }
    hz = r->cfg_hz ? r->cfg_hz : pp_env_cpu_hz();
    if (hz == 0)
        return pp_error_detail(PPROF_ENOTSUP, "CPU profiling is off (LIBPPROF_CPU_HZ=0)");
    int rc = pp_cpu_enable(hz, frames);
    if (rc)
        return rc == PPROF_ESYS ? pp_error_detail(rc, "cannot create CPU timers") : rc;
    r->hz = hz;
    return 0;
}

int pprof_recorder_start(pprof_recorder *r)
{
    if (!r)
        return pp_fail(PPROF_EINVAL);
    if (r->running)
        return pp_fail(PPROF_EBUSY);
    if (pp_shutting_down())
        return pp_error_detail(PPROF_ESTATE, "the process is exiting");
    if (r->kind == PP_KIND_THREADS || r->kind == PP_KIND_THREADCREATE || r->kind == PP_KIND_CUSTOM)
        return pp_counts_start(r);
    if (r->kind == PP_KIND_MUTEX || r->kind == PP_KIND_BLOCK)
        return pp_contention_start(r);
    if (r->kind != PP_KIND_CPU)
        return pp_heap_recorder_start(r);
    pp_collector_lock();
    int rc = join_sampler_locked(r);
    if (rc == 0) {
        r->period_ns = 1000000000ll / r->hz;
        pprof_profile *w = new_cpu_window(r);
        swap_window_locked(r, w);
        rc = w ? pp_collector_attach_locked(r) : PPROF_ENOMEM;
        if (rc) {
            pprof_profile_free(r->window);
            r->window = NULL;
        }
        if (rc && pp_collector_detach_locked(r) == 0)
            pp_cpu_disable();
    }
    if (rc == 0)
        r->running = 1;
    pp_collector_unlock();
    return rc;
}

int pp_recorder_finish(pprof_profile *p, pprof_profile **out)
{
    if (!out) {
        pprof_profile_free(p);
        return 0;
    }
    int rc = pp_profile_finish(p);
    if (rc) {
        pprof_profile_free(p);
        *out = NULL;
        return rc;
    }
    *out = p;
    return 0;
}

int pprof_recorder_stop(pprof_recorder *r, pprof_profile **out)
{
    if (out)
        *out = NULL;
    if (!r)
        return pp_fail(PPROF_EINVAL);
    if (!r->running)
        return pp_error_detail(PPROF_ESTATE, "the recorder is not running");
    if (r->kind == PP_KIND_THREADS || r->kind == PP_KIND_THREADCREATE || r->kind == PP_KIND_CUSTOM)
        return pp_counts_end(r, 0, out);
    if (r->kind == PP_KIND_MUTEX || r->kind == PP_KIND_BLOCK)
        return pp_contention_end(r, 0, out);
    if (r->kind != PP_KIND_CPU)
        return pp_heap_recorder_end(r, 0, out);
    pp_collector_lock();
    if (pp_collector_detach_locked(r) == 0)
        pp_cpu_disable();
    pprof_profile *p = swap_window_locked(r, NULL);
    r->running = 0;
    pp_collector_unlock();
    return pp_recorder_finish(p, out);
}

int pprof_recorder_snapshot(pprof_recorder *r, pprof_profile **out)
{
    if (out)
        *out = NULL;
    if (!r)
        return pp_fail(PPROF_EINVAL);
    if (!r->running)
        return pp_error_detail(PPROF_ESTATE, "the recorder is not running");
    if (r->kind == PP_KIND_THREADS || r->kind == PP_KIND_THREADCREATE || r->kind == PP_KIND_CUSTOM)
        return pp_counts_end(r, 1, out);
    if (r->kind == PP_KIND_MUTEX || r->kind == PP_KIND_BLOCK)
        return pp_contention_end(r, 1, out);
    if (r->kind != PP_KIND_CPU)
        return pp_heap_recorder_end(r, 1, out);
    pprof_profile *next = new_cpu_window(r);
    if (!next)
        return pp_fail(PPROF_ENOMEM);
    pp_collector_lock();
    pp_collector_drain_locked();
    pprof_profile *p = swap_window_locked(r, next);
    pp_collector_unlock();
    return pp_recorder_finish(p, out);
}

int64_t pprof_recorder_rate(const pprof_recorder *r)
{
    if (r && (r->kind == PP_KIND_ALLOC || r->kind == PP_KIND_HEAP))
        return pprof_heap_rate();
    if (r && r->kind == PP_KIND_MUTEX)
        return pprof_mutex_fraction();
    if (r && r->kind == PP_KIND_BLOCK)
        return (int)pprof_block_rate();
    if (r && r->kind != PP_KIND_CPU)
        return 0;
    return r && r->running ? r->hz : 0;
}

void pprof_recorder_free(pprof_recorder *r)
{
    if (!r)
        return;
    if (r->running)
        pprof_recorder_stop(r, NULL);
    pp_heap_recorder_release(r);
    pprof_profile_free(r->count_base);
    free(r->cbase);
    free(r);
}
