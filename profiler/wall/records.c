/* records.c: what the wall sampler counts each thread on, and how those
 * counts reach the windows.
 *
 * A thread's record (wrec: thread_state, stack, labels with its span's)
 * holds the periods counted on it that no window has received yet
 * (wthread.pending). A new record that equals the old one only adds to
 * them; one that differs first flushes them: each attached window that
 * keeps the record's state gets one sample of (periods, periods x its
 * period), labelled with thread_state besides the record's labels. The
 * profiler's own threads are left out there. sampler.c decides what each
 * thread is counted on and when everything is flushed (see there); all
 * of this runs under its lock, on the sampler's thread or a recorder's,
 * never in a signal handler.
 */
#define _GNU_SOURCE
#include "records.h"
#include "base/base.h"
#include "model/model.h"
#include "threads/threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pp_wall_free_labels(pprof_label *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++) {
        free((char *)l[i].key);
        free((char *)l[i].value);
    }
    free(l);
}

/* 1 if two records count the same: state, stack and labels. */
static int same_rec(const wrec *a, const wrec *b)
{
    if (a->nr != b->nr || a->npcs != b->npcs || a->nlabels != b->nlabels ||
        memcmp(a->pcs, b->pcs, (size_t)a->npcs * sizeof *a->pcs))
        return 0;
    for (size_t i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i].key, b->labels[i].key) || strcmp(a->labels[i].value, b->labels[i].value))
            return 0;
    return 1;
}

void pp_wall_flush_thread(wthread *t)
{
    if (!t->valid || !t->pending)
        return;
    if (t->rec.nlabels == 1 && !strcmp(t->rec.labels[0].key, PP_OWN_KEY) &&
        !strcmp(t->rec.labels[0].value, PP_OWN_VALUE)) { /* the profiler's own threads: left out, as fgprof leaves
                                                             out its own goroutine */
        t->pending = 0;
        return;
    }
    pprof_label l[70];
    size_t n = 0, k = 0;
    char buf[24];
    const char *state = t->rec.nr == RUNNING    ? "running"
                        : t->rec.nr == RUNNABLE ? "runnable"
                                                : pp_syscall_name(t->rec.nr);
    if (!state) {
        snprintf(buf, sizeof buf, "syscall_%d", t->rec.nr);
        state = buf;
    }
    for (; k < t->rec.nlabels && n < 64 && strcmp(t->rec.labels[k].key, "thread_state") < 0; k++)
        l[n++] = t->rec.labels[k];
    l[n++] = (pprof_label){"thread_state", state};
    for (; k < t->rec.nlabels && n < 65; k++)
        if (strcmp(t->rec.labels[k].key, "thread_state"))
            l[n++] = t->rec.labels[k];
    /* the same without the unit of work, for the windows that do not keep it */
    pprof_label lu[70];
    size_t nu = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i].key, PP_UNIT_KEY))
            lu[nu++] = l[i];
    for (int i = 0; i < pp_wall_nwins; i++) {
        pp_wall_window *w = pp_wall_wins[i];
        if ((w->state == PP_WALL_OFF_CPU && ON_CPU(t->rec.nr)) || (w->state == PP_WALL_ON_CPU && !ON_CPU(t->rec.nr)))
            continue;
        int64_t v[2] = {(int64_t)t->pending, (int64_t)t->pending * w->period_ns};
        pp_profile_add(w->profile, t->rec.pcs, (size_t)t->rec.npcs, v, w->units ? l : lu, w->units ? n : nu);
    }
    COUNT(ST_SAMPLES, t->pending);
    t->pending = 0;
}

void pp_wall_set_rec(wthread *t, wrec *r)
{
    if (t->valid && same_rec(&t->rec, r)) {
        pp_wall_free_labels(r->labels, r->nlabels);
        return;
    }
    pp_wall_flush_thread(t);
    if (t->valid)
        pp_wall_free_labels(t->rec.labels, t->rec.nlabels);
    t->rec = *r;
    t->valid = 1;
}

/* By key, for qsort. */
static int cmp_label(const void *a, const void *b)
{
    return strcmp(((const pprof_label *)a)->key, ((const pprof_label *)b)->key);
}

pprof_label *pp_wall_copy_pairs(const pprof_label *p, size_t n, size_t *out_n)
{
    *out_n = 0;
    pprof_label *l = n ? calloc(n, sizeof *l) : NULL;
    if (!l)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        l[i].key = strdup(p[i].key);
        l[i].value = strdup(p[i].value);
        if (!l[i].key || !l[i].value) {
            pp_wall_free_labels(l, i + 1);
            return NULL;
        }
    }
    qsort(l, n, sizeof *l, cmp_label);
    *out_n = n;
    return l;
}

pprof_label *pp_wall_span_pairs(const pprof_label *p, size_t n, const pp_trace_snap *t, int what, size_t *out_n)
{
    pp_trace_text text = {.heap = NULL};
    pprof_label *pairs;
    size_t np = pp_trace_pairs(p, n, t, what, &text, &pairs);
    pprof_label *l = pp_wall_copy_pairs(pairs, np, out_n);
    pp_trace_text_free(&text);
    return l;
}
