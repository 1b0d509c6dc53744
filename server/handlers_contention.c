/* handlers_contention.c: mutex and block, on the public recorders.
 *
 *   mutex, block           totals since start-up (empty, with a comment,
 *                          while the profile is off)
 *   ...?seconds=N          the events of the next N seconds
 *   ...?debug=1            Go's text format
 *   ...?last=N, from=T&until=T  the events of a span of the past, from the
 *                          history
 *   delta_mutex, delta_block  godeltaprof's stateful endpoints: the events
 *                          since the previous call (the first: all). One
 *                          state per process: two scrapers of one path take
 *                          each other's deltas.
 */
#include "endpoints.h"

typedef int (*new_fn)(const pprof_contention_config *, pprof_recorder **);

static int serve(pp_req *q, new_fn make, const char *what, const char *disposition, const char *delta_disposition)
{
    int text = q->q.has_debug && q->q.debug > 0;
    if (text && q->q.has_seconds)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    pprof_recorder *rec = NULL;
    int rc = make(NULL, &rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not enable %s profiling: %s", what, pp_why(rc));
    return pp_serve_recorder(q, rec, text ? PPROF_FORMAT_TEXT : PPROF_FORMAT_PROTO_GZIP, what, disposition,
                             delta_disposition);
}

int pp_h_mutex(pp_req *q)
{
    if (q->q.has_past)
        return pp_serve_past(q, PPROF_HISTORY_MUTEX);
    return serve(q, pprof_mutex_recorder_new, "mutex", "attachment; filename=\"mutex\"",
                 "attachment; filename=\"mutex-delta\"");
}

int pp_h_block(pp_req *q)
{
    if (q->q.has_past)
        return pp_serve_past(q, PPROF_HISTORY_BLOCK);
    return serve(q, pprof_block_recorder_new, "block", "attachment; filename=\"block\"",
                 "attachment; filename=\"block-delta\"");
}

static const pprof_contention_config from_start = {.from_start = 1};
static int make_delta_mutex(pprof_recorder **out) { return pprof_mutex_recorder_new(&from_start, out); }
static int make_delta_block(pprof_recorder **out) { return pprof_block_recorder_new(&from_start, out); }

int pp_h_delta_mutex(pp_req *q)
{
    static pprof_recorder *state;
    return pp_serve_delta(q, &state, make_delta_mutex, "mutex", "attachment; filename=\"mutex.pprof.gz\"");
}

int pp_h_delta_block(pp_req *q)
{
    static pprof_recorder *state;
    return pp_serve_delta(q, &state, make_delta_block, "block", "attachment; filename=\"block.pprof.gz\"");
}
