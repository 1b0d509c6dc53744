/* handlers_threads.c: goroutine (also served as threads), threadcreate and
 * the program's custom profiles: everything counted by stack.
 *
 *   goroutine           the stacks of all live threads now (protobuf)
 *   goroutine?debug=1   counts by stack, Go's text format
 *   goroutine?debug=2   one stanza per thread: id, name, state, the call it
 *                       waits in, labels, frames
 *   ...?seconds=N       the difference of the counts over N seconds
 *   threadcreate        the stacks that created the live threads
 */
#include "endpoints.h"

#include <pthread.h>
#include <stdio.h>

enum { THREADS, THREADCREATE, CUSTOM };

static int serve(pp_req *q, int what, const char *disposition, const char *delta_disposition)
{
    int debug = q->q.has_debug ? q->q.debug : 0;
    if (debug && q->q.has_seconds)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    pprof_threads_config cfg = {.per_thread = debug >= 2 && what == THREADS};
    pprof_recorder *rec = NULL;
    int rc = what == THREADCREATE ? pprof_threadcreate_recorder_new(&rec)
             : what == CUSTOM     ? pprof_custom_recorder_new(pprof_custom_find(q->name), &rec)
                                  : pprof_threads_recorder_new(&cfg, &rec);
    const char *name = what == THREADS ? "thread" : what == THREADCREATE ? "threadcreate" : q->name;
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not take the %s profile: %s", name, pp_why(rc));
    pprof_format fmt = cfg.per_thread ? PPROF_FORMAT_TEXT_DUMP : debug ? PPROF_FORMAT_TEXT : PPROF_FORMAT_PROTO_GZIP;
    return pp_serve_recorder(q, rec, fmt, name, disposition, delta_disposition);
}

int pp_h_goroutine(pp_req *q)
{
    return serve(q, THREADS, "attachment; filename=\"goroutine\"", "attachment; filename=\"goroutine-delta\"");
}

int pp_h_threadcreate(pp_req *q)
{
    return serve(q, THREADCREATE, "attachment; filename=\"threadcreate\"",
                 "attachment; filename=\"threadcreate-delta\"");
}

/* A window's Content-Disposition must outlive the request: one string per
 * custom profile (they are never unregistered; names are [A-Za-z0-9._-]). */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { pprof_custom *c; char delta[96]; } names[64];

static const char *delta_disposition(pprof_custom *c)
{
    const char *out = "attachment; filename=\"custom-delta\"";
    pthread_mutex_lock(&names_lock);
    for (size_t i = 0; i < 64; i++) {
        if (!names[i].c) {
            names[i].c = c;
            snprintf(names[i].delta, sizeof names[i].delta, "attachment; filename=\"%s-delta\"", pprof_custom_name(c));
        }
        if (names[i].c == c) {
            out = names[i].delta;
            break;
        }
    }
    pthread_mutex_unlock(&names_lock);
    return out;
}

int pp_h_custom(pp_req *q)
{
    char d[96];
    snprintf(d, sizeof d, "attachment; filename=\"%s\"", q->name);
    return serve(q, CUSTOM, d, delta_disposition(pprof_custom_find(q->name)));
}
