/* route.c: routing of one request to its endpoint (see route.h).
 *
 * A path under the prefix names an endpoint of the table (handlers.c) or
 * a custom profile; the prefix without its slash is redirected to it, as
 * Go's mux does; /symbolz at the root serves symbol when the prefix lacks
 * /debug/pprof/ (go tool pprof asks there then); /debug/fgprof at the root
 * serves fgprof whatever the prefix (where fgprof's Go handler is mounted,
 * and where Grafana Alloy's and Pyroscope's fgprof scrape jobs ask, with
 * seconds=N and no format: fgprof's default, pprof); pprof_http_serves tells a
 * host's server which paths those are. Each endpoint allows GET
 * and HEAD, some POST too; anything else is a 405. The endpoints that take
 * parameters get the query parsed (query.h), a bad one answered 400 here.
 *
 * The process tree's parameters (pid=, tree=) are taken out of the query
 * first, for every process, and handed to the tree's front when a tree
 * registered one: without it this process answers alone, and they mean
 * nothing to the endpoints.
 */
#include "route.h"
#include "base/base.h"
#include "endpoints.h"
#include "query.h"
#include "reply.h"
#include "request.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PATH_OTHER, PATH_UNDER, PATH_BARE, PATH_SYMBOLZ, PATH_FGPROF };

#define FGPROF_PATH "/debug/fgprof"

/* Which of the paths the endpoints answer `path` is, for `prefix` (which
 * starts and ends with '/'): one under the prefix, the prefix without its
 * slash (redirected), /symbolz at the root (when the prefix lacks
 * /debug/pprof/), /debug/fgprof, or none of them. */
static int path_kind(const char *prefix, const char *path)
{
    size_t plen = strlen(prefix);
    if (strncmp(path, prefix, plen) == 0)
        return PATH_UNDER;
    if (plen > 1 && strlen(path) == plen - 1 && strncmp(path, prefix, plen - 1) == 0)
        return PATH_BARE;
    if (strcmp(path, "/symbolz") == 0 && !strstr(prefix, "/debug/pprof/"))
        return PATH_SYMBOLZ;
    if (strcmp(path, FGPROF_PATH) == 0)
        return PATH_FGPROF;
    return PATH_OTHER;
}

/* Thread-safe: reads its arguments only. */
int pprof_http_serves(const pprof_server_config *cfg, const char *path)
{
    const char *prefix = cfg && cfg->prefix ? cfg->prefix : PP_DEFAULT_PREFIX;
    size_t plen = strlen(prefix);
    if (!path || plen == 0 || prefix[0] != '/' || prefix[plen - 1] != '/')
        return 0;
    return path_kind(prefix, path) != PATH_OTHER;
}

/* Thread-safe: each call works on its own request; shared state (the
 * pending calls) is behind the scheduler's lock. */
int pp_route(const pprof_server_config *cfg, const pprof_http_request *req, pprof_http_done done, void *ctx,
             pprof_http_call **call)
{
    if (call)
        *call = NULL;
    if (!req || !req->method || !req->path || !done)
        return pp_fail(PPROF_EINVAL);

    pp_req q;
    memset(&q, 0, sizeof q);
    if (cfg)
        q.cfg = *cfg;
    if (!q.cfg.prefix)
        q.cfg.prefix = PP_DEFAULT_PREFIX;
    size_t plen = strlen(q.cfg.prefix);
    if (plen == 0 || q.cfg.prefix[0] != '/' || q.cfg.prefix[plen - 1] != '/')
        return pp_fail(PPROF_EINVAL);
    if (q.cfg.max_seconds <= 0)
        q.cfg.max_seconds = PP_DEFAULT_MAX_SECONDS;
    if (q.cfg.max_concurrent <= 0)
        q.cfg.max_concurrent = PP_DEFAULT_MAX_CONCURRENT;
    q.req = req;
    q.done = done;
    q.ctx = ctx;
    q.call = call;

    const pp_endpoint *ep = NULL;
    int where = path_kind(q.cfg.prefix, req->path);
    if (where == PATH_UNDER) {
        q.name = req->path + plen;
        ep = pp_endpoint_find(q.name);
        if (!ep)
            return pp_reply_error(&q, 404, "Unknown profile");
    } else if (where == PATH_BARE) {
        /* the prefix without its slash: where the index is, as Go's mux says */
        pp_reply r;
        pp_reply_init(&r, 301);
        pp_reply_header(&r, "Location", q.cfg.prefix);
        pp_reply_header(&r, "Content-Type", "text/plain; charset=utf-8");
        pprof_writer w = pp_reply_writer(&r);
        w.write(w.ctx, "Moved Permanently\n", 18);
        return pp_reply_send(&q, &r);
    } else if (where == PATH_SYMBOLZ) {
        /* go tool pprof asks here when the profile URL lacks /debug/pprof/. */
        ep = pp_endpoint_find("symbol");
        q.name = "symbol";
    } else if (where == PATH_FGPROF) {
        ep = pp_endpoint_find("fgprof");
        q.name = "fgprof";
    }
    if (!ep)
        return pp_reply_error(&q, 404, "404 page not found");

    const char *m = req->method;
    int post_ok = (ep->flags & PP_EP_POST) != 0;
    if (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0 && !(post_ok && strcmp(m, "POST") == 0)) {
        pp_reply r;
        pp_reply_init(&r, 405);
        pp_reply_set_error(&r, 405, "method not allowed (use %s)", post_ok ? "GET, HEAD or POST" : "GET or HEAD");
        pp_reply_header(&r, "Allow", post_ok ? "GET, HEAD, POST" : "GET, HEAD");
        return pp_reply_send(&q, &r);
    }
    char why[256];
    if ((ep->flags & PP_EP_QUERY) && pp_query_parse(req->query, q.cfg.max_seconds, &q.q, why, sizeof why) != 0)
        return pp_reply_error(&q, 400, "%s", why);
    if (q.q.has_past && !(ep->flags & PP_EP_PAST))
        return pp_reply_error(&q, 400, "last, from and until are for profile and wall (the history), not %s", ep->name);
    return ep->fn(&q);
}

static _Atomic pp_route_front_fn front;

void pp_route_set_front(pp_route_front_fn fn)
{
    atomic_store(&front, fn);
}

/* Answering is the profiler's own work, on whichever thread it runs. */
int pprof_http_handle(const pprof_server_config *cfg, const pprof_http_request *req,
                      pprof_http_done done, void *ctx, pprof_http_call **call)
{
    if (!req || !req->method || !req->path || !done)
        return pp_route(cfg, req, done, ctx, call);
    if (call)
        *call = NULL; /* a request answered here, a bad pid or tree, has no handle */
    pprof_labels *prev = pp_own_labels_begin();
    static const char *const tree_keys[] = {"pid", "tree"};
    char v[32];
    int pid = 0, whole = 1;
    if (pp_query_find(req->query, "pid", v, sizeof v)) {
        long long n;
        if (pp_parse_int(v, strlen(v), &n) != 0 || n <= 0) {
            pp_reply_error_to(done, ctx, 400, "pid must be a process id (a positive number), not \"%s\"", v);
            pp_own_labels_end(prev);
            return 0;
        }
        pid = (int)n;
    }
    if (pp_query_find(req->query, "tree", v, sizeof v)) {
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
            pp_reply_error_to(done, ctx, 400, "tree must be 0 or 1, not \"%s\"", v);
            pp_own_labels_end(prev);
            return 0;
        }
        whole = v[0] == '1';
    }
    char *rest = pp_query_without(req->query, tree_keys, 2);
    pprof_http_request r = *req;
    r.query = rest ? rest : req->query;
    /* /debug/fgprof is the prefix's fgprof, for a process tree's front too */
    const char *prefix = cfg && cfg->prefix ? cfg->prefix : PP_DEFAULT_PREFIX;
    char path[256];
    size_t plen = strlen(prefix);
    if (!strcmp(req->path, FGPROF_PATH) && plen > 1 && prefix[0] == '/' && prefix[plen - 1] == '/' &&
        plen + sizeof "fgprof" <= sizeof path) {
        snprintf(path, sizeof path, "%sfgprof", prefix);
        r.path = path;
    }
    r.query = r.query && *r.query ? r.query : NULL;
    pp_route_front_fn f = atomic_load(&front);
    int rc = f ? f(cfg, &r, pid, whole, done, ctx, call) : pp_route(cfg, &r, done, ctx, call);
    free(rest);
    pp_own_labels_end(prev);
    return rc;
}
