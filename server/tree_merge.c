/* tree_merge.c: requests for a whole process tree (see tree_internal.h),
 * and the tree's entry points.
 *
 * Routing hands every request to the front registered here (route.h),
 * with the tree's own parameters taken out of its query: pid=N and
 * tree=0|1. A request to a hub with members for a profile (an endpoint
 * the table flags PP_EP_MERGE, or a name the hub does not know: maybe a
 * member's custom profile) goes to every member as it comes, then runs
 * here; when this process's answer is ready the members' are awaited
 * (until the window's end plus 5 s) and the protobufs are merged
 * (pprof_merge) with the labels pid and process on every sample. A member
 * that did not answer in time, or ended, is named in the profile's
 * comments. ?pid=N answers with process N's profile as it is (any
 * format); ?tree=0, and text formats (debug >= 1) without a pid, only the
 * hub's; format=folded folds the merged profile.
 */
#include "base/base.h"
#include "endpoints.h"
#include "reply.h"
#include "route.h"
#include "tree_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define GRACE_S 5

/* A request for the tree: how to answer once the members' answers are in. */
typedef struct tree_call {
    pp_hub_req *t;
    pprof_http_done done;
    void *ctx;
    int only_pid;             /* ?pid=N, 0 for all */
    int raw_proto;            /* ?format=proto: the member's answer is an uncompressed profile */
    int fold, fold_labels;    /* format=folded for the tree: the merge is folded, labels=1 */
    char fold_sample[64];     /* its sample_index, "" for the default */
    pprof_symbolize how;      /* symbolize=: how the merge names what members left unnamed */
} tree_call;

static int header_is(const pprof_http_response *r, const char *name, const char *value)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (!strcasecmp(r->headers[i].name, name))
            return !strcmp(r->headers[i].value, value);
    return 0;
}

/* Makes the merged profile in r the folded text the request asked for, or
 * the error saying why it cannot be. */
static void fold_reply(const tree_call *c, pprof_http_response *r)
{
    char error[PP_ERROR_MAX + 40];
    pprof_folded_config fc = {c->fold_sample[0] ? c->fold_sample : NULL, c->fold_labels};
    pprof_buffer text = {0};
    int rc = pprof_fold(r->body.data, r->body.len, &fc, pprof_writer_buffer(&text));
    pprof_buffer_free(&r->body);
    r->nheaders = 1;
    r->headers[0].name = "Content-Type";
    r->headers[0].value = "text/plain; charset=utf-8";
    if (rc == 0) {
        r->body = text;
        return;
    }
    pprof_buffer_free(&text);
    r->status = rc == PPROF_ENOTFOUND ? 400 : 500;
    int n = snprintf(error, sizeof error, "%s%s\n", rc == PPROF_ENOTFOUND ? "invalid value for \"sample_index\" - " : "",
                     pprof_last_error());
    r->body = (pprof_buffer){0};
    pprof_writer wr = pprof_writer_buffer(&r->body);
    wr.write(wr.ctx, error, (size_t)(n < (int)sizeof error ? n : (int)sizeof error - 1));
}

/* ?pid=N: process N's answer as it is, or why there is none. */
static void forward_one(const tree_call *c)
{
    const pp_hub_req *t = c->t;
    int i = 0; /* a process that exec'd is asked again: its answering image */
    while (i < t->nasked && (t->pids[i] != c->only_pid || t->status[i] == -2))
        i++;
    pprof_http_response r = {.status = 504};
    char text[128];
    if (i < t->nasked && t->status[i] > 0) {
        r.status = t->status[i];
        r.body = t->body[i];
    } else {
        snprintf(text, sizeof text, "process %d did not answer in time\n", c->only_pid);
        r.body = (pprof_buffer){text, strlen(text), 0};
    }
    /* the member's answer is a gzipped profile or text: its bytes say which */
    const unsigned char *b = (const unsigned char *)r.body.data;
    int gz = (r.body.len >= 2 && b[0] == 0x1f && b[1] == 0x8b) || (c->raw_proto && r.status == 200);
    r.headers[0].name = "Content-Type";
    r.headers[0].value = gz ? "application/octet-stream" : "text/plain; charset=utf-8";
    r.nheaders = 1;
    c->done(c->ctx, &r);
}

/* This process's profile `resp` and the members' merged into one, each
 * sample labeled with its pid and process; members without a profile are
 * named in its comments. Sends this process's alone when they cannot be
 * merged. */
static void merge_all(const tree_call *c, const pprof_http_response *resp)
{
    const pp_hub_req *t = c->t;
    pprof_merge_input in[PP_TREE_MAX_MEMBERS + 1];
    pprof_label labels[PP_TREE_MAX_MEMBERS + 1];
    pprof_num_label pids[PP_TREE_MAX_MEMBERS + 1];
    char self_name[16];
    char comments[PP_TREE_MAX_MEMBERS][200];
    size_t n = 0;
    pp_tree_comm((int)getpid(), self_name);
    pids[0] = (pprof_num_label){"pid", (int64_t)getpid(), NULL};
    labels[0] = (pprof_label){"process", self_name};
    in[n++] = (pprof_merge_input){resp->body.data, resp->body.len, &labels[0], 1, &pids[0], 1, NULL};
    for (int i = 0; i < t->nasked; i++) {
        pids[n] = (pprof_num_label){"pid", t->pids[i], NULL};
        labels[n] = (pprof_label){"process", t->names[i]};
        if (t->status[i] == -2) /* it exec'd: its new image joined and answers */
            continue;
        if (t->status[i] == 200 && t->body[i].len) {
            in[n] = (pprof_merge_input){t->body[i].data, t->body[i].len, &labels[n], 1, &pids[n], 1, NULL};
        } else {
            const char *text = t->status[i] > 0 && t->body[i].len ? t->body[i].data : "";
            snprintf(comments[i], sizeof comments[i], "process %d (%s) %s%s%.*s%s", t->pids[i], t->names[i],
                     t->status[i] == -1  ? "ended before it answered"
                     : t->status[i] == 0 ? "did not answer in time"
                                         : "answered with an error",
                     *text ? " (" : "", (int)strcspn(text, "\n"), text, *text ? ")" : "");
            in[n] = (pprof_merge_input){NULL, 0, NULL, 0, NULL, 0, comments[i]};
        }
        n++;
    }
    pprof_http_response r = *resp;
    r.body = (pprof_buffer){0};
    int rc = pprof_merge_naming(in, n, c->how, pprof_writer_buffer(&r.body));
    if (rc == PPROF_EINVAL) { /* a member's profile does not hold together: leave it out, say so */
        pprof_buffer_free(&r.body);
        for (size_t i = 1; i < n; i++) {
            pprof_buffer one = {0};
            if (in[i].data && pprof_merge(&in[i], 1, pprof_writer_buffer(&one)) == PPROF_EINVAL) {
                snprintf(comments[i - 1], sizeof comments[i - 1], "process %lld (%s) sent a profile that cannot be read",
                         (long long)pids[i].value, labels[i].value);
                in[i] = (pprof_merge_input){NULL, 0, NULL, 0, NULL, 0, comments[i - 1]};
            }
            pprof_buffer_free(&one);
        }
        rc = pprof_merge_naming(in, n, c->how, pprof_writer_buffer(&r.body));
    }
    if (rc == 0 && c->fold)
        fold_reply(c, &r);
    if (rc != 0) {
        pprof_buffer_free(&r.body);
        c->done(c->ctx, resp); /* the hub's own, rather than nothing */
    } else {
        c->done(c->ctx, &r);
        pprof_buffer_free(&r.body);
    }
}

/* This process's answer is ready: await the members', then answer. */
static void tree_done(void *ctx, const pprof_http_response *resp)
{
    tree_call *c = ctx;
    pp_hub_collect(c->t);
    if (c->only_pid)
        forward_one(c);
    else if (resp->status != 200 || !header_is(resp, "Content-Type", "application/octet-stream"))
        c->done(c->ctx, resp);
    else
        merge_all(c, resp);
    pp_hub_release(c->t);
    free(c);
}

/* The options of a request for the tree, from its query: 0, or 1 after
 * answering 400. *query becomes what this process and the members are
 * asked (malloc'd in *rest when it changes). */
static int tree_options(tree_call *c, const char **query, char **rest)
{
    char fval[16], sval[64], lval[8];
    int formatted = pp_query_find(*query, "format", fval, sizeof fval) > 0;
    c->raw_proto = formatted && !strcmp(fval, "proto");
    c->fold = formatted && !c->only_pid && !strcmp(fval, "folded");
    const char *why = NULL;
    if (formatted && !c->only_pid && !c->fold) /* the members' gzipped protobufs are merged as such */
        why = "format=proto is for one process: add pid=N (or tree=0 for this one)";
    if (c->fold) { /* the members answer protobufs, the merge is folded */
        static const char *const folding[] = {"format", "sample_index", "labels", "hub_names", "window_ms"};
        int repeated = pp_query_find(*query, "format", fval, sizeof fval) > 1;
        repeated |= pp_query_find(*query, "sample_index", sval, sizeof sval) > 1;
        repeated |= pp_query_find(*query, "labels", lval, sizeof lval) > 1;
        if (lval[0] && strcmp(lval, "0") && strcmp(lval, "1"))
            why = "invalid value for \"labels\" - must be 0 or 1";
        if (repeated)
            why = "a parameter is repeated";
        c->fold_labels = !strcmp(lval, "1");
        snprintf(c->fold_sample, sizeof c->fold_sample, "%s", sval);
        if ((*rest = pp_query_without(*query, folding, 5)))
            *query = *rest;
    } else if ((*rest = pp_query_without(*query, (const char *const[]){"hub_names", "window_ms"}, 2))) {
        *query = *rest; /* the hub's to give, never the client's */
    }
    if (why)
        pp_reply_error_to(c->done, c->ctx, 400, "%s", why);
    return why != NULL;
}

/* Routing's front (route.h): a request for the tree, or for this process
 * alone. */
static int tree_front(const pprof_server_config *cfg, const pprof_http_request *req, int pid, int whole,
                      pprof_http_done done, void *ctx, pprof_http_call **call)
{
    const char *prefix = cfg && cfg->prefix ? cfg->prefix : PP_DEFAULT_PREFIX;
    size_t plen = strlen(prefix);
    char dval[8], fval[16];
    int text = pp_query_find(req->query, "debug", dval, sizeof dval) && strcmp(dval, "0") != 0;
    int formatted = pp_query_find(req->query, "format", fval, sizeof fval) > 0;
    int folding = formatted && !pid && !strcmp(fval, "folded");
    int merges = !strncmp(req->path, prefix, plen) && pp_endpoint_merges(req->path + plen);
    if (merges && pid && pid != (int)getpid() && whole && !pp_hub_has_members()) {
        char why[512];
        pp_hub_no_member(pid, why, sizeof why);
        pp_reply_error_to(done, ctx, 404, "%s", why);
        if (call)
            *call = NULL;
        return 0;
    }
    if (!pp_hub_has_members() || !merges || !whole || pid == (int)getpid() || (text && !pid) ||
        (formatted && !pid && !folding && strcmp(fval, "proto")))
        return pp_route(cfg, req, done, ctx, call); /* (a bad format value: its 400) */
    if (call)
        *call = NULL;
    tree_call opt = {.only_pid = pid, .done = done, .ctx = ctx};
    const char *query = req->query;
    char *rest = NULL;
    if (tree_options(&opt, &query, &rest))
        return 0;
    pprof_http_request lreq = *req;
    lreq.query = query && *query ? query : NULL;
    char sec[16];
    int seconds = pp_query_find(lreq.query, "seconds", sec, sizeof sec) ? atoi(sec) : 0;
    const char *name = req->path + plen;
    char past[32]; /* a profile of the past (the history) answers at once */
    int history = pp_query_find(lreq.query, "last", past, sizeof past) || pp_query_find(lreq.query, "from", past, sizeof past) ||
                  pp_query_find(lreq.query, "until", past, sizeof past);
    if ((!strcmp(name, "profile") || !strcmp(name, "wall") || !strcmp(name, "fgprof")) && seconds <= 0 && !history)
        seconds = PP_DEFAULT_SECONDS;
    /* Members asked for the merge leave what is in the hub's files to it
     * (pprof_recorder_leave_shared, with the hub's maps sent along: a
     * member may not read them, having dropped privileges); the hub names
     * it once, for all. */
    char how[16];
    static const char *const hows[] = {"full", "functions", "none"};
    opt.how = PPROF_SYMBOLIZE_DEFAULT;
    for (int i = 0; i < 3 && pp_query_find(lreq.query, "symbolize", how, sizeof how) == 1; i++)
        if (!strcmp(how, hows[i]))
            opt.how = (pprof_symbolize)(PPROF_SYMBOLIZE_FULL + i);
    if (opt.how == PPROF_SYMBOLIZE_DEFAULT)
        opt.how = (pprof_symbolize)pp_env_symbolize();
    int hub_names = !pid && opt.how != PPROF_SYMBOLIZE_NONE;
    char wire[1200];
    snprintf(wire, sizeof wire, "%s%s%s%s%s", req->path + plen, lreq.query || hub_names ? "?" : "",
             lreq.query ? lreq.query : "", lreq.query && hub_names ? "&" : "", hub_names ? "hub_names=1" : "");
    tree_call *c = malloc(sizeof *c);
    if (c) {
        *c = opt;
        c->t = pp_hub_ask(wire, hub_names, pid, seconds, pp_tree_now_s() + (seconds > 0 ? seconds : 0) + GRACE_S, c);
    }
    int rc = 0;
    if (!c || !c->t) { /* out of memory: this process's answer */
        free(c);
        rc = pp_route(cfg, &lreq, done, ctx, call);
    } else if (pid && !c->t->nasked) {
        pp_hub_release(c->t);
        free(c);
        char why[512];
        pp_hub_no_member(pid, why, sizeof why);
        pp_reply_error_to(done, ctx, 404, "%s", why);
    } else {
        rc = pp_route(cfg, &lreq, tree_done, c, call);
    }
    free(rest);
    return rc;
}

/* ------------------------------------------------------ entry points */

static pthread_once_t tree_once = PTHREAD_ONCE_INIT;

static void tree_init_once(void)
{
    pp_member_init();
    pp_route_set_front(tree_front);
}

int pp_tree_start(void)
{
    pthread_once(&tree_once, tree_init_once);
    return pp_tree_off() ? 0 : pp_hub_start();
}

int pp_tree_join_ancestor(void)
{
    if (pp_tree_off())
        return -1;
    pthread_once(&tree_once, tree_init_once);
    return pp_member_join_ancestor();
}

int pp_tree_join_named(int hub_pid, int now)
{
    if (pp_tree_off())
        return -1;
    pthread_once(&tree_once, tree_init_once);
    return pp_member_join_named(hub_pid, now);
}

int pprof_tree_start(void)
{
    pthread_once(&tree_once, tree_init_once);
    if (pp_member_joined()) { /* its connection is to its own hub */
        char name[PP_TREE_NAME_MAX];
        pp_hub_name(name);
        return pp_error_detail(PPROF_ESTATE, "this process is a member of %s's tree", name);
    }
    return pp_tree_start();
}
typedef struct collect_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, status;
    pprof_buffer body;
    int copied; /* the body could be kept */
} collect_wait;

static void collect_done(void *ctx, const pprof_http_response *resp)
{
    collect_wait *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->status = resp->status;
    w->body.data = resp->body.len ? malloc(resp->body.len + 1) : NULL;
    w->copied = !resp->body.len || w->body.data;
    if (w->body.data) {
        memcpy(w->body.data, resp->body.data, resp->body.len);
        w->body.data[resp->body.len] = 0;
        w->body.len = resp->body.len;
        w->body.cap = resp->body.len + 1;
    }
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int pprof_tree_collect(const char *request, pprof_writer out)
{
    if (!request || !out.write)
        return pp_error_detail(PPROF_EINVAL, "no request or no writer");
    char path[256];
    const char *q = strchr(request, '?');
    size_t n = q ? (size_t)(q - request) : strlen(request);
    if (n == 0 || n + sizeof PP_DEFAULT_PREFIX > sizeof path)
        return pp_error_detail(PPROF_EINVAL, "no profile named, or a name too long");
    snprintf(path, sizeof path, "%s%.*s", PP_DEFAULT_PREFIX, (int)n, request);
    collect_wait w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pprof_http_request req = {"GET", path, q && q[1] ? q + 1 : NULL, NULL, 0};
    int rc = pprof_http_handle(NULL, &req, collect_done, &w, NULL);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&w.mu);
    while (!w.done)
        pp_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    if (!w.copied)
        rc = pp_fail(PPROF_ENOMEM);
    else if (w.status == 200)
        rc = w.body.len && out.write(out.ctx, w.body.data, w.body.len) != 0 ? pp_fail(PPROF_EIO) : 0;
    else
        rc = pp_error_detail(w.status == 400 ? PPROF_EINVAL : w.status == 404 ? PPROF_ENOTFOUND
                             : w.status == 503 ? PPROF_ELIMIT : PPROF_ESYS,
                             "%.*s", (int)strcspn(w.body.data ? w.body.data : "", "\n"),
                             w.body.data ? w.body.data : "");
    free(w.body.data);
    return rc;
}
