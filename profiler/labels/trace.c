/* trace.c: each thread's trace context (span), and the labels it gives.
 *
 * The current context is an initial-exec TLS pointer to the caller's own
 * pprof_trace_context, so entering and leaving a span are two stores and
 * nothing is copied or allocated. The profiling signal handler runs on the
 * thread it samples, inside the scope that entered the context, so the
 * struct and its span name are alive while it copies them into the sample
 * (pp_trace_capture). A new thread gets a copy of its creator's context
 * (the creator's scope may end first), kept in a TLS slot of its own.
 * Every change is also written to the thread's OpenTelemetry record
 * (otel/). Thread dumps and the wall sampler read a waiting thread's
 * context from outside it through the address of its pointer
 * (pp_trace_slot; threads/ copies it with process_vm_readv), and the
 * thread's unit of work (a pprof_do call, span_times.c) in the word after
 * it. With the history's slow-span filter on, entering and leaving also
 * time the span (span_times.c).
 */
#include "labels.h"
#include "base/base.h"
#include "otel/otel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The current context, then the unit of work: pp_trace_slot's layout. */
static __thread struct {
    const pprof_trace_context *cur;
    uint64_t unit;
} tls;

/* A thread's inherited context: a copy, with the span name copied too. */
static __thread struct {
    pprof_trace_context ctx;
    char name[PP_SPAN_NAME_MAX];
} inherited;

/* async-signal-safe */
const pprof_trace_context *pprof_trace_enter(const pprof_trace_context *ctx)
{
    const pprof_trace_context *prev = tls.cur;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    tls.cur = ctx;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pp_otel_thread_trace(ctx);
    pp_span_times_enter(ctx);
    return prev;
}

/* async-signal-safe */
void pprof_trace_leave(const pprof_trace_context *previous)
{
    pp_span_times_leave(tls.cur);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    tls.cur = previous;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pp_otel_thread_trace(previous);
}

/* async-signal-safe */
const pprof_trace_context *pprof_trace_current(void)
{
    return tls.cur;
}

/* async-signal-safe */
void pp_trace_capture(pp_trace_snap *out)
{
    const pprof_trace_context *c = tls.cur;
    out->on = 0;
    out->unit = tls.unit;
    if (!c)
        return;
    uint8_t any = 0;
    for (int i = 0; i < 16; i++)
        any |= c->trace_id[i];
    if (!any)
        return;
    memcpy(out->trace_id, c->trace_id, sizeof out->trace_id);
    memcpy(out->span_id, c->span_id, sizeof out->span_id);
    out->flags = c->trace_flags;
    size_t n = 0;
    if (c->span_name)
        for (; n < PP_SPAN_NAME_MAX - 1 && c->span_name[n]; n++)
            out->span_name[n] = c->span_name[n];
    out->span_name[n] = 0;
    out->on = 1;
}

void pp_trace_adopt(const pp_trace_snap *t)
{
    if (!t->on) {
        pprof_trace_enter(NULL);
        return;
    }
    memcpy(inherited.ctx.trace_id, t->trace_id, sizeof t->trace_id);
    memcpy(inherited.ctx.span_id, t->span_id, sizeof t->span_id);
    inherited.ctx.trace_flags = t->flags;
    memcpy(inherited.name, t->span_name, sizeof inherited.name);
    inherited.ctx.span_name = inherited.name[0] ? inherited.name : NULL;
    pprof_trace_enter(&inherited.ctx);
}

void *const *pp_trace_slot(void)
{
    return (void *const *)&tls.cur;
}

/* async-signal-safe */
uint64_t pp_trace_unit(void)
{
    return tls.unit;
}

/* async-signal-safe */
void pp_trace_set_unit(uint64_t unit)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    tls.unit = unit;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

size_t pp_trace_labels(const void *set, const pp_trace_snap *t, int what, pp_trace_text *text, pprof_label **out)
{
    const pprof_label *pairs = NULL;
    size_t n = set ? pp_labels_pairs(set, &pairs) : 0;
    return pp_trace_pairs(pairs, n, t, what, text, out);
}

size_t pp_trace_pairs(const pprof_label *pairs, size_t n, const pp_trace_snap *t, int what, pp_trace_text *text,
                      pprof_label **out)
{
    *out = NULL;
    int unit = what & PP_TRACE_UNIT_LABEL && t->unit;
    if (!t->on && !unit) {
        *out = (pprof_label *)pairs;
        return n;
    }
    /* The span's pairs, sorted by key as a set's are. */
    pprof_label span[4];
    size_t ns = 0;
    if (unit) {
        snprintf(text->unit, sizeof text->unit, "%016" PRIx64, t->unit);
        span[ns++] = (pprof_label){PP_UNIT_KEY, text->unit};
    }
    if (t->on) {
        pp_hex_encode(text->span_id, t->span_id, sizeof t->span_id);
        span[ns++] = (pprof_label){"span_id", text->span_id};
        if (t->span_name[0])
            span[ns++] = (pprof_label){"span_name", t->span_name};
        if (what & PP_TRACE_ID_LABEL) {
            pp_hex_encode(text->trace_id, t->trace_id, sizeof t->trace_id);
            span[ns++] = (pprof_label){"trace_id", text->trace_id};
        }
    }
    pprof_label *m = text->pairs;
    if (n + ns > sizeof text->pairs / sizeof *text->pairs &&
        !(m = text->heap = malloc((n + ns) * sizeof *m)))
        return 0;
    size_t i = 0, j = 0, k = 0;
    while (i < n || j < ns) {
        int c = i == n ? 1 : j == ns ? -1 : strcmp(pairs[i].key, span[j].key);
        if (c < 0)
            m[k++] = pairs[i++];
        else {
            i += c == 0; /* the span's value wins */
            m[k++] = span[j++];
        }
    }
    *out = m;
    return k;
}

void pp_trace_text_free(pp_trace_text *text)
{
    free(text->heap);
    text->heap = NULL;
}
