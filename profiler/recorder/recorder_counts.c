/* recorder_counts.c: recorders of things counted by stack: live threads
 * (Go's goroutine profile), the stacks that created them (threadcreate),
 * the entries of custom profiles.
 *
 * write_to gives the state now: one sample per distinct (stack, labels)
 * with its count. A window (start, snapshot, stop) gives the difference of
 * the counts at its end and at its start, as Go's goroutine?seconds=N
 * does: negative where there are fewer now; unchanged stacks are dropped.
 * A thread recorder configured per_thread keeps every thread apart and
 * labels it with its id, name and state (Go's debug=2 dump).
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

static int64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static const char *kind_type(const pprof_recorder *r)
{
    if (r->kind == PP_KIND_CUSTOM)
        return pprof_custom_name(r->custom);
    return r->kind == PP_KIND_THREADCREATE ? "threadcreate" : "goroutine";
}

static pprof_profile *new_count_profile(const pprof_recorder *r)
{
    pprof_value_type t = {kind_type(r), "count"};
    return pp_profile_new(&t, 1, t, 1);
}

/* The name of a system call a thread may wait in, or NULL. */
static const char *syscall_name(int nr)
{
    switch (nr) {
    case 0: return "read";
    case 1: return "write";
    case 7: return "poll";
    case 23: return "select";
    case 35: return "nanosleep";
    case 43: return "accept";
    case 45: return "recvfrom";
    case 47: return "recvmsg";
    case 61: return "wait4";
    case 202: return "futex";
    case 230: return "clock_nanosleep";
    case 232: return "epoll_wait";
    case 270: return "pselect6";
    case 271: return "ppoll";
    case 281: return "epoll_pwait";
    case 288: return "accept4";
    case 441: return "epoll_pwait2";
    default: return NULL;
    }
}

static int add_threads(pprof_profile *p, int per_thread)
{
    pp_thread_stack *t;
    size_t n;
    int rc = pp_thread_dump(&t, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int64_t one = 1;
        pprof_label extra[68];
        size_t nl = 0;
        for (size_t k = 0; k < t[i].nlabels && nl < 64; k++)
            extra[nl++] = t[i].labels[k];
        char tid[16], state[64], sc[32];
        if (per_thread) {
            snprintf(tid, sizeof tid, "%d", t[i].tid);
            const char *name = syscall_name(t[i].syscall);
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
    pp_thread_dump_free(t, n);
    return rc;
}

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
        rc = reg[i].ncreate ? pp_profile_add(p, reg[i].create, (size_t)reg[i].ncreate, &one, NULL, 0)
                            : pp_profile_add(p, &none, 1, &one, NULL, 0);
    }
    free(reg);
    return rc;
}

/* The state now, unfinished. */
static pprof_profile *take(pprof_recorder *r, int *rc)
{
    pprof_profile *p = new_count_profile(r);
    if (!p) {
        *rc = PPROF_ENOMEM;
        return NULL;
    }
    *rc = r->kind == PP_KIND_CUSTOM         ? pp_custom_add_to(r->custom, p)
          : r->kind == PP_KIND_THREADCREATE ? add_creators(p)
                                            : add_threads(p, r->per_thread);
    if (*rc) {
        pprof_profile_free(p);
        return NULL;
    }
    p->time_nanos = now_ns(CLOCK_REALTIME);
    return p;
}

static int new_counts(pp_kind kind, int per_thread, pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    pprof_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return pp_fail(PPROF_ENOMEM);
    r->kind = kind;
    r->per_thread = per_thread;
    *out = r;
    return 0;
}

int pprof_threads_recorder_new(const pprof_threads_config *cfg, pprof_recorder **out)
{
    return new_counts(PP_KIND_THREADS, cfg ? cfg->per_thread : 0, out);
}

int pprof_threadcreate_recorder_new(pprof_recorder **out)
{
    return new_counts(PP_KIND_THREADCREATE, 0, out);
}

int pprof_custom_recorder_new(pprof_custom *c, pprof_recorder **out)
{
    if (!c)
        return pp_error_detail(PPROF_EINVAL, "NULL custom profile");
    int rc = new_counts(PP_KIND_CUSTOM, 0, out);
    if (rc == 0)
        (*out)->custom = c;
    return rc;
}

int pp_counts_write_to(pprof_recorder *r, pprof_profile **out)
{
    int rc;
    pprof_profile *p = take(r, &rc);
    return p ? pp_recorder_finish(p, out) : rc;
}

int pp_counts_start(pprof_recorder *r)
{
    if (r->per_thread)
        return pp_error_detail(PPROF_ENOTSUP, "a per-thread dump has no window");
    int rc;
    r->count_base = take(r, &rc);
    if (!r->count_base)
        return rc;
    r->window_mono_ns = now_ns(CLOCK_MONOTONIC);
    r->running = 1;
    return 0;
}

int pp_counts_end(pprof_recorder *r, int reopen, pprof_profile **out)
{
    if (out)
        *out = NULL;
    int rc;
    pprof_profile *now = take(r, &rc);
    if (!now)
        return rc;
    pprof_profile *diff = out ? new_count_profile(r) : NULL;
    if (diff) {
        rc = pp_profile_add_profile(diff, now, 1);
        if (rc == 0)
            rc = pp_profile_add_profile(diff, r->count_base, -1);
        pp_profile_drop_zero(diff);
        diff->time_nanos = r->count_base->time_nanos;
        diff->duration_nanos = now_ns(CLOCK_MONOTONIC) - r->window_mono_ns;
    } else if (out) {
        rc = PPROF_ENOMEM;
    }
    pprof_profile_free(r->count_base);
    r->count_base = NULL;
    if (reopen) {
        r->count_base = now;
        r->window_mono_ns = now_ns(CLOCK_MONOTONIC);
    } else {
        pprof_profile_free(now);
        r->running = 0;
    }
    if (rc) {
        pprof_profile_free(diff);
        return rc;
    }
    return out ? pp_recorder_finish(diff, out) : 0;
}
