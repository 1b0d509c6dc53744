/* handlers_wall.c: the wall-clock profile's endpoints.
 *
 *   wall?seconds=N     every thread's time, running or waiting, over N
 *                      seconds (default 30, capped as profile is);
 *                      &hz= (default 99, or the rate in force; the
 *                      sampler runs at the highest rate asked for),
 *                      &state=off-cpu|on-cpu (only waiting / only running
 *                      samples), every output parameter of profile
 *   wall?last=N        the wall-clock history (LIBPPROF_HISTORY_WALL=1),
 *                      as profile?last=N: from=/until=, min_span_ms=
 *   fgprof?seconds=N   the same in fgprof's form: sample types
 *                      samples/count and time/nanoseconds, period type
 *                      wallclock; &format=pprof (the default) or folded
 *                      (one line per stack with its sample count), as
 *                      fgprof's handler takes them
 */
#include "base/base.h"
#include "endpoints.h"

#include <stdlib.h>
#include <string.h>

/* hz= and state= of the query into cfg; 0, or -1 when answered with a 400. */
static int wall_params(pp_req *q, pprof_wall_config *cfg)
{
    char v[64];
    const char *query = q->req->query;
    if (pp_query_find(query, "hz", v, sizeof v)) {
        long long hz;
        if (pp_parse_int(v, strlen(v), &hz) != 0 || hz < 1 || hz > PPROF_WALL_MAX_HZ) {
            pp_reply_error(q, 400, "invalid value for \"hz\" - must be from 1 to %d", PPROF_WALL_MAX_HZ);
            return -1;
        }
        cfg->hz = hz;
    }
    if (pp_query_find(query, "state", v, sizeof v)) {
        if (!strcmp(v, "off-cpu"))
            cfg->state = PPROF_WALL_OFF_CPU;
        else if (!strcmp(v, "on-cpu"))
            cfg->state = PPROF_WALL_ON_CPU;
        else {
            pp_reply_error(q, 400, "invalid value for \"state\" - must be off-cpu or on-cpu");
            return -1;
        }
    }
    return 0;
}

static int serve_wall(pp_req *q, pprof_wall_config *cfg, const char *disposition)
{
    if (q->q.has_debug && q->q.debug != 0)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    char v[8];
    if (q->q.has_past && (pp_query_find(q->req->query, "hz", v, sizeof v) || pp_query_find(q->req->query, "state", v, sizeof v)))
        return pp_reply_error(q, 400, "hz and state do not apply to the history (last, from, until)");
    if (q->q.has_past)
        return pp_serve_past(q, PPROF_HISTORY_WALL);
    if (wall_params(q, cfg) != 0)
        return 0;
    pprof_recorder *rec = NULL;
    int rc = pprof_wall_recorder_new(cfg, &rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not enable wall profiling: %s", pp_why(rc));
    return pp_serve_window(q, rec, q->q.has_seconds ? q->q.seconds : PP_DEFAULT_SECONDS, "wall", disposition);
}

int pp_h_wall(pp_req *q)
{
    pprof_wall_config cfg = {0};
    return serve_wall(q, &cfg, "attachment; filename=\"wall\"");
}

/* fgprof's own format names: pprof (its default) is protobuf; folded and
 * proto are the server's. The query is parsed here (the endpoint has no
 * PP_EP_QUERY), once format=pprof is taken out of it. */
int pp_h_fgprof(pp_req *q)
{
    char v[32];
    static const char *const format_key[] = {"format"};
    int as_pprof = pp_query_find(q->req->query, "format", v, sizeof v) && !strcmp(v, "pprof");
    char *rest = as_pprof ? pp_query_without(q->req->query, format_key, 1) : NULL;
    char why[256];
    int bad = pp_query_parse(rest ? rest : q->req->query, q->cfg.max_seconds, &q->q, why, sizeof why);
    free(rest);
    if (bad)
        return pp_reply_error(q, 400, "%s", why);
    if (q->q.out.format == PP_OUT_FOLDED && !q->q.out.sample_index[0])
        strcpy(q->q.out.sample_index, "samples"); /* fgprof's folded lines count samples */
    pprof_wall_config cfg = {.fgprof = 1};
    return serve_wall(q, &cfg, "attachment; filename=\"fgprof\"");
}
