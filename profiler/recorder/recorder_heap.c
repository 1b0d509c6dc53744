/* recorder_heap.c: the allocation (windowed) and heap (instant) recorders.
 *
 * Both read the heap profiler's raw records (heap_table.c); neither keeps
 * anything but a copy of the counts at its window's start, so any number
 * may run at once and none costs the hooks anything. The sampling rate is
 * the process's (fixed at start-up); a recorder configured with another
 * fails with PPROF_ERATE.
 *
 * Three views of the live heap besides "now": its peak (heap_peak.c: since
 * start-up, or a window's, which holds a peak slot while open), the
 * objects of an age (the live table stamps each sampled object), split
 * into age buckets by a label, and a window's objects still live at its
 * end.
 */
#include "base/base.h"
#include "heap/heap.h"
#include "model/model.h"
#include "recorder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct heap_recorder {
    pprof_recorder base;
    int flags;          /* PP_HEAP_* */
    int from_start;     /* the first window begins at process start */
    pp_heap_snap *snap; /* the counts at the open window's start */
    int peak;           /* the peak instead of the end */
    int slot;           /* the open window's peak slot, -1 for none */
    int min_age, max_age, window_live;
} heap_recorder;

/* The peak of `slot` as a profile, with its time in a comment. */
static pprof_profile *peak_profile(int slot)
{
    pp_heap_snap s;
    int64_t when;
    double bytes;
    if (pp_heap_peak_snap(slot, &s, &when, &bytes) != 0)
        return NULL;
    pprof_profile *p = pp_heap_build(NULL, &s, pprof_heap_rate(), PP_HEAP_INUSE_ONLY);
    pp_heap_snap_free(&s);
    time_t t = (time_t)(when / 1000000000);
    struct tm tm;
    char line[160], stamp[40];
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(line, sizeof line, "peak of the live heap: %.0f bytes (estimated from the samples) at %s%s", bytes,
             stamp, slot ? " (within the window)" : " (since start-up)");
    if (p)
        pp_profile_add_comment(p, line);
    return p;
}

/* The live objects sampled between max_age and min_age seconds ago, by
 * age bucket. */
static pprof_profile *age_profile(int min_age, int max_age)
{
    static const char *const names[] = {"<1m", "1m-10m", "10m-1h", "1h-1d", ">1d"};
    static const int64_t upto[] = {60, 600, 3600, 86400, INT64_MAX / 2000000000};
    enum { N = sizeof names / sizeof *names };
    int64_t now = pp_now_ns(CLOCK_MONOTONIC), s = 1000000000;
    int64_t lo_age = (int64_t)min_age * s, hi_age = max_age ? (int64_t)max_age * s : INT64_MAX / 2;
    pp_heap_snap snaps[N];
    const pp_heap_snap *ptrs[N];
    const char *labels[N];
    size_t n = 0;
    pprof_profile *p = NULL;
    for (int b = 0; b < N; b++) {
        int64_t from = b ? upto[b - 1] * s : 0, to = upto[b] * s; /* ages in [from, to) */
        from = from > lo_age ? from : lo_age;
        to = to < hi_age ? to : hi_age;
        if (from >= to)
            continue;
        if (pp_heap_age_snap(now - to, now - from, &snaps[n]) != 0)
            goto out;
        ptrs[n] = &snaps[n];
        labels[n++] = names[b];
    }
    p = pp_heap_build_labelled(ptrs, "age", labels, n, pprof_heap_rate());
out:
    for (size_t i = 0; i < n; i++)
        pp_heap_snap_free(&snaps[i]);
    return p;
}

/* In now, in-use counts only the objects sampled since the window began
 * (at mono_ns): each record's frees are set so that allocations - frees
 * is that number. */
static int only_window_live(pp_heap_snap *now, int64_t mono_ns)
{
    pp_heap_snap fresh;
    if (pp_heap_age_snap(mono_ns, INT64_MAX, &fresh) != 0)
        return PPROF_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < now->n; i++) {
        while (k < fresh.n && fresh.c[k].rec < now->c[i].rec)
            k++;
        int64_t live = k < fresh.n && fresh.c[k].rec == now->c[i].rec ? fresh.c[k].c[0] : 0;
        now->c[i].c[1] = now->c[i].c[0] - live;
    }
    pp_heap_snap_free(&fresh);
    return 0;
}

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
    if (h->peak && (h->slot = pp_heap_peak_begin()) < 0) {
        pp_heap_snap_free(base);
        free(base);
        return pp_error_detail(PPROF_EBUSY, "every peak slot is taken (%d windows with peak=1 at once at most)",
                               PP_HEAP_PEAK_SLOTS - 1);
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
    int failed = !now || pp_heap_snap_take(now) != 0;
    if (failed) {
        free(now);
        now = NULL;
        if (reopen)
            return pp_fail(PPROF_ENOMEM);
    }
    pprof_profile *p = NULL;
    if (failed) {
        /* a stop without its profile still ends the window and its peak */
    } else if (out && h->peak) {
        p = peak_profile(h->slot);
    } else if (out && h->window_live) { /* on a copy: `now` is the next window's base */
        pp_heap_snap live = {malloc((now->n ? now->n : 1) * sizeof *now->c), now->n};
        if (live.c && (memcpy(live.c, now->c, now->n * sizeof *now->c), only_window_live(&live, r->window_mono_ns) == 0))
            p = pp_heap_build(h->snap, &live, pprof_heap_rate(), h->flags);
        pp_heap_snap_free(&live);
    } else if (out) {
        p = pp_heap_build(h->snap, now, pprof_heap_rate(), h->flags);
    }
    if (h->peak && reopen) {
        pp_heap_peak_restart(h->slot); /* in place: no other window can take it meanwhile */
    } else if (h->peak) {
        pp_heap_peak_end(h->slot);
        h->slot = -1;
    }
    pp_recorder_window_end(r, p, reopen);
    snap_free(h->snap);
    h->snap = reopen ? now : NULL;
    if (!reopen)
        snap_free(now);
    if ((out || failed) && !p)
        return pp_fail(PPROF_ENOMEM);
    return pp_recorder_finish(r, p, out);
}

/* The open window so far (plain windows: not peak, not window_live). */
static int alloc_peek(pprof_recorder *r, pprof_profile **raw)
{
    heap_recorder *h = (heap_recorder *)r;
    pp_heap_snap now;
    if (h->peak || h->window_live)
        return pp_fail(PPROF_ENOTSUP);
    if (pp_heap_snap_take(&now) != 0)
        return pp_fail(PPROF_ENOMEM);
    *raw = pp_heap_build(h->snap, &now, pprof_heap_rate(), h->flags);
    pp_heap_snap_free(&now);
    return *raw ? 0 : pp_fail(PPROF_ENOMEM);
}

static int heap_write_to(pprof_recorder *r, pprof_profile **out)
{
    int rc = heap_available();
    if (rc)
        return rc;
    heap_recorder *h = (heap_recorder *)r;
    pprof_profile *p;
    if (h->peak) {
        p = peak_profile(0);
    } else if (h->min_age || h->max_age) {
        p = age_profile(h->min_age, h->max_age);
    } else {
        pp_heap_snap now;
        if (pp_heap_snap_take(&now) != 0)
            return pp_fail(PPROF_ENOMEM);
        p = pp_heap_build(NULL, &now, pprof_heap_rate(), h->flags);
        pp_heap_snap_free(&now);
    }
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
    if (h->slot >= 0)
        pp_heap_peak_end(h->slot);
    h->slot = -1;
}

/* Allocations: windows only. The live heap: the state now only. */
static const pp_recorder_ops alloc_ops = {
    .start = alloc_start, .end = alloc_end, .rate = heap_rate, .release = heap_release, .peek = alloc_peek};
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
    if (c.min_age < 0 || c.max_age < 0 || (c.max_age && c.min_age > c.max_age))
        return pp_error_detail(PPROF_EINVAL, "min_age and max_age are seconds, 0 or more, min_age at most max_age");
    if ((c.min_age || c.max_age) && (windowed || c.peak))
        return pp_error_detail(PPROF_EINVAL, "min_age and max_age are for the live heap now: not with a window or peak");
    if (c.window_live && (!windowed || c.peak))
        return pp_error_detail(PPROF_EINVAL, "window_live needs a window (an allocation recorder) and no peak");
    int64_t in_force = pprof_heap_rate();
    if (c.rate && in_force && c.rate != in_force)
        return pp_error_detail(PPROF_ERATE, "heap sampling runs at a rate of %lld bytes; ask for %lld or 0",
                               (long long)in_force, (long long)in_force);
    heap_recorder *h = (heap_recorder *)pp_recorder_new(sizeof *h, windowed ? &alloc_ops : &heap_ops);
    if (!h)
        return PPROF_ENOMEM;
    h->flags = flags;
    h->from_start = c.from_start;
    h->peak = c.peak;
    h->slot = -1;
    h->min_age = c.min_age;
    h->max_age = c.max_age;
    h->window_live = c.window_live;
    *out = &h->base;
    return 0;
}

int pprof_alloc_recorder_new(const pprof_heap_config *cfg, pprof_recorder **out)
{
    return new_heap_recorder(1, cfg, out);
}

int pp_alloc_recorder_new_deltas(pprof_recorder **out)
{
    int rc = new_heap_recorder(1, &(pprof_heap_config){.from_start = 1}, out);
    if (rc == 0)
        ((heap_recorder *)*out)->flags |= PP_HEAP_INUSE_DELTA;
    return rc;
}

int pprof_heap_recorder_new(const pprof_heap_config *cfg, pprof_recorder **out)
{
    return new_heap_recorder(0, cfg, out);
}
