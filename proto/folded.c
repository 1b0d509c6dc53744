/* folded.c: a profile as folded stacks (flame-graph tools' input): one
 * line per distinct stack, root first, frames joined by ';', then a space
 * and the sum of one sample type's values; optionally the sample's labels
 * first, in brackets. Lines are sorted, so equal stacks are summed.
 */
#define _GNU_SOURCE /* qsort_r */
#include "encode.h"
#include "wire.h"

#include "base/base.h"
#include "model/model.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable text buffer for the folded lines. */
typedef struct fbuf {
    char *p;
    size_t n, cap;
    int oom;
} fbuf;

static void fbuf_put(fbuf *b, const char *s, size_t n)
{
    if (b->oom || n == 0) /* an empty name before the buffer exists */
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->n + n)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* A frame name; ';' (the frame separator) becomes ':' and line breaks
 * spaces, so every stack stays one well-formed line. */
static void fbuf_frame(fbuf *b, const char *name)
{
    while (*name) {
        size_t n = strcspn(name, ";\n\r");
        fbuf_put(b, name, n);
        name += n;
        if (*name) {
            fbuf_put(b, *name == ';' ? ":" : " ", 1);
            name++;
        }
    }
}

typedef struct fline {
    size_t off, len; /* the stack's text in the fbuf */
    int64_t value;
} fline;

static int cmp_fline(const void *x, const void *y, void *arg)
{
    const fline *a = x, *b = y;
    const char *text = arg;
    int c = memcmp(text + a->off, text + b->off, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The index of the value to write, or -1 after recording the error. */
static int folded_value_index(const pp_model_view *v, const char *want)
{
    if (!want || !*want)
        return v->default_type >= 0 && (size_t)v->default_type < v->ntypes ? v->default_type
                                                                             : (int)v->ntypes - 1;
    char *end;
    long i = strtol(want, &end, 10);
    if (*want >= '0' && *want <= '9' && !*end)
        return i >= 0 && (size_t)i < v->ntypes ? (int)i : -1;
    for (size_t k = 0; k < v->ntypes; k++)
        if (v->types[k].type && !strcmp(v->types[k].type, want))
            return (int)k;
    return -1;
}

static int no_such_type(const pp_model_view *v, const char *want)
{
    char names[256] = "";
    size_t n = 0;
    for (size_t k = 0; k < v->ntypes && n < sizeof names; k++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", k ? ", " : "",
                              v->types[k].type ? v->types[k].type : "?");
    return pp_error_detail(PPROF_ENOTFOUND, "no sample type \"%s\" in this profile (it has %s)", want, names);
}

int pprof_profile_write_folded(const pprof_profile *p, const pprof_folded_config *cfg, pprof_writer w)
{
    if (!p || !w.write)
        return pp_error_detail(PPROF_EINVAL, "NULL profile or writer");
    pp_model_view view;
    pp_model_view_of(p, &view);
    return pp_write_folded_view(&view, cfg, w);
}

int pp_write_folded_view(const struct pp_model_view *v, const pprof_folded_config *cfg, pprof_writer w)
{
    pp_encode_maxima mx;
    int rc = pp_encode_validate(v, false, &mx);
    if (rc)
        return rc;
    int vi = folded_value_index(v, cfg ? cfg->sample_type : NULL);
    if (vi < 0 && (v->ntypes || (cfg && cfg->sample_type && *cfg->sample_type)))
        return no_such_type(v, cfg->sample_type ? cfg->sample_type : "");

    fbuf b = {0};
    fline *lines = malloc((v->nsamples ? v->nsamples : 1) * sizeof *lines);
    size_t nl = 0;
    char num[32];
    for (size_t i = 0; lines && i < v->nsamples && !b.oom; i++) {
        const pprof_sample *sm = &v->samples[i];
        int64_t value = vi >= 0 && (size_t)vi < sm->nvalues ? sm->values[vi] : 0;
        if (value == 0)
            continue;
        size_t off = b.n;
        bool first = true;
        if (cfg && cfg->labels && sm->nlabels) {
            fbuf_put(&b, "[", 1);
            for (size_t k = 0; k < sm->nlabels; k++) {
                if (k)
                    fbuf_put(&b, " ", 1);
                fbuf_frame(&b, sm->labels[k].key ? sm->labels[k].key : "");
                fbuf_put(&b, "=", 1);
                fbuf_frame(&b, sm->labels[k].value ? sm->labels[k].value : "");
            }
            fbuf_put(&b, "]", 1);
            first = false;
        }
        /* Root first: locations are stored leaf first, and a location's
         * lines innermost first, so both are walked backwards. */
        for (size_t j = sm->nlocations; j-- > 0;) {
            const pprof_location *l = sm->locations[j];
            size_t k = l->nlines;
            do {
                const char *name = NULL;
                if (k > 0) {
                    k--;
                    name = l->lines[k].function;
                    if (!name || !name[0])
                        name = l->lines[k].system_name;
                }
                if (!first)
                    fbuf_put(&b, ";", 1);
                first = false;
                if (name && name[0]) {
                    fbuf_frame(&b, name);
                } else {
                    int n = snprintf(num, sizeof num, "0x%" PRIx64, l->address);
                    fbuf_put(&b, num, (size_t)n);
                }
            } while (k > 0);
        }
        if (b.n == off)
            continue; /* no frame and no label: a folded line cannot say it */
        lines[nl++] = (fline){off, b.n - off, value};
    }
    if (!lines || b.oom) {
        free(lines);
        free(b.p);
        return pp_fail(PPROF_ENOMEM);
    }
    if (nl > 1)
        qsort_r(lines, nl, sizeof *lines, cmp_fline, b.p);
    pp_sink *s;
    rc = pp_sink_new(w, false, &s);
    for (size_t i = 0; rc == 0 && i < nl && s->err == 0;) {
        size_t j = i + 1;
        int64_t sum = lines[i].value;
        for (; j < nl && cmp_fline(&lines[i], &lines[j], b.p) == 0; j++)
            sum += lines[j].value;
        if (sum != 0) {
            pp_sink_put(s, b.p + lines[i].off, lines[i].len);
            int n = snprintf(num, sizeof num, " %" PRId64 "\n", sum);
            pp_sink_put(s, num, (size_t)n);
        }
        i = j;
    }
    free(lines);
    free(b.p);
    return rc ? rc : pp_sink_close(s, true);
}
