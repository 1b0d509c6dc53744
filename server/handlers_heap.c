/* handlers_heap.c: the heap and memory endpoints, on the public heap and
 * memory recorders.
 *
 *   heap, allocs        the live heap now and every sampled allocation
 *                       since start-up; they differ only in the sample type
 *                       pprof shows first (inuse_space / alloc_space)
 *   ...?seconds=N       a window: the allocations of the next N seconds
 *                       and the live heap at its end (not a difference)
 *   ...?debug=1         Go's text format, values as sampled (not scaled)
 *   delta_heap          godeltaprof's stateful endpoint: the change since
 *                       the previous call (the first returns everything),
 *                       in-use values live. One state per process: two
 *                       scrapers of it take each other's deltas.
 *   memory              the whole resident set, by what holds it;
 *                       ?seconds=N: the set at the window's end and its
 *                       change over the window
 */
#include "endpoints.h"

static int serve(pp_req *q, const char *default_type, const char *disposition, const char *delta_disposition)
{
    int text = q->q.has_debug && q->q.debug > 0;
    if (text && q->q.has_seconds)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    pprof_heap_config cfg = {.raw = text, .default_type = default_type};
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
