/* handlers_heap.c: the heap endpoints, on the public heap recorders.
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
 */
#include "http_internal.h"

#include <pthread.h>
#include <stdio.h>

/* Writes `p` as the reply (protobuf, or text when `text`), then frees it. */
static int send_profile(pp_req *q, pprof_profile *p, int text, const char *disposition)
{
    pp_reply r;
    pp_reply_init(&r, 200);
    int rc = pprof_profile_write(p, text ? PPROF_FORMAT_TEXT : PPROF_FORMAT_PROTO_GZIP, pp_reply_writer(&r));
    pprof_profile_free(p);
    if (rc != 0) {
        pprof_buffer_free(&r.resp.body);
        return pp_reply_error(q, 500, "Could not write the heap profile: %s", pprof_strerror(rc));
    }
    if (text) {
        pp_reply_header(&r, "Content-Type", "text/plain; charset=utf-8");
    } else {
        pp_reply_header(&r, "Content-Type", "application/octet-stream");
        pp_reply_header(&r, "Content-Disposition", disposition);
    }
    return pp_reply_send(q, &r);
}

static int serve(pp_req *q, const char *default_type, const char *disposition, const char *delta_disposition)
{
    int text = q->q.has_debug && q->q.debug > 0;
    if (text && q->q.has_seconds)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    pprof_heap_config cfg = {.raw = text, .default_type = default_type};
    pprof_recorder *rec = NULL;
    int rc;
    if (q->q.has_seconds) {
        rc = pprof_alloc_recorder_new(&cfg, &rec);
        if (rc != 0)
            return pp_reply_error(q, 500, "Could not enable heap profiling: %s", pprof_strerror(rc));
        return pp_serve_window(q, rec, q->q.seconds, "heap", delta_disposition);
    }
    pprof_profile *p = NULL;
    rc = pprof_heap_recorder_new(&cfg, &rec);
    if (rc == 0)
        rc = pprof_recorder_write_to(rec, &p);
    pprof_recorder_free(rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not write the heap profile: %s", pprof_strerror(rc));
    return send_profile(q, p, text, disposition);
}

int pp_h_heap(pp_req *q)
{
    return serve(q, "inuse_space", "attachment; filename=\"heap\"", "attachment; filename=\"heap-delta\"");
}

int pp_h_allocs(pp_req *q)
{
    return serve(q, "alloc_space", "attachment; filename=\"allocs\"", "attachment; filename=\"allocs-delta\"");
}

static pthread_mutex_t delta_lock = PTHREAD_MUTEX_INITIALIZER;
static pprof_recorder *delta_rec;

int pp_h_delta_heap(pp_req *q)
{
    pthread_mutex_lock(&delta_lock);
    int rc = 0;
    if (!delta_rec) {
        pprof_heap_config cfg = {.from_start = 1, .default_type = "inuse_space"};
        rc = pprof_alloc_recorder_new(&cfg, &delta_rec);
        if (rc == 0 && (rc = pprof_recorder_start(delta_rec)) != 0) {
            pprof_recorder_free(delta_rec);
            delta_rec = NULL;
        }
    }
    pprof_profile *p = NULL;
    if (rc == 0)
        rc = pprof_recorder_snapshot(delta_rec, &p);
    char why[256];
    if (rc != 0)
        snprintf(why, sizeof why, "%s", pprof_strerror(rc));
    pthread_mutex_unlock(&delta_lock);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not write the heap profile: %s", why);
    return send_profile(q, p, 0, "attachment; filename=\"heap.pprof.gz\"");
}
