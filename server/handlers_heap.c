/* handlers_heap.c: the heap and memory endpoints, on the public heap and
 * memory recorders.
 *
 *   heap, allocs        the live heap now and every sampled allocation
 *                       since start-up; they differ only in the sample type
 *                       pprof shows first (inuse_space / alloc_space)
 *   ...?seconds=N       a window: the allocations of the next N seconds
 *                       and the live heap at its end (not a difference)
 *   ...?debug=1         Go's text format, values as sampled (not scaled)
 *   allocs?last=N, from=T&until=T
 *                       the allocations of a span of the past and the live
 *                       heap at its end, from the history
 *   heap?peak=1         the live heap at its highest since start-up (with
 *                       seconds=N: within the window)
 *   heap?min_age=S, max_age=S
 *                       the live objects sampled at least / at most S
 *                       seconds ago, labelled with their age's bucket
 *   heap?seconds=N&window_live=1
 *                       in-use values of the objects allocated in the
 *                       window and still live at its end
 *   delta_heap          godeltaprof's stateful endpoint: the change since
 *                       the previous call (the first returns everything),
 *                       in-use values live. One state per process: two
 *                       scrapers of it take each other's deltas.
 *   memory              the whole resident set, by what holds it;
 *                       ?seconds=N: the set at the window's end and its
 *                       change over the window
 */
#include "endpoints.h"
#include "query.h"

#include <string.h>

/* The non-negative integer parameter `key` into *v (0 when absent); 0, or
 * -1 after answering 400. */
static int int_param(pp_req *q, const char *key, int *v)
{
    char s[32];
    long long n = 0;
    *v = 0;
    if (!pp_query_find(q->req->query, key, s, sizeof s))
        return 0;
    if (pp_parse_int(s, strlen(s), &n) != 0 || n < 0) {
        pp_reply_error(q, 400, "%s must be a whole number of 0 or more, not \"%s\"", key, s);
        return -1;
    }
    *v = (int)n;
    return 0;
}

static int serve(pp_req *q, const char *default_type, const char *disposition, const char *delta_disposition)
{
    int text = q->q.has_debug && q->q.debug > 0;
    if (text && q->q.has_seconds)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    pprof_heap_config cfg = {.raw = text, .default_type = default_type};
    if (int_param(q, "peak", &cfg.peak) || int_param(q, "min_age", &cfg.min_age) ||
        int_param(q, "max_age", &cfg.max_age) || int_param(q, "window_live", &cfg.window_live))
        return 0;
    int views = (cfg.peak != 0) + (cfg.min_age || cfg.max_age) + (cfg.window_live != 0);
    if (views > 1)
        return pp_reply_error(q, 400, "peak, min_age/max_age and window_live are separate views: ask for one");
    if ((cfg.min_age || cfg.max_age) && q->q.has_seconds)
        return pp_reply_error(q, 400, "min_age and max_age describe the live heap now: not with seconds");
    if (cfg.window_live && !q->q.has_seconds)
        return pp_reply_error(q, 400, "window_live needs seconds=N");
    if (cfg.max_age && cfg.min_age > cfg.max_age)
        return pp_reply_error(q, 400, "min_age must be at most max_age");
    if (views && text)
        return pp_reply_error(q, 400, "peak, min_age, max_age and window_live have no debug format");
    if (views)
        cfg.default_type = cfg.window_live ? "inuse_space" : NULL; /* the others have only in-use types */
    pprof_recorder *rec = NULL;
    int rc = q->q.has_seconds ? pprof_alloc_recorder_new(&cfg, &rec) : pprof_heap_recorder_new(&cfg, &rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not enable heap profiling: %s", pp_why(rc));
    return pp_serve_recorder(q, rec, text ? PPROF_FORMAT_TEXT : PPROF_FORMAT_PROTO_GZIP, "heap", disposition,
                             delta_disposition);
}

int pp_h_heap(pp_req *q)
{
    return serve(q, "inuse_space", "attachment; filename=\"heap\"", "attachment; filename=\"heap-delta\"");
}

int pp_h_allocs(pp_req *q)
{
    if (q->q.has_past)
        return pp_serve_past(q, PPROF_HISTORY_ALLOCS);
    return serve(q, "alloc_space", "attachment; filename=\"allocs\"", "attachment; filename=\"allocs-delta\"");
}

static int make_delta(pprof_recorder **out)
{
    pprof_heap_config cfg = {.from_start = 1, .default_type = "inuse_space"};
    return pprof_alloc_recorder_new(&cfg, out);
}

int pp_h_delta_heap(pp_req *q)
{
    static pprof_recorder *state;
    return pp_serve_delta(q, &state, make_delta, "heap", "attachment; filename=\"heap.pprof.gz\"");
}

int pp_h_memory(pp_req *q)
{
    if (q->q.has_debug && q->q.debug > 0)
        return pp_reply_error(q, 400, "memory has no debug format: use format=folded or the protobuf default");
    pprof_recorder *rec = NULL;
    int rc = pprof_memory_recorder_new(&rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not start the memory profile: %s", pp_why(rc));
    return pp_serve_recorder(q, rec, PPROF_FORMAT_PROTO_GZIP, "memory", "attachment; filename=\"memory\"",
                             "attachment; filename=\"memory-delta\"");
}
