/* test_http_checks.c: what the HTTP layer checks before it answers.
 * test-labels: quick
 *
 * pprof_http_serves: the paths a host's own server hands to
 * pprof_http_handle, for the default prefix and another one: under the
 * prefix, the prefix without its slash (which answers 301 to the index,
 * through pprof_http_handle as on the built-in server), /symbolz only
 * when the prefix lacks /debug/pprof/, /debug/fgprof, nothing else.
 *
 * The flame-graph page's sample_index: a type the profile has, by name or
 * index, is accepted; any other is a 400 naming the ones it has, for
 * every profile the page lists (a custom one too), and those are the
 * types of the profile itself, in its order (as its folded answer to an
 * unknown sample_index lists them).
 * Uses only the public API of pprof.h.
 */
#include "check.h"
#include "pprof.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    for (size_t i = 0; i < r->nheaders; i++)
        if (!strcmp(r->headers[i].name, "Location"))
            snprintf(a->location, sizeof a->location, "%s", r->headers[i].value);
    free(a->body);
    a->body = calloc(1, r->body.len + 1);
    if (a->body && r->body.len)
        memcpy(a->body, r->body.data, r->body.len);
    __atomic_store_n(&a->status, r->status, __ATOMIC_RELEASE); /* last: get() waits for it */
}

/* Answers GET path?query under cfg (waiting for a profile of seconds);
 * the status, 0 when not answered. */
static int get(const pprof_server_config *cfg, const char *path, const char *query, answer *a)
{
    free(a->body);
    memset(a, 0, sizeof *a);
    pprof_http_request req = {"GET", path, query, NULL, 0};
    pprof_http_call *call = NULL;
    if (pprof_http_handle(cfg, &req, on_done, a, &call) != 0)
        return 0;
    for (int i = 0; i < 1000 && !__atomic_load_n(&a->status, __ATOMIC_ACQUIRE); i++)
        usleep(10000);
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
    CHECK(pprof_http_serves(NULL, "/debug/fgprof")); /* fgprof's own path, for its scrapers */
    CHECK(pprof_http_serves(&other, "/debug/fgprof"));
    CHECK(!pprof_http_serves(NULL, "/debug/fgprofx"));
    CHECK(!pprof_http_serves(NULL, NULL));
    CHECK(pprof_http_serves(&other, "/prof/heap"));
    CHECK(pprof_http_serves(&other, "/prof"));
    CHECK(pprof_http_serves(&other, "/symbolz"));
    CHECK(!pprof_http_serves(&other, "/debug/pprof/heap"));
    CHECK(!pprof_http_serves(&bad, "prof/heap"));

    answer a = {0};
    CHECK(get(NULL, "/debug/pprof", NULL, &a) == 301 && !strcmp(a.location, "/debug/pprof/"));
    CHECK(get(&other, "/prof", NULL, &a) == 301 && !strcmp(a.location, "/prof/"));
    CHECK(get(NULL, "/debug/pprofx", NULL, &a) == 404);
    free(a.body);
}

/* The page's 400 for a sample_index profile `name` does not have: its
 * list of the types it has ("a, b or c"), into out; 0 when not a 400. */
static int page_types(const char *name, char *out, size_t size)
{
    answer a = {0};
    char q[160];
    snprintf(q, sizeof q, "profile=%s&sample_index=no_such_type", name);
    int status = get(NULL, "/debug/pprof/ui", q, &a);
    const char *has = a.body ? strstr(a.body, " profile has ") : NULL, *end = has ? strstr(has, " (or an index") : NULL;
    int ok = status == 400 && end && strchr(a.body, '\n') == a.body + strlen(a.body) - 1;
    if (ok)
        snprintf(out, size, "%.*s", (int)(end - has - 13), has + 13);
    CHECKF(ok, "%s: %d %s", name, status, a.body ? a.body : "");
    free(a.body);
    return ok;
}

/* The profile's own types, from its folded answer to an unknown
 * sample_index ("... (it has a, b, c)"), with the page's "or" before the
 * last one; 0 when it has none to give (also when the build cannot write
 * the profile). */
static int profile_types(const char *name, char *out, size_t size)
{
    answer a = {0};
    char path[128];
    snprintf(path, sizeof path, "/debug/pprof/%s", name);
    int timed = !strcmp(name, "profile") || !strcmp(name, "wall") || !strcmp(name, "fgprof");
    int status = get(NULL, path, timed ? "seconds=1&format=folded&sample_index=no_such_type"
                                       : "format=folded&sample_index=no_such_type", &a);
    if (status == 500 && a.body && strstr(a.body, "not supported")) {
        /* a build without the malloc or lock hooks (the sanitizer builds):
         * the profile cannot be written, so there is nothing to compare */
        printf("  %s: not in this build: %s", name, a.body);
        free(a.body);
        return 0;
    }
    const char *has = a.body ? strstr(a.body, "(it has ") : NULL;
    int ok = status == 400 && has;
    if (ok) {
        char list[256];
        snprintf(list, sizeof list, "%.*s", (int)strcspn(has + 8, ")"), has + 8);
        char *last = strrchr(list, ',');
        if (last)
            snprintf(out, size, "%.*s or%s", (int)(last - list), list, last + 1);
        else
            snprintf(out, size, "%s", list);
    }
    CHECKF(ok, "%s: %d %s", name, status, a.body ? a.body : "");
    free(a.body);
    return ok;
}

typedef struct names {
    char list[64][64];
    int n;
} names;

static void test_sample_index(void)
{
    pprof_custom *jobs;
    CHECK(pprof_custom_new("jobs", &jobs) == 0);
    static int key;
    pprof_custom_add(jobs, &key);

    answer a = {0};
    CHECK(get(NULL, "/debug/pprof/ui", "profile=heap&sample_index=cpu", &a) == 400);
    CHECKF(a.body && !strcmp(a.body, "invalid value for \"sample_index\" - the heap profile has alloc_objects, "
                                     "alloc_space, inuse_objects or inuse_space (or an index from 0 to 3)\n"),
           "%s", a.body);
    CHECK(get(NULL, "/debug/pprof/ui", "profile=heap&sample_index=inuse_objects", &a) == 200);
    CHECK(get(NULL, "/debug/pprof/ui", "profile=heap&sample_index=3", &a) == 200);
    CHECK(get(NULL, "/debug/pprof/ui", "profile=heap&sample_index=4", &a) == 400);
    CHECK(get(NULL, "/debug/pprof/ui", "sample_index=cpu", &a) == 200); /* the CPU profile's */
    CHECK(get(NULL, "/debug/pprof/ui", "sample_index=alloc_space", &a) == 400);
    CHECK(get(NULL, "/debug/pprof/ui", "profile=jobs&sample_index=jobs", &a) == 200);
    CHECK(get(NULL, "/debug/pprof/ui", "profile=jobs&sample_index=1", &a) == 400);
    CHECK(get(NULL, "/debug/pprof/ui", "profile=goroutine&sample_index=goroutine&seconds=5", &a) == 200);

    /* every profile the page lists: the page's types are the profile's */
    CHECK(get(NULL, "/debug/pprof/ui", NULL, &a) == 200);
    const char *p = a.body ? strstr(a.body, "PP_PROFILES = [") : NULL;
    names all = {.n = 0};
    for (p = p ? p + 15 : NULL; p && *p == '"' && all.n < 64; p += strcspn(p + 1, "\"") + 2, p += *p == ',')
        snprintf(all.list[all.n++], sizeof all.list[0], "%.*s", (int)strcspn(p + 1, "\""), p + 1);
    free(a.body);
    CHECKF(all.n >= 12, "%d profiles listed", all.n);
    for (int i = 0; i < all.n; i++) {
        char page[256] = "", prof[256] = "";
        if (page_types(all.list[i], page, sizeof page) && profile_types(all.list[i], prof, sizeof prof))
            CHECKF(!strcmp(page, prof), "%s: the page says %s, the profile has %s", all.list[i], page, prof);
    }
}

int main(void)
{
    test_serves();
    test_sample_index();
    return check_summary("test_http_checks");
}
