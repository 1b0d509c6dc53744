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

typedef struct heap_recorder {
    pprof_recorder base;
    int flags;          /* PP_HEAP_* */
    int from_start;     /* the first window begins at process start */
    pp_heap_snap *snap; /* the counts at the open window's start */
} heap_recorder;

static int heap_available(void)
{
#ifdef PPROF_NO_HOOKS
    return pp_error_detail(PPROF_ENOTSUP, "this build has no malloc hooks (libpprof_nohooks.a, sanitizer builds)");
#else
    if (pp_heap_is_unpaired())
        return pp_error_detail(PPROF_ENOTSUP, "heap profiling is off: the allocator after libpprof defines malloc "
                                              "without its own free or memalign");
    if (!pprof_heap_rate())
        return pp_error_detail(PPROF_ENOTSUP, "heap profiling is off (LIBPPROF_HEAP_RATE=0)");
    return 0;
#endif
}

static void snap_free(pp_heap_snap *s)
{
    if (s) {
        pp_heap_snap_free(s);
        free(s);
    }
}

static int alloc_start(pprof_recorder *r)
{
    heap_recorder *h = (heap_recorder *)r;
    int rc = heap_available();
    if (rc)
        return rc;
    pp_heap_snap *base = calloc(1, sizeof *base);
    if (!base)
        return pp_fail(PPROF_ENOMEM);
    if (!h->from_start && pp_heap_snap_take(base) != 0) {
        free(base);
        return pp_fail(PPROF_ENOMEM);
    }
    if (h->from_start)
        pp_recorder_window_begin_at_start(r);
    else
        pp_recorder_window_begin(r);
    h->from_start = 0; /* only the first window */
    h->snap = base;
    return 0;
}

/* Ends the window (reopen: begins the next at the same instant). */
static int alloc_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    heap_recorder *h = (heap_recorder *)r;
    pp_heap_snap *now = calloc(1, sizeof *now);
    if (!now || pp_heap_snap_take(now) != 0) {
        free(now);
        return pp_fail(PPROF_ENOMEM);
    }
    pprof_profile *p = out ? pp_heap_build(h->snap, now, pprof_heap_rate(), h->flags) : NULL;
    pp_recorder_window_end(r, p, reopen);
    snap_free(h->snap);
    h->snap = reopen ? now : NULL;
    if (!reopen)
        snap_free(now);
    if (out && !p)
        return pp_fail(PPROF_ENOMEM);
    return pp_recorder_finish(r, p, out);
}

static int heap_write_to(pprof_recorder *r, pprof_profile **out)
{
    int rc = heap_available();
    if (rc)
        return rc;
    pp_heap_snap now;
    if (pp_heap_snap_take(&now) != 0)
        return pp_fail(PPROF_ENOMEM);
    pprof_profile *p = pp_heap_build(NULL, &now, pprof_heap_rate(), ((heap_recorder *)r)->flags);
    pp_heap_snap_free(&now);
    if (!p)
        return pp_fail(PPROF_ENOMEM);
    p->time_nanos = pp_now_ns(CLOCK_REALTIME);
    return pp_recorder_finish(r, p, out);
}

static int64_t heap_rate(const pprof_recorder *r)
{
    (void)r;
    return pprof_heap_rate();
}

static void heap_release(pprof_recorder *r)
{
    heap_recorder *h = (heap_recorder *)r;
    snap_free(h->snap);
    h->snap = NULL;
}

/* Allocations: windows only. The live heap: the state now only. */
static const pp_recorder_ops alloc_ops = {
    .start = alloc_start, .end = alloc_end, .rate = heap_rate, .release = heap_release};
static const pp_recorder_ops heap_ops = {.write_to = heap_write_to, .rate = heap_rate};

static int new_heap_recorder(int windowed, const pprof_heap_config *cfg, pprof_recorder **out)
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
        if (!windowed)
            return pp_error_detail(PPROF_EINVAL, "inuse_change needs a window: use an allocation recorder");
        flags |= PP_HEAP_INUSE_CHANGE;
    }
    if (c.default_type) {
        if (!strcmp(c.default_type, "alloc_space"))
            flags |= PP_HEAP_ALLOCS;
        else if (strcmp(c.default_type, "inuse_space"))
            return pp_error_detail(PPROF_EINVAL, "default_type must be \"alloc_space\" or \"inuse_space\"");
    } else if (windowed) {
        flags |= PP_HEAP_ALLOCS;
    }
    int64_t in_force = pprof_heap_rate();
    if (c.rate && in_force && c.rate != in_force)
        return pp_error_detail(PPROF_ERATE, "heap sampling runs at a rate of %lld bytes; ask for %lld or 0",
                               (long long)in_force, (long long)in_force);
    heap_recorder *h = (heap_recorder *)pp_recorder_new(sizeof *h, windowed ? &alloc_ops : &heap_ops);
    if (!h)
        return PPROF_ENOMEM;
    h->flags = flags;
    h->from_start = c.from_start;
    *out = &h->base;
    return 0;
}

int pprof_alloc_recorder_new(const pprof_heap_config *cfg, pprof_recorder **out)
{
    return new_heap_recorder(1, cfg, out);
}

int pprof_heap_recorder_new(const pprof_heap_config *cfg, pprof_recorder **out)
{
    return new_heap_recorder(0, cfg, out);
}
