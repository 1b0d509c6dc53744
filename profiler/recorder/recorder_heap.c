/* recorder_heap.c: the allocation (windowed) and heap (instant) recorders.
 *
 * Both read the heap profiler's raw records (heap_table.c); neither keeps
 * anything but a copy of the counts at its window's start, so any number
 * may run at once and none costs the hooks anything. The sampling rate is
 * the process's (fixed at start-up); a recorder configured with another
 * fails with PPROF_ERATE.
 */
#include "base/base.h"
#include "heap/heap.h"
#include "model/model.h"
#include "recorder.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int new_heap_recorder(pp_kind kind, const pprof_heap_config *cfg, pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    pprof_heap_config c = cfg ? *cfg : (pprof_heap_config){0};
    if (c.rate < 0)
        return pp_error_detail(PPROF_EINVAL, "rate must be positive (0: the rate in force), not %lld",
                               (long long)c.rate);
    int flags = c.raw ? PP_HEAP_RAW : 0;
    if (c.inuse_change) {
        if (kind != PP_KIND_ALLOC)
            return pp_error_detail(PPROF_EINVAL, "inuse_change needs a window: use an allocation recorder");
        flags |= PP_HEAP_INUSE_CHANGE;
    }
    if (c.default_type) {
        if (!strcmp(c.default_type, "alloc_space"))
            flags |= PP_HEAP_ALLOCS;
        else if (strcmp(c.default_type, "inuse_space"))
            return pp_error_detail(PPROF_EINVAL, "default_type must be \"alloc_space\" or \"inuse_space\"");
    } else if (kind == PP_KIND_ALLOC) {
        flags |= PP_HEAP_ALLOCS;
    }
    int64_t in_force = pprof_heap_rate();
    if (c.rate && in_force && c.rate != in_force)
        return pp_error_detail(PPROF_ERATE, "heap sampling runs at a rate of %lld bytes; ask for %lld or 0",
                               (long long)in_force, (long long)in_force);
    pprof_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return pp_fail(PPROF_ENOMEM);
    r->kind = kind;
    r->heap_flags = flags;
    r->from_start = c.from_start;
    *out = r;
    return 0;
}

int pprof_alloc_recorder_new(const pprof_heap_config *cfg, pprof_recorder **out)
{
    return new_heap_recorder(PP_KIND_ALLOC, cfg, out);
}

int pprof_heap_recorder_new(const pprof_heap_config *cfg, pprof_recorder **out)
{
    return new_heap_recorder(PP_KIND_HEAP, cfg, out);
}

static int heap_available(void)
{
#ifdef PPROF_NO_HOOKS
    return pp_error_detail(PPROF_ENOTSUP, "this build has no malloc hooks (sanitizer builds replace malloc)");
#else
    if (!pprof_heap_rate())
        return pp_error_detail(PPROF_ENOTSUP, "heap profiling is off (LIBPPROF_HEAP_RATE=0)");
    return 0;
#endif
}

int pp_heap_recorder_start(pprof_recorder *r)
{
    if (r->kind != PP_KIND_ALLOC)
        return pp_error_detail(PPROF_ENOTSUP, "a heap recorder is instant: use pprof_recorder_write_to");
    int rc = heap_available();
    if (rc)
        return rc;
    pp_heap_snap *base = calloc(1, sizeof *base);
    if (!base)
        return pp_fail(PPROF_ENOMEM);
    if (!r->from_start && pp_heap_snap_take(base) != 0) {
        free(base);
        return pp_fail(PPROF_ENOMEM);
    }
    r->from_start = 0; /* only the first window */
    r->base = base;
    r->window_mono_ns = now_ns(CLOCK_MONOTONIC);
    r->window_real_ns = now_ns(CLOCK_REALTIME);
    r->running = 1;
    return 0;
}

/* Ends the window (reopen: begins the next at the same instant). */
int pp_heap_recorder_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    if (out)
        *out = NULL;
    pp_heap_snap *now = calloc(1, sizeof *now);
    if (!now || pp_heap_snap_take(now) != 0) {
        free(now);
        return pp_fail(PPROF_ENOMEM);
    }
    pprof_profile *p = out ? pp_heap_build(r->base, now, pprof_heap_rate(), r->heap_flags) : NULL;
    int64_t mono = now_ns(CLOCK_MONOTONIC), real = now_ns(CLOCK_REALTIME);
    if (p) {
        p->time_nanos = r->window_real_ns;
        p->duration_nanos = mono - r->window_mono_ns;
    }
    pp_heap_snap_free(r->base);
    free(r->base);
    r->base = NULL;
    if (reopen) {
        r->base = now;
        r->window_mono_ns = mono;
        r->window_real_ns = real;
    } else {
        pp_heap_snap_free(now);
        free(now);
        r->running = 0;
    }
    if (out && !p)
        return pp_fail(PPROF_ENOMEM);
    return pp_recorder_finish(p, out);
}

void pp_heap_recorder_release(pprof_recorder *r)
{
    if (r->base) {
        pp_heap_snap_free(r->base);
        free(r->base);
        r->base = NULL;
    }
}

int pprof_recorder_write_to(pprof_recorder *r, pprof_profile **out)
{
    if (!r || !out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    if (r->kind == PP_KIND_THREADS || r->kind == PP_KIND_THREADCREATE || r->kind == PP_KIND_CUSTOM)
        return pp_counts_write_to(r, out);
    if (r->kind == PP_KIND_MUTEX || r->kind == PP_KIND_BLOCK)
        return pp_contention_write_to(r, out);
    if (r->kind != PP_KIND_HEAP)
        return pp_error_detail(PPROF_ENOTSUP, "a windowed recorder: use start, snapshot and stop");
    int rc = heap_available();
    if (rc)
        return rc;
    pp_heap_snap now;
    if (pp_heap_snap_take(&now) != 0)
        return pp_fail(PPROF_ENOMEM);
    pprof_profile *p = pp_heap_build(NULL, &now, pprof_heap_rate(), r->heap_flags);
    pp_heap_snap_free(&now);
    if (!p)
        return pp_fail(PPROF_ENOMEM);
    p->time_nanos = now_ns(CLOCK_REALTIME);
    return pp_recorder_finish(p, out);
}
