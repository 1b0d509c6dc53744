/* test_http.c: pprof_http_handle without a network: routing, methods,
 * query parsing, error answers and headers, cmdline, symbol, the index,
 * and asynchronous CPU profiles with cancellation and the concurrency cap.
 * test-labels: concurrency timing
 * Uses only the public API of pprof.h.
 */
#include "pprof.h"
#include "check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* What a done callback saw. */
typedef struct answer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    int status;
    size_t nheaders;
    char names[PPROF_HTTP_MAX_HEADERS][64];
    char values[PPROF_HTTP_MAX_HEADERS][128];
    char *body;
    size_t len;
} answer;

static void answer_init(answer *a)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
}

static void answer_free(answer *a)
{
    free(a->body);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
}

static void on_done(void *ctx, const pprof_http_response *r)
{
    answer *a = ctx;
    pthread_mutex_lock(&a->mu);
    a->calls++;
    a->status = r->status;
    a->nheaders = r->nheaders;
    for (size_t i = 0; i < r->nheaders && i < PPROF_HTTP_MAX_HEADERS; i++) {
        snprintf(a->names[i], sizeof a->names[i], "%s", r->headers[i].name);
        snprintf(a->values[i], sizeof a->values[i], "%s", r->headers[i].value);
    }
    free(a->body);
    a->body = malloc(r->body.len + 1);
    if (r->body.len)
        memcpy(a->body, r->body.data, r->body.len);
    a->body[r->body.len] = '\0';
    a->len = r->body.len;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static const char *header(const answer *a, const char *name)
{
    for (size_t i = 0; i < a->nheaders; i++)
        if (strcasecmp(a->names[i], name) == 0)
            return a->values[i];
    return NULL;
}

static int header_is(const answer *a, const char *name, const char *want)
{
    const char *v = header(a, name);
    return v && strcmp(v, want) == 0;
}

/* Waits up to ms for the done callback; returns the number of calls. */
static int wait_done(answer *a, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&a->mu);
    while (a->calls == 0 && pthread_cond_timedwait(&a->cv, &a->mu, &ts) == 0)
        ;
    int n = a->calls;
    pthread_mutex_unlock(&a->mu);
    return n;
}

/* One synchronous request; checks that it answered before returning. */
static void request(const pprof_server_config *cfg, const char *method, const char *path,
                    const char *query, const char *body, answer *a)
{
    pprof_http_request req = {method, path, query, body, body ? strlen(body) : 0};
    answer_init(a);
    int rc = pprof_http_handle(cfg, &req, on_done, a, NULL);
    CHECKF(rc == 0, "%s %s?%s: rc %d", method, path, query ? query : "", rc);
    CHECKF(a->calls == 1, "%s %s?%s: done called %d times synchronously", method, path,
          query ? query : "", a->calls);
}

/* An error answer as the spec wants it. */
static void check_error(const answer *a, int status, const char *text, const char *what)
{
    CHECKF(a->status == status, "%s: status %d, want %d", what, a->status, status);
    CHECKF(header_is(a, "Content-Type", "text/plain; charset=utf-8"), "%s: content type", what);
    CHECKF(header_is(a, "X-Go-Pprof", "1"), "%s: X-Go-Pprof", what);
    CHECKF(header_is(a, "X-Content-Type-Options", "nosniff"), "%s: nosniff", what);
    CHECKF(a->len > 0 && a->body[a->len - 1] == '\n' && !memchr(a->body, '\n', a->len - 1),
          "%s: body is not one line: [%s]", what, a->body ? a->body : "");
    if (text)
        CHECKF(a->body && strncmp(a->body, text, strlen(text)) == 0 && a->body[strlen(text)] == '\n',
              "%s: body [%s], want [%s]", what, a->body ? a->body : "", text);
}

static void expect_error(const char *method, const char *path, const char *query, int status,
                         const char *text)
{
    answer a;
    char what[256];
    snprintf(what, sizeof what, "%s %s%s%s", method, path, query ? "?" : "", query ? query : "");
    request(NULL, method, path, query, NULL, &a);
    check_error(&a, status, text, what);
    answer_free(&a);
}

static void test_routing(void)
{
    expect_error("GET", "/debug/pprof/nope", NULL, 404, "Unknown profile");
    expect_error("GET", "/debug/pprof/profile/x", NULL, 404, "Unknown profile");
    expect_error("GET", "/elsewhere", NULL, 404, NULL);
    expect_error("GET", "/symbolz", NULL, 404, NULL); /* default prefix has /debug/pprof/ */
    expect_error("GET", "/debug/pprof/trace", NULL, 501, NULL);

    answer a;
    request(NULL, "PUT", "/debug/pprof/cmdline", NULL, NULL, &a);
    check_error(&a, 405, NULL, "PUT cmdline");
    CHECKF(header_is(&a, "Allow", "GET, HEAD"), "PUT cmdline: Allow");
    answer_free(&a);
    request(NULL, "POST", "/debug/pprof/profile", NULL, NULL, &a);
    check_error(&a, 405, NULL, "POST profile");
    answer_free(&a);
    request(NULL, "DELETE", "/debug/pprof/symbol", NULL, NULL, &a);
    check_error(&a, 405, NULL, "DELETE symbol");
    CHECKF(header_is(&a, "Allow", "GET, HEAD, POST"), "DELETE symbol: Allow");
    answer_free(&a);

    /* A custom prefix: only its paths, and /symbolz at the root. */
    pprof_server_config cfg = {.prefix = "/prof/"};
    request(&cfg, "HEAD", "/prof/cmdline", NULL, NULL, &a);
    CHECKF(a.status == 200, "HEAD /prof/cmdline: %d", a.status);
    answer_free(&a);
    request(&cfg, "GET", "/debug/pprof/cmdline", NULL, NULL, &a);
    check_error(&a, 404, NULL, "default path under a custom prefix");
    answer_free(&a);
    request(&cfg, "GET", "/symbolz", NULL, NULL, &a);
    CHECKF(a.status == 200 && strcmp(a.body, "num_symbols: 1\n") == 0, "/symbolz: %d [%s]", a.status,
          a.body);
    answer_free(&a);

    /* Bad arguments: no done call at all. */
    pprof_http_request req = {"GET", "/debug/pprof/", NULL, NULL, 0};
    pprof_server_config bad = {.prefix = "debug"};
    answer_init(&a);
    CHECKF(pprof_http_handle(&bad, &req, on_done, &a, NULL) == PPROF_EINVAL, "bad prefix");
    CHECKF(pprof_http_handle(NULL, NULL, on_done, &a, NULL) == PPROF_EINVAL, "NULL request");
    CHECKF(pprof_http_handle(NULL, &req, NULL, &a, NULL) == PPROF_EINVAL, "NULL done");
    CHECKF(a.calls == 0, "done called on invalid arguments");
    answer_free(&a);
}

static void test_index(void)
{
    answer a;
    request(NULL, "GET", "/debug/pprof/", NULL, NULL, &a);
    CHECKF(a.status == 200, "index status %d", a.status);
    CHECKF(header_is(&a, "Content-Type", "text/html; charset=utf-8"), "index content type");
    CHECKF(header_is(&a, "X-Content-Type-Options", "nosniff"), "index nosniff");
    CHECKF(!header(&a, "X-Go-Pprof"), "index has X-Go-Pprof");
    CHECKF(a.body && strstr(a.body, "CPU sampling") && strstr(a.body, "Label sets") &&
              strstr(a.body, " live, "),
          "index lacks the profiler's own counters");
    const char *links[] = {"href=\"profile?seconds=30\"", "href=\"cmdline\"", "href=\"symbol\"",
                           "href=\"trace\"", "<title>/debug/pprof/</title>"};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        CHECKF(a.body && strstr(a.body, links[i]), "index lacks %s", links[i]);
    CHECKF(a.body && !strstr(a.body, "{{"), "index has an unfilled placeholder");
    answer_free(&a);
}

static void test_cmdline(int argc, char **argv)
{
    char want[4096];
    size_t n = 0;
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(argv[i]);
        if (n + l + 1 > sizeof want)
            break;
        if (i > 0)
            want[n++] = '\0';
        memcpy(want + n, argv[i], l);
        n += l;
    }
    answer a;
    request(NULL, "GET", "/debug/pprof/cmdline", NULL, NULL, &a);
    CHECKF(a.status == 200, "cmdline status %d", a.status);
    CHECKF(header_is(&a, "Content-Type", "text/plain; charset=utf-8"), "cmdline content type");
    CHECKF(header_is(&a, "X-Content-Type-Options", "nosniff"), "cmdline nosniff");
    CHECKF(a.len == n && memcmp(a.body, want, n) == 0, "cmdline body (%zu bytes, want %zu)", a.len, n);
    answer_free(&a);
}

static void test_symbol(void)
{
    char query[256], want[256];
    uint64_t m = (uint64_t)(uintptr_t)&test_symbol, mainaddr = 0;
    extern int main(int, char **);
    mainaddr = (uint64_t)(uintptr_t)&main;
    answer a;

    request(NULL, "GET", "/debug/pprof/symbol", NULL, NULL, &a);
    CHECKF(a.status == 200 && strcmp(a.body, "num_symbols: 1\n") == 0, "symbol no query: [%s]", a.body);
    CHECKF(header_is(&a, "Content-Type", "text/plain; charset=utf-8"), "symbol content type");
    answer_free(&a);

    snprintf(query, sizeof query, "0x%" PRIx64, mainaddr);
    snprintf(want, sizeof want, "num_symbols: 1\n0x%" PRIx64 " main\n", mainaddr);
    request(NULL, "GET", "/debug/pprof/symbol", query, NULL, &a);
    CHECKF(a.status == 200 && strcmp(a.body, want) == 0, "symbol GET main: [%s] want [%s]", a.body, want);
    answer_free(&a);

    /* POST like go tool pprof, with junk, zero, decimal and upper-case hex. */
    snprintf(query, sizeof query, "0x0+junk+0x%" PRIX64 "++%" PRIu64 "+-1+0xzz", mainaddr, m + 1);
    snprintf(want, sizeof want, "num_symbols: 1\n0x%" PRIx64 " main\n0x%" PRIx64 " test_symbol\n",
             mainaddr, m + 1);
    request(NULL, "POST", "/debug/pprof/symbol", "0x1234", query, &a);
    CHECKF(a.status == 200 && strcmp(a.body, want) == 0, "symbol POST: [%s] want [%s]", a.body, want);
    answer_free(&a);

    /* An address nothing covers is left out. */
    request(NULL, "POST", "/debug/pprof/symbol", NULL, "0x10", &a);
    CHECKF(a.status == 200 && strcmp(a.body, "num_symbols: 1\n") == 0, "symbol unmapped: [%s]", a.body);
    answer_free(&a);
}

static void test_query_errors(void)
{
    static const char SECONDS[] = "invalid value for \"seconds\" - must be a positive integer";
    const char *p = "/debug/pprof/profile";
    static const struct {
        const char *query, *text;
    } bad[] = {
        {"seconds=0", SECONDS},
        {"seconds=-1", SECONDS},
        {"seconds=abc", SECONDS},
        {"seconds=", SECONDS},
        {"seconds=1.5", SECONDS},
        {"seconds=99999999999999999999", SECONDS},
        {"seconds=601", "invalid value for \"seconds\" - must be at most 600"},
        {"seconds=1&debug=1", "seconds and debug params are incompatible"},
        {"debug=1", "seconds and debug params are incompatible"},
        {"seconds=1&seconds=2", NULL},
        {"debug=x", NULL},
        {"debug=-1", "invalid value for \"debug\" - must be 0 or more"},
        {"gc=1x", NULL},
        {"seconds=%zz", NULL},
        {"seconds=1%", NULL},
        {"sec%2", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_error("GET", p, bad[i].query, 400, bad[i].text);
    expect_error("GET", "/debug/pprof/heap", "debug=-1", 400, "invalid value for \"debug\" - must be 0 or more");

    answer a;
    pprof_server_config cfg = {.max_seconds = 5};
    request(&cfg, "GET", p, "seconds=6", NULL, &a);
    check_error(&a, 400, "invalid value for \"seconds\" - must be at most 5", "max_seconds 5");
    answer_free(&a);
}

/* Starts an asynchronous request; returns its call handle. */
static pprof_http_call *start_async(const pprof_server_config *cfg, const char *query, answer *a)
{
    pprof_http_request req = {"GET", "/debug/pprof/profile", query, NULL, 0};
    pprof_http_call *call = NULL;
    answer_init(a);
    int rc = pprof_http_handle(cfg, &req, on_done, a, &call);
    CHECKF(rc == 0, "profile?%s: rc %d", query, rc);
    return call;
}

static volatile uint64_t sink;

static void burn_ms(int ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 100000; i++)
            sink += (uint64_t)i * 2654435761u;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static void test_profile(void)
{
    answer a;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Unknown parameters are ignored, escapes decoded: seconds=1. */
    pprof_http_call *call = start_async(NULL, "foo=%zz&seconds=%31&x", &a);
    CHECKF(call != NULL, "profile: no call handle");
    CHECKF(a.calls == 0, "profile answered synchronously (status %d: %s)", a.status,
          a.body ? a.body : "");
    burn_ms(300);
    CHECKF(wait_done(&a, 5000) == 1, "profile not answered within 5 s");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECKF(secs >= 0.95 && secs < 4.0, "profile?seconds=1 took %.2f s", secs);
    CHECKF(a.status == 200, "profile status %d: %s", a.status, a.body ? a.body : "");
    CHECKF(a.len >= 2 && (unsigned char)a.body[0] == 0x1f && (unsigned char)a.body[1] == 0x8b,
          "profile body is not gzip (%zu bytes)", a.len);
    CHECKF(header_is(&a, "Content-Type", "application/octet-stream"), "profile content type");
    CHECKF(header_is(&a, "Content-Disposition", "attachment; filename=\"profile\""),
          "profile content disposition");
    CHECKF(header_is(&a, "X-Content-Type-Options", "nosniff"), "profile nosniff");
    CHECKF(!header(&a, "X-Go-Pprof"), "profile has X-Go-Pprof");
    answer_free(&a);
    pprof_http_cancel(call); /* after done: releases the handle */

    /* Cancel: done never runs. */
    call = start_async(NULL, "seconds=1", &a);
    pprof_http_cancel(call);
    CHECKF(wait_done(&a, 1500) == 0, "done ran after cancel");
    answer_free(&a);

    /* The concurrency cap: two run, the third gets 503; freed by cancel. */
    pprof_server_config cfg = {.max_concurrent = 2};
    answer b, c, d;
    pprof_http_call *cb = start_async(&cfg, "seconds=5", &b);
    pprof_http_call *cc = start_async(&cfg, "seconds=5", &c);
    CHECKF(b.calls == 0 && c.calls == 0, "two concurrent profiles: %d/%d answered at once (%s%s)",
          b.status, c.status, b.body ? b.body : "", c.body ? c.body : "");
    pprof_http_call *cd = start_async(&cfg, "seconds=5", &d);
    CHECKF(cd == NULL && d.calls == 1, "third profile not refused");
    check_error(&d, 503, NULL, "profile beyond max_concurrent");
    answer_free(&d);
    pprof_http_cancel(cb);
    pprof_http_cancel(cc);
    cd = start_async(&cfg, "seconds=5", &d);
    CHECKF(cd != NULL && d.calls == 0, "profile refused after cancels freed the places");
    pprof_http_cancel(cd);
    CHECKF(b.calls == 0 && c.calls == 0 && d.calls == 0, "done ran after cancel");
    answer_free(&b);
    answer_free(&c);
    answer_free(&d);
}

/* Cancel racing the scheduler completing the same call: after cancel
 * returns, done has either run completely or not at all. */
static void test_cancel_race(void)
{
    for (int i = 0; i < 3; i++) {
        answer a;
        pprof_http_call *call = start_async(NULL, "seconds=1", &a);
        struct timespec ts = {0, 990000000 + i * 5000000};
        nanosleep(&ts, NULL);
        pprof_http_cancel(call);
        pthread_mutex_lock(&a.mu);
        int calls = a.calls, st = a.status;
        pthread_mutex_unlock(&a.mu);
        CHECKF(calls == 0 || (calls == 1 && st == 200), "race %d: calls %d status %d", i, calls, st);
        usleep(100000);
        CHECKF(a.calls == calls, "race %d: done ran after cancel returned", i);
        answer_free(&a);
    }
}

/* pprof_tree_collect: without a tree, this process's profile; bad
 * requests are errors with their reason. */
static void test_tree_collect(void)
{
    check_case_begin();
    pprof_buffer b = {0};
    CHECK(pprof_tree_collect(NULL, pprof_writer_buffer(&b)) == PPROF_EINVAL);
    CHECK(pprof_tree_collect("", pprof_writer_buffer(&b)) == PPROF_EINVAL);
    CHECK(pprof_tree_collect("nosuch", pprof_writer_buffer(&b)) == PPROF_ENOTFOUND);
    CHECKF(strstr(pprof_last_error(), "Unknown profile") != NULL, "reason: %s", pprof_last_error());
    CHECK(pprof_tree_collect("heap?debug=-1", pprof_writer_buffer(&b)) == PPROF_EINVAL);
    CHECK(b.len == 0);
    CHECK(pprof_tree_collect("goroutine", pprof_writer_buffer(&b)) == 0);
    CHECKF(b.len > 2 && (unsigned char)b.data[0] == 0x1f && (unsigned char)b.data[1] == 0x8b,
           "goroutine: %zu bytes, not gzip", b.len);
    pprof_buffer_free(&b);
    check_case_end("pprof_tree_collect");
}

int main(int argc, char **argv)
{
    test_routing();
    test_index();
    test_cmdline(argc, argv);
    test_symbol();
    test_query_errors();
    test_profile();
    test_cancel_race();
    test_tree_collect();
    return check_summary("test_http");
}
