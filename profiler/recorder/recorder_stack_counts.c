/* recorder_stack_counts.c: recorders of things counted by stack: live threads
 * (Go's goroutine profile), the stacks that created them (threadcreate),
 * the entries of custom profiles.
 *
 * write_to gives the state now: one sample per distinct (stack, labels)
 * with its count. A window (start, snapshot, stop) gives the difference of
 * the counts at its end and at its start, as Go's goroutine?seconds=N
 * does: negative where there are fewer now; unchanged stacks are dropped.
 * A thread recorder configured per_thread keeps every thread apart and
 * labels it with its id, name and state (Go's debug=2 dump).
 * The profiler's own threads are left out of both, behind one comment
 * that gives their count and names.
 */
#define _GNU_SOURCE
#include "custom/custom.h"
#include "base/base.h"
#include "model/model.h"
#include "recorder.h"
#include "threads/threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum what { THREADS, THREADCREATE, CUSTOM };

typedef struct counts_recorder {
    pprof_recorder base;
    enum what what;
    int per_thread;       /* threads: every thread apart (debug=2) */
    pprof_custom *custom; /* custom: the profile */
} counts_recorder;

static const char *kind_type(const counts_recorder *c)
{
    if (c->what == CUSTOM)
        return pprof_custom_name(c->custom);
    return c->what == THREADCREATE ? "threadcreate" : "goroutine";
}

static pprof_profile *new_count_profile(const counts_recorder *c)
{
    pprof_value_type t = {kind_type(c), "count"};
    return pp_profile_new(&t, 1, t, 1);
}

/* The comment that stands for the profiler's own threads, left out:
 * their count and names (each name once). */
static int note_own(pprof_profile *p, const pp_thread_stack *t, size_t n, size_t nown)
{
    char note[256];
    int len = snprintf(note, sizeof note, "libpprof's own threads, left out: %zu (", nown);
    for (size_t i = 0, first = 1; i < n && len < (int)sizeof note - 20; i++) {
        size_t j = 0;
        while (j < i && !(t[j].own && !strcmp(t[j].name, t[i].name)))
            j++;
        if (!t[i].own || j < i)
            continue;
        len += snprintf(note + len, sizeof note - (size_t)len, "%s%s", first ? "" : ", ", t[i].name);
        first = 0;
    }
    snprintf(note + len, sizeof note - (size_t)len, ")");
    return pp_profile_add_comment(p, note);
}

static int add_threads(pprof_profile *p, int per_thread)
{
    pp_thread_stack *t;
    size_t n, nown = 0;
    int rc = pp_thread_dump(&t, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (t[i].own) {
            nown++;
            continue;
        }
        int64_t one = 1;
        pprof_label extra[68];
        size_t nl = 0;
        for (size_t k = 0; k < t[i].nlabels && nl < 64; k++)
            extra[nl++] = t[i].labels[k];
        char tid[16], state[64], sc[32];
        if (per_thread) {
            snprintf(tid, sizeof tid, "%d", t[i].tid);
            const char *name = pp_syscall_name(t[i].syscall);
            if (t[i].syscall >= 0 && name)
                snprintf(sc, sizeof sc, "%s", name);
            else if (t[i].syscall >= 0)
                snprintf(sc, sizeof sc, "syscall %d", t[i].syscall);
            snprintf(state, sizeof state, "%c%s%s", t[i].state ? t[i].state : '?', t[i].syscall >= 0 ? ", in " : "",
                     t[i].syscall >= 0 ? sc : "");
            extra[nl++] = (pprof_label){"thread.id", tid};
            extra[nl++] = (pprof_label){"thread.name", t[i].name};
            extra[nl++] = (pprof_label){"thread.state", state};
        }
        rc = pp_profile_add(p, t[i].pcs, (size_t)t[i].npcs, &one, nl ? extra : NULL, nl);
    }
    if (rc == 0 && nown)
        rc = note_own(p, t, n, nown);
    pp_thread_dump_free(t, n);
    return rc;
}

/* The threads' creators; the profiler's own threads are left out, as
 * from the thread dump. */
static int add_creators(pprof_profile *p)
{
    size_t n;
    pp_thread_entry *reg = pp_threads_copy(&n);
    if (!reg)
        return pp_fail(PPROF_ENOMEM);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int64_t one = 1;
        uint64_t none = PP_PC_NO_CREATOR;
        if (reg[i].own)
            continue;
        rc = reg[i].ncreate ? pp_profile_add(p, reg[i].create, (size_t)reg[i].ncreate, &one, NULL, 0)
                            : pp_profile_add(p, &none, 1, &one, NULL, 0);
    }
    free(reg);
    return rc;
}

/* The state now, unfinished. */
static pprof_profile *take(counts_recorder *c, int *rc)
{
    pprof_profile *p = new_count_profile(c);
    if (!p) {
        *rc = pp_fail(PPROF_ENOMEM);
        return NULL;
    }
    *rc = c->what == CUSTOM         ? pp_custom_add_to(c->custom, p)
          : c->what == THREADCREATE ? add_creators(p)
                                    : add_threads(p, c->per_thread);
    if (*rc) {
        pprof_profile_free(p);
        return NULL;
    }
    p->time_nanos = pp_now_ns(CLOCK_REALTIME);
    return p;
}

static int counts_write_to(pprof_recorder *r, pprof_profile **out)
{
    int rc;
    pprof_profile *p = take((counts_recorder *)r, &rc);
    return p ? pp_recorder_finish(r, p, out) : rc;
}

static int counts_start(pprof_recorder *r)
{
    counts_recorder *c = (counts_recorder *)r;
    if (c->per_thread)
        return pp_error_detail(PPROF_ENOTSUP, "a per-thread dump has no window");
    int rc;
    c->base.snap = take(c, &rc);
    if (!c->base.snap)
        return rc;
    pp_recorder_window_begin(r);
    return 0;
}

static int counts_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    counts_recorder *c = (counts_recorder *)r;
    int rc = 0;
    pprof_profile *now = take(c, &rc);
    if (!now && reopen)
        return rc;
    pprof_profile *diff = out && now ? new_count_profile(c) : NULL; /* a stop without one still ends */
    if (diff) {
        rc = pp_profile_add_profile(diff, now, 1);
        if (rc == 0)
            rc = pp_profile_add_profile(diff, c->base.snap, -1);
        pp_profile_drop_zero(diff);
    } else if (out && now) {
        rc = pp_fail(PPROF_ENOMEM);
    }
    pp_recorder_window_end(r, diff, reopen);
    pprof_profile_free(c->base.snap);
    c->base.snap = reopen ? now : NULL;
    if (!reopen)
        pprof_profile_free(now);
    if (rc) {
        pprof_profile_free(diff);
        return rc;
    }
    return out ? pp_recorder_finish(r, diff, out) : 0;
}

static const pp_recorder_ops counts_ops = {
    .start = counts_start, .end = counts_end, .write_to = counts_write_to};

static int new_counts(enum what what, int per_thread, pprof_custom *custom, pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    counts_recorder *c = (counts_recorder *)pp_recorder_new(sizeof *c, &counts_ops);
    if (!c)
        return PPROF_ENOMEM;
    c->what = what;
    c->per_thread = per_thread;
    c->custom = custom;
    *out = &c->base;
    return 0;
}

int pprof_threads_recorder_new(const pprof_threads_config *cfg, pprof_recorder **out)
{
    return new_counts(THREADS, cfg ? cfg->per_thread : 0, NULL, out);
}

int pprof_threadcreate_recorder_new(pprof_recorder **out)
{
    return new_counts(THREADCREATE, 0, NULL, out);
}

int pprof_custom_recorder_new(pprof_custom *c, pprof_recorder **out)
{
    if (!c)
        return pp_error_detail(PPROF_EINVAL, "NULL custom profile");
    return new_counts(CUSTOM, 0, c, out);
}
