/* test_http_checks.c: what the HTTP layer checks before it answers.
 * test-labels: quick
 *
 * pprof_http_serves: the paths a host's own server hands to
 * pprof_http_handle, for the default prefix and another one: under the
 * prefix, the prefix without its slash (which answers 301 to the index,
 * through pprof_http_handle as on the built-in server), /symbolz only
 * when the prefix lacks /debug/pprof/, nothing else.
 * Uses only the public API of pprof.h.
 */
#include "check.h"
#include "pprof.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What a done callback saw (every answer here comes before
 * pprof_http_handle returns). */
typedef struct answer {
    int status;
    char location[128];
    char *body;
} answer;

static void on_done(void *ctx, const pprof_http_response *r)
{
    answer *a = ctx;
    a->status = r->status;
    for (size_t i = 0; i < r->nheaders; i++)
        if (!strcmp(r->headers[i].name, "Location"))
            snprintf(a->location, sizeof a->location, "%s", r->headers[i].value);
    free(a->body);
    a->body = calloc(1, r->body.len + 1);
    if (a->body && r->body.len)
        memcpy(a->body, r->body.data, r->body.len);
}

/* Answers GET path?query under cfg; the status, 0 when not answered. */
static int get(const pprof_server_config *cfg, const char *path, const char *query, answer *a)
{
    memset(a, 0, sizeof *a);
    pprof_http_request req = {"GET", path, query, NULL, 0};
    pprof_http_call *call = NULL;
    if (pprof_http_handle(cfg, &req, on_done, a, &call) != 0)
        return 0;
    pprof_http_cancel(call);
    return a->status;
}

static void test_serves(void)
{
    pprof_server_config other = {.prefix = "/prof/"};
    pprof_server_config bad = {.prefix = "prof"};
    CHECK(pprof_http_serves(NULL, "/debug/pprof/"));
    CHECK(pprof_http_serves(NULL, "/debug/pprof/heap"));
    CHECK(pprof_http_serves(NULL, "/debug/pprof/no-such-profile")); /* its 404 is Go's "Unknown profile" */
    CHECK(pprof_http_serves(NULL, "/debug/pprof"));
    CHECK(!pprof_http_serves(NULL, "/debug/pprofx"));
    CHECK(!pprof_http_serves(NULL, "/debug/ppro"));
    CHECK(!pprof_http_serves(NULL, "/"));
    CHECK(!pprof_http_serves(NULL, "/symbolz"));
    CHECK(!pprof_http_serves(NULL, NULL));
    CHECK(pprof_http_serves(&other, "/prof/heap"));
    CHECK(pprof_http_serves(&other, "/prof"));
    CHECK(pprof_http_serves(&other, "/symbolz"));
    CHECK(!pprof_http_serves(&other, "/debug/pprof/heap"));
    CHECK(!pprof_http_serves(&bad, "prof/heap"));

    answer a;
    CHECK(get(NULL, "/debug/pprof", NULL, &a) == 301 && !strcmp(a.location, "/debug/pprof/"));
    CHECK(get(&other, "/prof", NULL, &a) == 301 && !strcmp(a.location, "/prof/"));
    CHECK(get(NULL, "/debug/pprofx", NULL, &a) == 404);
    free(a.body);
}

int main(void)
{
    test_serves();
    return check_summary("test_http_checks");
}
