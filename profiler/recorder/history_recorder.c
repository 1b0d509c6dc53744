/* history_recorder.c: the history recorder, which reads the history's
 * slices (history.c) into one profile of a span of the past
 * (profile?last=60, pprof_history_recorder_new).
 *
 * Its write_to adds the slices of its kind that overlap the span, and the
 * open window as it stands when the span reaches it (read, not cut, so
 * requests never make slices shorter), then symbolizes that; its
 * time_nanos and duration_nanos are the slices' exactly. Counts over time
 * (CPU, wall, allocations, contentions) add up over the span's slices;
 * a state (the live heap), kept as its change over each slice, is given
 * at the span's end: the series' base (the state where its oldest slice
 * begins) plus the changes of every slice up to the span's end.
 *
 * Slow spans only (min_span, CPU and wall): spans and units of work
 * (pprof_do calls) are timed from start-up (labels/span_times.c), and
 * only the samples whose span_id or PP_UNIT_KEY label names a span or a
 * unit that lasted that long are kept, decided from their ends at the
 * moment it is asked. The unit's label, which only the history's own
 * windows carry, is left out of the profile either way.
 */
#define _GNU_SOURCE
#include "history.h"
#include "base/base.h"
#include "labels/labels.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct history_recorder {
    pprof_recorder base;
    pp_series *k;
    int64_t from, until;
    int64_t min_span;       /* ns; 0: every sample */
    const char *note;       /* a comment to add (a dump's), or NULL */
} history_recorder;

/* The rate the kind's samples were taken at, as the comment says it. */
static void rate_text(const pp_series *k, char *buf, size_t size)
{
    switch (k->kind) {
    case PPROF_HISTORY_CPU:
    case PPROF_HISTORY_WALL:
        snprintf(buf, size, "taken at %lld Hz or more (while other %s profiles ran)", (long long)k->rate,
                 k->kind == PPROF_HISTORY_CPU ? "CPU" : "wall");
        break;
    case PPROF_HISTORY_ALLOCS: snprintf(buf, size, "sampled every %lld bytes on average", (long long)k->rate); break;
    case PPROF_HISTORY_MUTEX: snprintf(buf, size, "1 in %lld contentions sampled", (long long)k->rate); break;
    default: snprintf(buf, size, "block rate %lld ns", (long long)k->rate); break;
    }
}

/* A comment on what p covers, and on what it could not. */
static void describe(pprof_profile *p, const history_recorder *h, int64_t oldest)
{
    char note[400], rate[96];
    time_t t = (time_t)(p->time_nanos / 1000000000);
    struct tm tm;
    char when[32] = "";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    rate_text(h->k, rate, sizeof rate);
    int len = snprintf(note, sizeof note, "history: %s samples from %s for %.1f s, %s (LIBPPROF_HISTORY keeps %lld s)",
                       h->k->what, when, p->duration_nanos / 1e9, rate, (long long)(pp_history_keep_ns / 1000000000));
    if (h->from && h->from < oldest && len > 0 && (size_t)len < sizeof note)
        snprintf(note + len, sizeof note - (size_t)len, "; asked from %.1f s earlier than it reaches",
                 (oldest - h->from) / 1e9);
    pp_profile_add_comment(p, note);
}

typedef struct span {
    pprof_profile *p;
    const history_recorder *h;
    int64_t first, last;      /* Unix ns: what the slices added cover */
    pp_table slow, slow_units; /* with min_span: the IDs of the spans and units that lasted that long */
    size_t nslow, nslow_units;
} span;

typedef struct slow_id {
    uint64_t key;
} slow_id;

static void note_slow(uint64_t id, int unit, int64_t end_ns, void *arg)
{
    (void)end_ns;
    span *sp = arg;
    if (unit)
        sp->nslow_units += pp_table_add(&sp->slow_units, id) != NULL;
    else
        sp->nslow += pp_table_add(&sp->slow, id) != NULL;
}

/* The ID a label's 16 hex digits give; 0 for any other value. */
static uint64_t hex_id(const char *v)
{
    uint64_t id = 0;
    if (strlen(v) != 16)
        return 0;
    for (int k = 0; k < 16; k++) {
        int d = v[k] >= 'A' && v[k] <= 'F' ? -1 : pp_hex_digit((unsigned char)v[k]); /* lowercase, as written */
        if (d < 0)
            return 0;
        id = id << 4 | (uint64_t)d;
    }
    return id;
}

/* Whether sample s was taken inside one of the slow spans or units. */
static int in_slow_span(const pprof_sample *s, void *arg)
{
    const span *sp = arg;
    for (size_t i = 0; i < s->nlabels; i++) {
        const char *k = s->labels[i].key;
        if (!strcmp(k, "span_id") && pp_table_find(&sp->slow, hex_id(s->labels[i].value)))
            return 1;
        if (!strcmp(k, PP_UNIT_KEY) && pp_table_find(&sp->slow_units, hex_id(s->labels[i].value)))
            return 1;
    }
    return 0;
}

/* Adds `raw`'s values in mask to the span's profile, made on first use. */
static int add_values(span *sp, const pprof_profile *raw, uint32_t mask)
{
    if (!sp->p && !(sp->p = pp_profile_new_like(raw)))
        return pp_fail(PPROF_ENOMEM);
    return pp_profile_add_values(sp->p, raw, 1, mask);
}

/* Adds a slice (or the open window; raw NULL: one without samples) when
 * it overlaps the span; of one before it, only the states' changes. */
static int add_slice(span *sp, const pprof_profile *raw, int64_t start, int64_t dur)
{
    const history_recorder *h = sp->h;
    const pp_series *k = h->k;
    int before = h->from && start + dur < h->from;
    if ((h->until && start > h->until) || (before && !k->end_values))
        return 0;
    if (before)
        return raw ? add_values(sp, raw, k->end_values) : 0;
    if (!sp->first)
        sp->first = start;
    sp->last = start + dur;
    if (!raw)
        return 0;
    if (!sp->p && !(sp->p = pp_profile_new_like(raw)))
        return pp_fail(PPROF_ENOMEM);
    return pp_profile_add_profile_if(sp->p, raw, h->min_span ? in_slow_span : NULL, sp, PP_UNIT_KEY);
}

static int add_open(const pprof_profile *w, int64_t dur_ns, void *arg)
{
    return w ? add_slice(arg, w, w->time_nanos, dur_ns) : 0;
}

/* An empty profile of the open window's types, when nothing overlaps. */
static int add_nothing(const pprof_profile *w, int64_t dur_ns, void *arg)
{
    span *sp = arg;
    (void)dur_ns;
    return w && !(sp->p = pp_profile_new_like(w)) ? pp_fail(PPROF_ENOMEM) : 0;
}

static int history_write_to(pprof_recorder *r, pprof_profile **out)
{
    history_recorder *h = (history_recorder *)r;
    pp_series *k = h->k;
    span sp = {.h = h, .slow = PP_TABLE_INIT(slow_id), .slow_units = PP_TABLE_INIT(slow_id)};
    pp_own_heap_enter();
    if (h->min_span)
        pp_span_times_each(h->min_span, note_slow, &sp);
    pthread_mutex_lock(&pp_history_mu);
    int rc = k->rec ? 0
                    : pp_error_detail(PPROF_ESTATE, "no %s history is kept: %s", k->what,
                                      k->why_off[0] ? k->why_off : "not started yet");
    int64_t oldest = k->n ? pp_history_at(k, 0)->start : 0;
    if (rc == 0 && k->base && (!h->until || h->until >= oldest)) /* the states where the slices begin */
        rc = add_values(&sp, k->base, k->end_values);
    for (size_t i = 0; rc == 0 && i < k->n; i++)
        rc = add_slice(&sp, pp_history_at(k, i)->raw, pp_history_at(k, i)->start, pp_history_at(k, i)->dur);
    /* The open window, read where it stands: no cut, so requests never
     * make slices shorter. */
    if (rc == 0)
        rc = k->peek(k->rec, add_open, &sp);
    if (rc == 0 && !sp.p) /* nothing overlaps: an empty profile of the kind's types */
        rc = k->peek(k->rec, add_nothing, &sp);
    pprof_profile *p = sp.p;
    int64_t first = sp.first, last = sp.last;
    pthread_mutex_unlock(&pp_history_mu);
    pp_table_free(&sp.slow);
    pp_table_free(&sp.slow_units);
    pp_own_heap_leave();
    if (rc == 0 && !p)
        rc = pp_fail(PPROF_ENOMEM);
    if (rc) {
        pprof_profile_free(p);
        return rc;
    }
    if (k->end_values)
        pp_profile_drop_zero(p);
    p->time_nanos = first ? first : (h->until ? h->until : pp_now_ns(CLOCK_REALTIME));
    p->duration_nanos = last - first;
    if (h->note)
        pp_profile_add_comment(p, h->note);
    describe(p, h, oldest);
    if (h->min_span) {
        char note[200];
        snprintf(note, sizeof note,
                 "history: only the samples of the %zu spans and %zu units of work (pprof_do) that lasted %lld ms or more",
                 sp.nslow, sp.nslow_units, (long long)(h->min_span / 1000000));
        pp_profile_add_comment(p, note);
    }
    return pp_recorder_finish(r, p, out);
}

static const pp_recorder_ops history_ops = {.write_to = history_write_to};

int pp_history_write(pprof_history_kind kind, const char *note, pprof_profile **out)
{
    pprof_recorder *r = NULL;
    int rc = pprof_history_recorder_new(&(pprof_history_config){.kind = kind}, &r);
    if (rc == 0) {
        ((history_recorder *)r)->note = note;
        rc = pprof_recorder_write_to(r, out);
    }
    pprof_recorder_free(r);
    return rc;
}

PPROF_API int pprof_history_recorder_new(const pprof_history_config *cfg, pprof_recorder **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    pprof_history_config c = cfg ? *cfg : (pprof_history_config){0};
    if (c.from_unix_ns < 0 || c.until_unix_ns < 0 || (c.until_unix_ns && c.from_unix_ns > c.until_unix_ns))
        return pp_error_detail(PPROF_EINVAL, "the span must run forward: from %lld, until %lld",
                               (long long)c.from_unix_ns, (long long)c.until_unix_ns);
    if ((int)c.kind < 0 || c.kind >= PP_HISTORY_KINDS)
        return pp_error_detail(PPROF_EINVAL, "kind must be a pprof_history_kind (PPROF_HISTORY_CPU ... BLOCK), not %d",
                               (int)c.kind);
    if (!pp_history_keep_ns)
        return pp_error_detail(PPROF_ENOTSUP, "no history is kept (LIBPPROF_HISTORY=SECONDS keeps one)");
    pp_series *k = &pp_history_series[c.kind];
    pthread_mutex_lock(&pp_history_mu);
    int off = !k->rec && k->why_off[0];
    char why[sizeof k->why_off];
    snprintf(why, sizeof why, "%s", k->why_off);
    pthread_mutex_unlock(&pp_history_mu);
    if (off)
        return pp_error_detail(PPROF_ENOTSUP, "no %s history is kept: %s", k->what, why);
    if (c.min_span_ns && c.kind != PPROF_HISTORY_CPU && c.kind != PPROF_HISTORY_WALL)
        return pp_error_detail(PPROF_EINVAL, "min_span is for CPU and wall-clock samples, which carry spans");
    int64_t floor = pp_span_times_floor();
    if (c.min_span_ns && floor < 0)
        return pp_error_detail(PPROF_EINVAL, "spans are not timed in this process (their memory could not be mapped)");
    if (c.min_span_ns && c.min_span_ns < floor)
        return pp_error_detail(PPROF_EINVAL, "min_span must be at least %lld ms (LIBPPROF_HISTORY_SPAN_MS: shorter spans are not timed)",
                               (long long)(floor / 1000000));
    history_recorder *h = (history_recorder *)pp_recorder_new(sizeof *h, &history_ops);
    if (!h)
        return PPROF_ENOMEM;
    h->k = k;
    h->from = c.from_unix_ns;
    h->until = c.until_unix_ns;
    h->min_span = c.min_span_ns;
    *out = &h->base;
    return 0;
}
