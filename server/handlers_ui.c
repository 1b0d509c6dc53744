/* handlers_ui.c: the flame-graph page, {prefix}ui. web/ui.html with the
 * prefix, the profiles this server offers and the scripts of web/ filled
 * in; the page fetches the profiles itself. Its parameters are checked
 * here, so a bad link answers 400 with the reason like every endpoint:
 *   profile=NAME    a profile of the index (default: profile, the CPU one)
 *   seconds=N       a window of N seconds (1..max_seconds; 0: a snapshot)
 *   last=N          the last N seconds from the history (profile, or wall
 *                   when LIBPPROF_HISTORY_WALL keeps it), at once
 *   sample_index=S  the value shown first, by name or index: one the
 *                   profile has (checked against its sample types)
 *   focus=K=V,...   the label filter (key=regexp or key!=regexp terms)
 *   search=RE       frames to highlight
 *   inverted=0|1    callers below their callees
 *   diff=N          this profile as the base, compared with the same one N
 *                   seconds later
 *   pid=N, tree=0|1, gc=N, token=T   passed on to the profile's endpoint
 */
#include "endpoints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((visibility("hidden"))) extern const unsigned char pp_web_ui_html[], pp_web_profile_js[],
    pp_web_ui_js[];
__attribute__((visibility("hidden"))) extern const size_t pp_web_ui_html_len, pp_web_profile_js_len,
    pp_web_ui_js_len;

enum { P_NAME, P_SECONDS, P_INDEX, P_FOCUS, P_SEARCH, P_INVERTED, P_DIFF, P_PID, P_TREE, P_GC, P_TOKEN, P_LAST };
static const struct {
    const char *key;
    char kind; /* n: a profile's name, i: integer (min..max), b: 0 or 1, t: text */
    long long min;
} params[] = {
    [P_NAME] = {"profile", 'n', 0},  [P_SECONDS] = {"seconds", 'i', 0}, [P_INDEX] = {"sample_index", 't', 0},
    [P_FOCUS] = {"focus", 't', 0},   [P_SEARCH] = {"search", 't', 0},   [P_INVERTED] = {"inverted", 'b', 0},
    [P_DIFF] = {"diff", 'i', 1},     [P_PID] = {"pid", 'i', 1},         [P_TREE] = {"tree", 'b', 0},
    [P_GC] = {"gc", 'i', -2147483647}, [P_TOKEN] = {"token", 't', 0}, [P_LAST] = {"last", 'i', 0},
};
#define NPARAMS (sizeof params / sizeof *params)

/* The sample types of the profiles the page shows, in each profile's
 * order (a custom profile's one type is its name). A new kind of profile
 * adds its row: test_http_checks compares these with the profiles. */
static const struct {
    const char *names[5], *types[5];
} kinds[] = {
    {{"profile"}, {"samples", "cpu"}},
    {{"heap", "allocs", "delta_heap"}, {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}},
    {{"mutex", "block", "delta_mutex", "delta_block"}, {"contentions", "delay"}},
    {{"goroutine", "threads"}, {"goroutine"}},
    {{"threadcreate"}, {"threadcreate"}},
    {{"wall"}, {"samples", "wall"}},
    {{"fgprof"}, {"samples", "time"}},
    {{"memory"}, {"resident_space"}},
};

/* The sample types of profile `name` (*n of them), or NULL when the page
 * does not know them. */
static const char *const *types_of(const char *name, const char *custom[1], size_t *n)
{
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t i = 0; i < 5 && kinds[k].names[i]; i++)
            if (!strcmp(kinds[k].names[i], name)) {
                for (*n = 0; *n < 5 && kinds[k].types[*n]; ++*n)
                    ;
                return kinds[k].types;
            }
    if (!pprof_custom_find(name))
        return NULL;
    custom[0] = name;
    *n = 1;
    return custom;
}

/* 0 when `si` (a name or an index) is a sample type of profile `name`,
 * or 1 after answering 400 with the ones it has. */
static int check_sample_index(pp_req *q, const char *name, const char *si)
{
    const char *custom[1];
    size_t n = 0;
    const char *const *types = types_of(name, custom, &n);
    if (!types)
        return 0;
    size_t digits = strspn(si, "0123456789");
    if (digits < 4 && si[digits] == 0 && (size_t)atoi(si) < n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(types[i], si))
            return 0;
    char list[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i == 0 ? "" : i + 1 < n ? ", " : " or ",
                                types[i]);
    pp_reply_error(q, 400, "invalid value for \"sample_index\" - the %s profile has %s (or an index from 0 to %zu)",
                   name, list, n - 1);
    return 1;
}

/* The seconds the history keeps of profile `name`; 0 when it keeps none. */
static long long kept_s(const char *name)
{
    pprof_history_stats hs;
    pprof_history_stats_get(&hs);
    for (unsigned k = 0; k < PP_HISTORY_KINDS; k++)
        if (!strcmp(name, pp_history_endpoints[k]) && (hs.kinds >> k & 1))
            return hs.keep_ns / 1000000000;
    return 0;
}

/* 0, or 1 after answering 400. */
static int check_params(pp_req *q)
{
    int seen[NPARAMS] = {0};
    char val[512], sample_index[512] = "", name[512] = "profile";
    pp_param p;
    for (const char *s = q->req->query; pp_query_next(&s, &p);) {
        long vl = pp_param_value(&p, val, sizeof val - 1);
        if (p.key_len < 0 || vl < 0)
            return pp_reply_error(q, 400, "malformed query - bad %%-escape"), 1;
        if (p.len == 0)
            continue;
        if (p.key_len >= (long)sizeof p.key - 1)
            return pp_reply_error(q, 400, "unknown parameter for the flame-graph page"), 1;
        const char *key = p.key;
        size_t i = 0;
        while (i < NPARAMS && strcmp(params[i].key, key))
            i++;
        if (i == NPARAMS)
            return pp_reply_error(q, 400, "unknown parameter \"%s\" for the flame-graph page", key), 1;
        if (seen[i]++)
            return pp_reply_error(q, 400, "parameter \"%s\" given more than once", key), 1;
        if (vl >= (long)sizeof val - 1 || memchr(val, 0, (size_t)vl))
            return pp_reply_error(q, 400, "invalid value for \"%s\" - too long", key), 1;
        val[vl] = 0;
        long long v = 0;
        switch (params[i].kind) {
        case 'n':
            if (!pp_profile_names(val, NULL, NULL))
                return pp_reply_error(q, 400, "invalid value for \"profile\" - no profile is named \"%s\"", val),
                       1;
            memcpy(name, val, (size_t)vl + 1);
            break;
        case 'b':
            if (strcmp(val, "0") && strcmp(val, "1"))
                return pp_reply_error(q, 400, "invalid value for \"%s\" - must be 0 or 1", key), 1;
            break;
        case 'i': {
            long long max = i == P_SECONDS || i == P_DIFF ? q->cfg.max_seconds : 2147483647;
            if (pp_parse_int(val, (size_t)vl, &v) || v < params[i].min || v > max)
                return pp_reply_error(q, 400, "invalid value for \"%s\" - must be an integer from %lld to %lld",
                                      key, params[i].min, max),
                       1;
            break;
        }
        default:
            if (i == P_INDEX && vl == 0)
                return pp_reply_error(q, 400, "invalid value for \"sample_index\" - must be a sample type's name "
                                              "or index"),
                       1;
            if (i == P_INDEX)
                memcpy(sample_index, val, (size_t)vl + 1);
        }
    }
    if (seen[P_LAST] && !kept_s(name))
        return pp_reply_error(q, 400, "last is for a profile the history keeps (profile, allocs, mutex and block with "
                                      "LIBPPROF_HISTORY, wall with LIBPPROF_HISTORY_WALL=1 too), not %s here", name),
               1;
    return sample_index[0] ? check_sample_index(q, name, sample_index) : 0;
}

static void write_prefix_json(pp_reply *r, const pp_req *q)
{
    /* a prefix is a path: '"', '\\' and '<' are the only ones to escape */
    pp_reply_write(r, "\"", 1);
    for (const char *s = q->cfg.prefix; *s; s++)
        if (*s == '"' || *s == '\\' || *s == '<' || (unsigned char)*s < 0x20)
            pp_reply_printf(r, "\\u%04x", (unsigned char)*s);
        else
            pp_reply_write(r, s, 1);
    pp_reply_write(r, "\"", 1);
}

typedef struct names_out {
    pp_reply *r;
    int n;
} names_out;

static void one_name(const char *name, void *arg)
{
    names_out *o = arg;
    /* profile names are [A-Za-z0-9._-]: nothing to escape */
    pp_reply_printf(o->r, "%s\"%s\"", o->n++ ? "," : "", name);
}

static void write_profiles(pp_reply *r, const pp_req *q)
{
    (void)q;
    names_out o = {r, 0};
    pp_reply_write(r, "[", 1);
    pp_profile_names(NULL, one_name, &o);
    pp_reply_write(r, "]", 1);
}

/* {"profile": seconds kept, "wall": ...}: the kinds the history keeps. */
static void write_history(pp_reply *r, const pp_req *q)
{
    (void)q;
    const char *sep = "";
    pp_reply_write(r, "{", 1);
    for (unsigned k = 0; k < PP_HISTORY_KINDS; k++) {
        long long s = kept_s(pp_history_endpoints[k]);
        if (s) {
            pp_reply_printf(r, "%s\"%s\":%lld", sep, pp_history_endpoints[k], s);
            sep = ",";
        }
    }
    pp_reply_write(r, "}", 1);
}

static void write_max_seconds(pp_reply *r, const pp_req *q)
{
    pp_reply_printf(r, "%d", q->cfg.max_seconds);
}

static void write_profile_js(pp_reply *r, const pp_req *q)
{
    (void)q;
    pp_reply_write(r, pp_web_profile_js, pp_web_profile_js_len);
}

static void write_ui_js(pp_reply *r, const pp_req *q)
{
    (void)q;
    pp_reply_write(r, pp_web_ui_js, pp_web_ui_js_len);
}

int pp_h_ui(pp_req *q)
{
    static const pp_slot slots[] = {
        {"PREFIX", pp_write_prefix}, {"PREFIX_JSON", write_prefix_json}, {"PROFILES", write_profiles},
        {"MAXSEC", write_max_seconds}, {"PROFILE_JS", write_profile_js},   {"UI_JS", write_ui_js},
        {"HISTORY", write_history},
    };
    if (check_params(q))
        return 0;
    pp_reply r;
    pp_reply_init(&r, 200);
    pp_reply_header(&r, "Content-Type", "text/html; charset=utf-8");
    /* the page talks to this server only */
    pp_reply_header(&r, "Content-Security-Policy",
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                    "connect-src 'self'; img-src 'self' blob:; frame-ancestors 'none'");
    pp_write_template(&r, pp_web_ui_html, pp_web_ui_html_len, slots, sizeof slots / sizeof *slots, q);
    return pp_reply_send(q, &r);
}
