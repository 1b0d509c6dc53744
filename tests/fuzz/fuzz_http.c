/* fuzz_http.c: libFuzzer target for pprof_http_handle, the whole request
 * path shared by the built-in server and the libmicrohttpd adapter: routing,
 * query parsing, every endpoint, the symbol POST parser.
 *
 * The input is "method\npath\nquery\nbody"; a path that does not start with
 * '/' is taken under /debug/pprof/. A request that is still pending when
 * pprof_http_handle returns (a profile that runs for seconds) is cancelled
 * at once. Every response must have a status from 100 to 599, and a 4xx
 * one a reason in its body.
 */
#include "pprof.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void done(void *ctx, const pprof_http_response *r)
{
    if (r->status < 100 || r->status > 599 || (r->status >= 400 && r->status < 500 && r->body.len == 0)) {
        fprintf(stderr, "fuzz_http: status %d with a body of %zu bytes\n", r->status, r->body.len);
        abort();
    }
    *(int *)ctx = 1;
}

/* The next line of [*p, end) as a fresh string; *p moves past it. */
static char *take_line(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    size_t n = (size_t)((nl ? nl : end) - *p);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, *p, n);
        s[n] = 0;
    }
    *p = nl ? nl + 1 : end;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *method = take_line(&p, end), *path = take_line(&p, end), *query = take_line(&p, end);
    char *full = path ? malloc(strlen(path) + sizeof "/debug/pprof/") : NULL;
    if (method && full && query) {
        snprintf(full, strlen(path) + sizeof "/debug/pprof/", "%s%s", path[0] == '/' ? "" : "/debug/pprof/", path);
        pprof_server_config cfg = {.no_tree = 1};
        pprof_http_request req = {method, full, query[0] ? query : NULL, p, (size_t)(end - p)};
        int answered = 0;
        pprof_http_call *call = NULL;
        if (pprof_http_handle(&cfg, &req, done, &answered, &call) == 0 && call)
            pprof_http_cancel(call);
    }
    free(method);
    free(path);
    free(query);
    free(full);
    return 0;
}
