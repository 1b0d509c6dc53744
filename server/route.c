/* route.c: routing of one request to its endpoint (see route.h).
 *
 * A path under the prefix names an endpoint of the table (handlers.c) or
 * a custom profile; the prefix without its slash is redirected to it, as
 * Go's mux does; /symbolz at the root serves symbol when the prefix lacks
 * /debug/pprof/ (go tool pprof asks there then). Each endpoint allows GET
 * and HEAD, some POST too; anything else is a 405. The endpoints that take
 * parameters get the query parsed (query.h), a bad one answered 400 here.
 */
#include "http_internal.h"
#include "route.h"

#include <string.h>

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
    if (strncmp(req->path, q.cfg.prefix, plen) == 0) {
        q.name = req->path + plen;
        ep = pp_endpoint_find(q.name);
        if (!ep)
            return pp_reply_error(&q, 404, "Unknown profile");
    } else if (plen > 1 && strlen(req->path) == plen - 1 && strncmp(req->path, q.cfg.prefix, plen - 1) == 0) {
        /* the prefix without its slash: where the index is, as Go's mux says */
        pp_reply r;
        pp_reply_init(&r, 301);
        pp_reply_header(&r, "Location", q.cfg.prefix);
        pp_reply_header(&r, "Content-Type", "text/plain; charset=utf-8");
        pprof_writer w = pp_reply_writer(&r);
        w.write(w.ctx, "Moved Permanently\n", 18);
        return pp_reply_send(&q, &r);
    } else if (strcmp(req->path, "/symbolz") == 0 && !strstr(q.cfg.prefix, "/debug/pprof/")) {
        /* go tool pprof asks here when the profile URL lacks /debug/pprof/. */
        ep = pp_endpoint_find("symbol");
        q.name = "symbol";
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
    return ep->fn(&q);
}

/* Answering is the profiler's own work, on whichever thread it runs; a
 * hub answers for its process tree (tree.c). */
int pprof_http_handle(const pprof_server_config *cfg, const pprof_http_request *req,
                      pprof_http_done done, void *ctx, pprof_http_call **call)
{
    if (!req || !req->method || !req->path || !done)
        return pp_route(cfg, req, done, ctx, call);
    pprof_labels *prev = pp_own_labels_begin();
    int rc = pp_tree_handle(cfg, req, done, ctx, call, pp_route);
    pp_own_labels_end(prev);
    return rc;
}

