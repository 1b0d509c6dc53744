/* recorder_memory.c: the memory recorder, instant and windowed.
 *
 * The state now is memory/'s profile of the resident set. A window keeps
 * the profile taken at its start (unfinished: raw frames and values) and,
 * at its end, gives the resident set then with the change since the start
 * beside it, sample by sample (the memory profile's named frames are the
 * same addresses in every profile, so samples of the two match).
 */
#include "base/base.h"
#include "memory/memory.h"
#include "model/model.h"
#include "recorder.h"

#include <time.h>

static int memory_start(pprof_recorder *r)
{
    pprof_profile *p;
    int rc = pp_memory_build(&p);
    if (rc)
        return rc;
    pp_recorder_window_begin(r);
    r->snap = p;
    return 0;
}

/* The window's profile: the end's values and end - start. */
static pprof_profile *window(const pprof_profile *start, const pprof_profile *end)
{
    static const pprof_value_type types[] = {{"resident_space", "bytes"}, {"resident_change_space", "bytes"}};
    pprof_profile *p = pp_profile_new(types, 2, (pprof_value_type){"space", "bytes"}, 1);
    if (!p)
        return NULL;
    p->default_type = 1;
    if (pp_profile_add_profile_at(p, end, 1, 0) || pp_profile_add_profile_at(p, end, 1, 1) ||
        pp_profile_add_profile_at(p, start, -1, 1)) {
        pprof_profile_free(p);
        return NULL;
    }
    pp_profile_drop_zero(p);
    for (size_t i = 0; i < end->ncomments; i++)
        pp_profile_add_comment(p, end->comments[i]);
    return p;
}

static int memory_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    pprof_profile *now = NULL;
    int failed = pp_memory_build(&now);
    if (failed && reopen)
        return failed;
    pp_own_heap_enter();
    pprof_profile *p = out && !failed ? window(r->snap, now) : NULL;
    pp_recorder_window_end(r, p, reopen); /* a stop without its profile still ends the window */
    pprof_profile_free(r->snap);
    r->snap = reopen ? now : NULL;
    if (!reopen)
        pprof_profile_free(now);
    int rc = failed ? failed : out && !p ? pp_fail(PPROF_ENOMEM) : pp_recorder_finish(r, p, out);
    pp_own_heap_leave();
    return rc;
}

/* The profile and its symbols come from the profiler's own heap, so
 * asking for the resident set changes nothing in the program's. */
static int memory_write_to(pprof_recorder *r, pprof_profile **out)
{
    pprof_profile *p;
    pp_own_heap_enter();
    int rc = pp_memory_build(&p);
    if (!rc) {
        p->time_nanos = pp_now_ns(CLOCK_REALTIME);
        rc = pp_recorder_finish(r, p, out);
    }
    pp_own_heap_leave();
    return rc;
}

static const pp_recorder_ops memory_ops = {
    .start = memory_start, .end = memory_end, .write_to = memory_write_to};

int pprof_memory_recorder_new(pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    pprof_recorder *r = pp_recorder_new(sizeof(pprof_recorder), &memory_ops);
    if (!r)
        return PPROF_ENOMEM;
    *out = r;
    return 0;
}
