/* query.c: the one parser of raw query strings (see query.h).
 *
 * A query is split at '&' into parameters, each at its first '=' into a
 * key and a value; both are percent-decoded with '+' as a space
 * (base/hex.h). A malformed %-escape is an error where a parameter is
 * read, never silently taken as text. Empty parameters are skipped by
 * the readers here.
 */
#include "query.h"
#include "base/base.h"

#include <stdarg.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pp_query_next(const char **s, pp_param *p)
{
    const char *q = *s;
    if (!q || !*q)
        return 0;
    const char *amp = strchr(q, '&');
    size_t len = amp ? (size_t)(amp - q) : strlen(q);
    const char *eq = memchr(q, '=', len);
    size_t klen = eq ? (size_t)(eq - q) : len;
    p->at = q;
    p->len = len;
    p->key_len = pp_pct_decode(q, klen, p->key, sizeof p->key - 1, PP_PCT_PLUS);
    p->key[p->key_len >= 0 && p->key_len < (long)sizeof p->key ? p->key_len : 0] = '\0';
    p->value = eq ? eq + 1 : NULL;
    p->value_len = eq ? len - klen - 1 : 0;
    *s = q + len + (amp != NULL);
    return 1;
}

int pp_param_is(const pp_param *p, const char *key)
{
    size_t n = strlen(key);
    return p->key_len >= 0 && (size_t)p->key_len == n && n < sizeof p->key && memcmp(p->key, key, n) == 0;
}

long pp_param_value(const pp_param *p, char *out, size_t cap)
{
    return p->value ? pp_pct_decode(p->value, p->value_len, out, cap, PP_PCT_PLUS) : 0;
}

int pp_query_find(const char *query, const char *key, char *out, size_t cap)
{
    int found = 0;
    out[0] = '\0';
    pp_param p;
    for (const char *s = query; pp_query_next(&s, &p);) {
        if (!p.value || !pp_param_is(&p, key))
            continue;
        found++;
        long n = pp_param_value(&p, out, cap - 1);
        out[n < 0 ? 0 : n < (long)cap - 1 ? n : (long)cap - 1] = '\0';
    }
    return found;
}

/* Whether p has a value and one of the keys. */
static int taken(const pp_param *p, const char *const *keys, size_t nkeys)
{
    for (size_t i = 0; p->value && i < nkeys; i++)
        if (pp_param_is(p, keys[i]))
            return 1;
    return 0;
}

char *pp_query_without(const char *query, const char *const *keys, size_t nkeys)
{
    pp_param p;
    int any = 0;
    for (const char *s = query; !any && pp_query_next(&s, &p);)
        any = taken(&p, keys, nkeys);
    char *rest = any ? malloc(strlen(query) + 1) : NULL;
    if (!rest)
        return NULL;
    size_t n = 0;
    for (const char *s = query; pp_query_next(&s, &p);) {
        if (p.len == 0 || taken(&p, keys, nkeys))
            continue;
        if (n)
            rest[n++] = '&';
        memcpy(rest + n, p.at, p.len);
        n += p.len;
    }
    rest[n] = '\0';
    return rest;
}

int pp_parse_int(const char *s, size_t n, long long *v)
{
    size_t i = 0;
    int neg = 0;
    long long x = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i == n)
        return -1;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (s[i] - '0');
        if (x > INT32_MAX)
            return -1;
    }
    *v = neg ? -x : x;
    return 0;
}

/* Writes the reason for a 400 into why; returns -1 for pp_query_parse. */
static int bad(char *why, size_t why_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* seconds=, debug= or gc=: a decimal integer, given once. */
static int parse_number(const pp_param *p, int which, int max_seconds, pp_query *pq, char *why, size_t why_size)
{
    static const char *const names[] = {"seconds", "debug", "gc"};
    int *has = which == 0 ? &pq->has_seconds : which == 1 ? &pq->has_debug : &pq->has_gc;
    int *out = which == 0 ? &pq->seconds : which == 1 ? &pq->debug : &pq->gc;
    char val[32];
    long vl = pp_param_value(p, val, sizeof val);
    long long v = 0;
    if (vl < 0)
        return bad(why, why_size, "malformed query - bad %%-escape");
    if (*has)
        return bad(why, why_size, "parameter \"%s\" given more than once", names[which]);
    int ok = vl < (long)sizeof val && pp_parse_int(val, (size_t)vl, &v) == 0;
    if (which == 0) {
        if (!ok || v <= 0)
            return bad(why, why_size, "invalid value for \"seconds\" - must be a positive integer");
        if (v > max_seconds)
            return bad(why, why_size, "invalid value for \"seconds\" - must be at most %d", max_seconds);
    } else if (!ok) {
        return bad(why, why_size, "invalid value for \"%s\" - must be an integer", names[which]);
    } else if (which == 1 && v < 0) {
        return bad(why, why_size, "invalid value for \"debug\" - must be 0 or more");
    }
    *has = 1;
    *out = (int)v;
    return 0;
}

/* format=, labels=, sample_index=, symbolize=, hub_names= and window_ms=:
 * how the profile is written. 1 when p is none of them. */
static int parse_output(const pp_param *p, pp_query *pq, char *why, size_t why_size)
{
    char val[32];
    if (pp_param_is(p, "format")) {
        long vl = pp_param_value(p, val, sizeof val);
        if (pq->out.format)
            return bad(why, why_size, "parameter \"format\" given more than once");
        if (vl == 5 && memcmp(val, "proto", 5) == 0)
            pq->out.format = PP_OUT_PROTO;
        else if (vl == 6 && memcmp(val, "folded", 6) == 0)
            pq->out.format = PP_OUT_FOLDED;
        else
            return bad(why, why_size, "invalid value for \"format\" - must be proto or folded");
    } else if (pp_param_is(p, "labels")) {
        long vl = pp_param_value(p, val, sizeof val);
        if (vl != 1 || (val[0] != '0' && val[0] != '1'))
            return bad(why, why_size, "invalid value for \"labels\" - must be 0 or 1");
        pq->out.labels = val[0] == '1';
    } else if (pp_param_is(p, "sample_index")) {
        char *si = pq->out.sample_index;
        long vl = pp_param_value(p, si, sizeof pq->out.sample_index);
        if (vl <= 0 || vl >= (long)sizeof pq->out.sample_index || memchr(si, 0, (size_t)vl))
            return bad(why, why_size,
                       "invalid value for \"sample_index\" - must be a sample type's name or index");
        si[vl] = 0;
    } else if (pp_param_is(p, "symbolize")) {
        static const char *const hows[] = {"full", "functions", "none"};
        long vl = pp_param_value(p, val, sizeof val);
        if (pq->symbolize)
            return bad(why, why_size, "parameter \"symbolize\" given more than once");
        for (int i = 0; i < 3 && vl >= 0 && vl < (long)sizeof val; i++)
            if ((size_t)vl == strlen(hows[i]) && memcmp(val, hows[i], (size_t)vl) == 0)
                pq->symbolize = (pprof_symbolize)(PPROF_SYMBOLIZE_FULL + i);
        if (!pq->symbolize)
            return bad(why, why_size, "invalid value for \"symbolize\" - must be full, functions or none");
    } else if (pp_param_is(p, "hub_names")) {
        long vl = pp_param_value(p, val, sizeof val);
        if (vl != 1 || (val[0] != '0' && val[0] != '1'))
            return bad(why, why_size, "invalid value for \"hub_names\" - must be 0 or 1");
        pq->hub_names = val[0] == '1';
    } else if (pp_param_is(p, "window_ms")) {
        long vl = pp_param_value(p, val, sizeof val);
        long long v = 0;
        if (vl <= 0 || vl >= (long)sizeof val || pp_parse_int(val, (size_t)vl, &v) || v <= 0 || v > INT32_MAX)
            return bad(why, why_size, "invalid value for \"window_ms\" - must be a positive integer");
        pq->window_ms = (int)v;
    } else {
        return 1;
    }
    return 0;
}

/* last=, from= and until=: the span of a profile of the past. 1 when p
 * is none of them. */
static int parse_past(const pp_param *p, pp_query *pq, char *why, size_t why_size)
{
    static const char *const names[] = {"last", "from", "until", "min_span_ms"};
    int which = -1;
    for (int i = 0; i < 4; i++)
        if (pp_param_is(p, names[i]))
            which = i;
    if (which < 0)
        return 1;
    char val[32];
    long vl = pp_param_value(p, val, sizeof val);
    long long v = 0;
    char *end = NULL;
    int unix_s = which == 1 || which == 2;
    if (vl > 0 && vl < (long)sizeof val && unix_s) { /* Unix seconds: past 2038 too */
        val[vl] = '\0';
        errno = 0;
        v = val[0] >= '0' && val[0] <= '9' ? strtoll(val, &end, 10) : 0;
        if (errno || !end || *end || v > 9000000000ll) /* in ns, within int64 */
            v = 0;
    }
    int seen = which == 0 ? pq->last != 0 : which == 1 ? pq->from != 0 : which == 2 ? pq->until != 0 : pq->min_span_ms != 0;
    if (seen)
        return bad(why, why_size, "parameter \"%s\" given more than once", names[which]);
    if (vl <= 0 || vl >= (long)sizeof val || (!unix_s && pp_parse_int(val, (size_t)vl, &v)) || v <= 0)
        return bad(why, why_size, "invalid value for \"%s\" - must be a positive integer%s", names[which],
                   which == 3 ? " (milliseconds)" : which ? " (Unix seconds)" : " (seconds)");
    if (which == 3) {
        pq->min_span_ms = (int)v;
        return 0;
    }
    pq->has_past = 1;
    if (which == 0)
        pq->last = (int)v;
    else if (which == 1)
        pq->from = v;
    else
        pq->until = v;
    return 0;
}

int pp_query_parse(const char *query, int max_seconds, pp_query *pq, char *why, size_t why_size)
{
    static const char *const numbers[] = {"seconds", "debug", "gc"};
    memset(pq, 0, sizeof *pq);
    pp_param p;
    for (const char *s = query; pp_query_next(&s, &p);) {
        if (p.key_len < 0)
            return bad(why, why_size, "malformed query - bad %%-escape");
        int rc = parse_output(&p, pq, why, why_size);
        if (rc > 0)
            rc = parse_past(&p, pq, why, why_size);
        if (rc < 0)
            return rc;
        for (int i = 0; rc > 0 && i < 3; i++)
            if (pp_param_is(&p, numbers[i]) && parse_number(&p, i, max_seconds, pq, why, why_size))
                return -1;
    }
    if (pq->min_span_ms && !pq->has_past)
        return bad(why, why_size, "min_span_ms goes with last, from or until (a profile of the past)");
    if (pq->last && (pq->from || pq->until))
        return bad(why, why_size, "last and from/until params are incompatible");
    if (pq->has_past && pq->has_seconds)
        return bad(why, why_size, "seconds and last/from/until params are incompatible");
    if (pq->from && pq->until && pq->from > pq->until)
        return bad(why, why_size, "from must not be after until");
    if (pq->out.format && pq->has_debug && pq->debug)
        return bad(why, why_size, "format and debug params are incompatible");
    if ((pq->out.labels || pq->out.sample_index[0]) && pq->out.format != PP_OUT_FOLDED)
        return bad(why, why_size, "\"labels\" and \"sample_index\" go with format=folded");
    return 0;
}
