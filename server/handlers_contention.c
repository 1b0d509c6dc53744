/* handlers_contention.c: mutex and block, on the public recorders.
 *
 *   mutex, block           totals since start-up (empty, with a comment,
 *                          while the profile is off)
 *   ...?seconds=N          the events of the next N seconds
 *   ...?debug=1            Go's text format
 *   delta_mutex, delta_block  godeltaprof's stateful endpoints: the events
 *                          since the previous call (the first: all). One
 *                          state per process: two scrapers of one path take
 *                          each other's deltas.
 */
#include "http_internal.h"

#include <pthread.h>
#include <stdio.h>

typedef int (*new_fn)(const pprof_contention_config *, pprof_recorder **);

static int send_profile(pp_req *q, pprof_profile *p, int text, const char *disposition)
{
    pp_reply r;
    pp_reply_init(&r, 200);
    int rc = pprof_profile_write(p, text ? PPROF_FORMAT_TEXT : PPROF_FORMAT_PROTO_GZIP, pp_reply_writer(&r));
    pprof_profile_free(p);
    if (rc != 0) {
        pprof_buffer_free(&r.resp.body);
        return pp_reply_error(q, 500, "Could not write the profile: %s", pprof_strerror(rc));
    }
    if (text) {
        pp_reply_header(&r, "Content-Type", "text/plain; charset=utf-8");
    } else {
        pp_reply_header(&r, "Content-Type", "application/octet-stream");
        pp_reply_header(&r, "Content-Disposition", disposition);
    }
    return pp_reply_send(q, &r);
}

static int serve(pp_req *q, new_fn make, const char *what, const char *disposition, const char *delta_disposition)
{
    int text = q->q.has_debug && q->q.debug > 0;
    if (text && q->q.has_seconds)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    pprof_recorder *rec = NULL;
    int rc = make(NULL, &rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not enable %s profiling: %s", what, pprof_strerror(rc));
    if (q->q.has_seconds)
        return pp_serve_window(q, rec, q->q.seconds, what, delta_disposition);
    pprof_profile *p = NULL;
    rc = pprof_recorder_write_to(rec, &p);
    pprof_recorder_free(rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not write the %s profile: %s", what, pprof_strerror(rc));
    return send_profile(q, p, text, disposition);
}

int pp_h_mutex(pp_req *q)
{
    return serve(q, pprof_mutex_recorder_new, "mutex", "attachment; filename=\"mutex\"",
                 "attachment; filename=\"mutex-delta\"");
}

int pp_h_block(pp_req *q)
{
    return serve(q, pprof_block_recorder_new, "block", "attachment; filename=\"block\"",
                 "attachment; filename=\"block-delta\"");
}

static pthread_mutex_t delta_lock = PTHREAD_MUTEX_INITIALIZER;
static pprof_recorder *delta_rec[2];

static int serve_delta(pp_req *q, int which, new_fn make, const char *disposition)
{
    pthread_mutex_lock(&delta_lock);
    int rc = 0;
    if (!delta_rec[which]) {
        pprof_contention_config cfg = {.from_start = 1};
        rc = make(&cfg, &delta_rec[which]);
        if (rc == 0 && (rc = pprof_recorder_start(delta_rec[which])) != 0) {
            pprof_recorder_free(delta_rec[which]);
            delta_rec[which] = NULL;
        }
    }
    pprof_profile *p = NULL;
    if (rc == 0)
        rc = pprof_recorder_snapshot(delta_rec[which], &p);
    char why[256];
    if (rc != 0)
        snprintf(why, sizeof why, "%s", pprof_strerror(rc));
    pthread_mutex_unlock(&delta_lock);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not write the profile: %s", why);
    return send_profile(q, p, 0, disposition);
}

int pp_h_delta_mutex(pp_req *q)
{
    return serve_delta(q, 0, pprof_mutex_recorder_new, "attachment; filename=\"mutex.pprof.gz\"");
}

int pp_h_delta_block(pp_req *q)
{
    return serve_delta(q, 1, pprof_block_recorder_new, "attachment; filename=\"block.pprof.gz\"");
}
