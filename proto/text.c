/* text.c: Go's debug=1 text formats.
 *
 * Heap (period type space/bytes), as runtime/pprof writes it:
 *   heap profile: <inuse objs>: <inuse bytes> [<alloc objs>: <alloc bytes>] @ heap/<2*rate>
 *   <io>: <ib> [<ao>: <ab>] @ 0x<return address> ...
 *   #	0x<pc>	<function>	<file>:<line>
 * records sorted by in-use bytes, largest first, each ending in a blank
 * line. The values are the profile's (a recorder configured with `raw`
 * gives Go's unscaled counts). The "@" line has return addresses (call site
 * + 1) as Go's does; "#" lines show each frame's call site with its offset
 * in the function ("+0x.." from the symbol's start; inlined frames share
 * the physical function's), inlined frames innermost first, and a
 * "# labels:" line when the record has labels. Count profiles (goroutine,
 * threadcreate, custom) and the per-thread dump: see count_text and
 * dump_text.
 */
#define _GNU_SOURCE /* qsort_r */
#include "encode.h"
#include "base/base.h"
#include "model/model.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
    pprof_writer w;
    int err;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
    if (o->err)
        return;
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    if (o->w.write(o->w.ctx, buf, (size_t)n) != 0)
        o->err = pp_error_detail(PPROF_EIO, "the writer failed");
}

typedef struct order_ctx {
    const pp_model_view *p;
    size_t k;
} order_ctx;

static int by_value(const void *a, const void *b, void *arg)
{
    const order_ctx *c = arg;
    int64_t x = c->p->samples[*(const size_t *)a].values[c->k];
    int64_t y = c->p->samples[*(const size_t *)b].values[c->k];
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The samples' indexes, largest value of type k first (malloc'd). */
static size_t *sorted_by(const pp_model_view *p, size_t k)
{
    size_t *order = malloc((p->nsamples + 1) * sizeof *order);
    if (!order)
        return NULL;
    for (size_t i = 0; i < p->nsamples; i++)
        order[i] = i;
    order_ctx c = {p, k};
    qsort_r(order, p->nsamples, sizeof *order, by_value, &c);
    return order;
}

static void put_frames(out *o, const pprof_sample *s)
{
    put(o, " @");
    for (size_t j = 0; j < s->nlocations; j++)
        put(o, " 0x%" PRIx64, s->locations[j]->address + 1);
    put(o, "\n");
    if (s->nlabels) {
        put(o, "# labels: {");
        for (size_t k = 0; k < s->nlabels; k++)
            put(o, "%s\"%s\":\"%s\"", k ? ", " : "", s->labels[k].key, s->labels[k].value);
        put(o, "}\n");
    }
    for (size_t j = 0; j < s->nlocations; j++) {
        const pprof_location *l = s->locations[j];
        if (l->nlines == 0)
            put(o, "#\t0x%" PRIx64 "\n", l->address);
        char off[32] = "";
        if (l->symbol_start && l->address >= l->symbol_start)
            snprintf(off, sizeof off, "+0x%" PRIx64, l->address - l->symbol_start);
        for (size_t k = 0; k < l->nlines; k++) {
            const pprof_line *ln = &l->lines[k];
            const char *fn = ln->function[0] ? ln->function : ln->system_name;
            if (ln->filename[0])
                put(o, "#\t0x%" PRIx64 "\t%s%s\t%s:%" PRId64 "\n", l->address, fn, off, ln->filename, ln->line);
            else
                put(o, "#\t0x%" PRIx64 "\t%s%s\n", l->address, fn, off);
        }
    }
    put(o, "\n");
}

static int heap_text(const pp_model_view *p, out *o)
{
    size_t *order = sorted_by(p, 3); /* in-use bytes */
    if (!order)
        return pp_fail(PPROF_ENOMEM);
    int64_t t[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < p->nsamples; i++)
        for (int k = 0; k < 4; k++)
            t[k] += p->samples[i].values[k];
    put(o, "heap profile: %" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "] @ heap/%" PRId64 "\n", t[2], t[3],
        t[0], t[1], 2 * p->period);
    for (size_t i = 0; i < p->nsamples && !o->err; i++) {
        const pprof_sample *s = &p->samples[order[i]];
        put(o, "%" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "]", s->values[2], s->values[3], s->values[0],
            s->values[1]);
        put_frames(o, s);
    }
    free(order);
    return o->err;
}

/* Counts by stack (goroutine, threadcreate, custom profiles):
 *   <type> profile: total N
 *   <count> @ 0x... 0x...
 *   # labels: {"k":"v"}
 *   #	0x<pc>	<function>	<file>:<line>
 * largest counts first. */
static int count_text(const pp_model_view *p, out *o)
{
    size_t *order = sorted_by(p, 0);
    if (!order)
        return pp_fail(PPROF_ENOMEM);
    int64_t total = 0;
    for (size_t i = 0; i < p->nsamples; i++)
        total += p->samples[i].values[0];
    put(o, "%s profile: total %" PRId64 "\n", p->types[0].type, total);
    for (size_t i = 0; i < p->nsamples && !o->err; i++) {
        const pprof_sample *s = &p->samples[order[i]];
        put(o, "%" PRId64, s->values[0]);
        put_frames(o, s);
    }
    free(order);
    return o->err;
}

static const char *label_of(const pprof_sample *s, const char *key)
{
    for (size_t k = 0; k < s->nlabels; k++)
        if (!strcmp(s->labels[k].key, key))
            return s->labels[k].value;
    return "";
}

/* One stanza per thread (a per_thread thread profile), like Go's debug=2,
 * after the profile's comments (each on a line of its own, after "# "):
 *   thread <tid> "<name>" [<state>]:
 *   labels: {"k":"v"}
 *   <function>
 *   	<file>:<line>
 */
static int dump_text(const pp_model_view *p, out *o)
{
    for (size_t i = 0; i < p->ncomments; i++)
        put(o, "# %s\n", p->comments[i]);
    if (p->ncomments)
        put(o, "\n");
    for (size_t i = 0; i < p->nsamples && !o->err; i++) {
        const pprof_sample *s = &p->samples[i];
        put(o, "thread %s \"%s\" [%s]:\n", label_of(s, "thread.id"), label_of(s, "thread.name"),
            label_of(s, "thread.state"));
        int first = 1;
        for (size_t k = 0; k < s->nlabels; k++) {
            if (!strncmp(s->labels[k].key, "thread.", 7))
                continue;
            put(o, "%s\"%s\":\"%s\"", first ? "labels: {" : ", ", s->labels[k].key, s->labels[k].value);
            first = 0;
        }
        if (!first)
            put(o, "}\n");
        for (size_t j = 0; j < s->nlocations; j++) {
            const pprof_location *l = s->locations[j];
            if (l->nlines == 0)
                put(o, "0x%" PRIx64 "\n", l->address);
            for (size_t k = 0; k < l->nlines; k++) {
                const pprof_line *ln = &l->lines[k];
                put(o, "%s\n", ln->function[0] ? ln->function : ln->system_name);
                if (ln->filename[0])
                    put(o, "\t%s:%" PRId64 "\n", ln->filename, ln->line);
            }
        }
        put(o, "\n");
    }
    return o->err;
}

/* Mutex and block (the first comment names the kind and rate):
 *   --- mutex:                 (--- contention: for block)
 *   cycles/second=1000000000   (delays are in ns)
 *   sampling period=<F>        (mutex)
 *   <delay ns> <count> @ 0x...
 *   #	0x<pc>	<function>	<file>:<line>
 * largest delay first. */
static int contention_text(const pp_model_view *p, out *o)
{
    const char *c = p->ncomments ? p->comments[0] : "";
    int mutex = !strncmp(c, "mutex", 5);
    long long period = 0;
    const char *num = strpbrk(c, "0123456789");
    if (num)
        period = strtoll(num, NULL, 10);
    size_t *order = sorted_by(p, 1); /* delay */
    if (!order)
        return pp_fail(PPROF_ENOMEM);
    put(o, "--- %s:\ncycles/second=1000000000\n", mutex ? "mutex" : "contention");
    if (mutex)
        put(o, "sampling period=%lld\n", period);
    for (size_t i = 0; i < p->nsamples && !o->err; i++) {
        const pprof_sample *s = &p->samples[order[i]];
        put(o, "%" PRId64 " %" PRId64, s->values[1], s->values[0]);
        put_frames(o, s);
    }
    free(order);
    return o->err;
}

int pp_encode_text(const pprof_profile *prof, pprof_writer w, int dump)
{
    pp_model_view view, *p = &view;
    if (prof)
        pp_model_view_of(prof, p);
    if (!prof || !w.write || !p->finished)
        return pp_error_detail(PPROF_EINVAL, "NULL or unfinished profile, or NULL writer");
    out o = {w, 0};
    if (dump) {
        if (!strcmp(p->period_type.type, "goroutine"))
            return dump_text(p, &o);
        return pp_error_detail(PPROF_ENOTSUP, "the dump format is for thread profiles");
    }
    if (p->ntypes >= 4 && !strcmp(p->period_type.type, "space") && !strcmp(p->types[3].type, "inuse_space"))
        return heap_text(p, &o);
    if (p->ntypes == 1 && !strcmp(p->types[0].unit, "count"))
        return count_text(p, &o);
    if (p->ntypes == 2 && !strcmp(p->types[0].type, "contentions"))
        return contention_text(p, &o);
    return pp_error_detail(PPROF_ENOTSUP, "no text format for profiles of %s", p->period_type.type);
}
