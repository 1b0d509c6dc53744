/* reply.c: responses under construction (see reply.h).
 *
 * A reply is a pprof_http_response whose body grows in a buffer; headers
 * point at strings that outlive it. When memory runs out while it is
 * built, the reply remembers it and is delivered as a 500 with a static
 * body, so that every request gets an answer.
 */
#include "reply.h"
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void pp_reply_init(pp_reply *r, int status)
{
    memset(r, 0, sizeof *r);
    r->resp.status = status;
    pp_reply_header(r, "X-Content-Type-Options", "nosniff");
}

void pp_reply_header(pp_reply *r, const char *name, const char *value)
{
    pprof_http_response *p = &r->resp;
    for (size_t i = 0; i < p->nheaders; i++) {
        if (strcasecmp(p->headers[i].name, name) == 0) {
            p->headers[i].value = value;
            return;
        }
    }
    if (p->nheaders == PPROF_HTTP_MAX_HEADERS) {
        r->failed = 1;
        return;
    }
    p->headers[p->nheaders].name = name;
    p->headers[p->nheaders].value = value;
    p->nheaders++;
}

void pp_reply_write(pp_reply *r, const void *data, size_t len)
{
    if (r->failed || len == 0)
        return;
    pprof_writer w = pprof_writer_buffer(&r->resp.body);
    if (w.write(w.ctx, data, len) != 0)
        r->failed = 1;
}

static int reply_writer_write(void *ctx, const void *data, size_t len)
{
    pp_reply *r = ctx;
    pp_reply_write(r, data, len);
    return r->failed ? -1 : 0;
}

pprof_writer pp_reply_writer(pp_reply *r)
{
    return (pprof_writer){.write = reply_writer_write, .ctx = r};
}

void pp_reply_printf(pp_reply *r, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        r->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        pp_reply_write(r, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        r->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    pp_reply_write(r, big, (size_t)n);
    free(big);
}

void pp_reply_set_errorv(pp_reply *r, int status, const char *fmt, va_list ap)
{
    char small[512], *line = small;
    pprof_buffer_free(&r->resp.body);
    pp_reply_init(r, status);
    pp_reply_header(r, "Content-Type", "text/plain; charset=utf-8");
    pp_reply_header(r, "X-Go-Pprof", "1");
    if (status == 503) /* every 503 here is a limit or a passing state */
        pp_reply_header(r, "Retry-After", "5");
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small - 1, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof small - 2) { /* a long value quoted: the whole line, else as much as fits */
        char *big = malloc((size_t)n + 2);
        if (big && vsnprintf(big, (size_t)n + 1, fmt, again) == n)
            line = big;
        else
            n = (int)(sizeof small - 2);
        if (line != big)
            free(big);
    }
    va_end(again);
    for (int i = 0; i < n; i++) /* one line, whatever the message holds */
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';
    pp_reply_write(r, line, (size_t)n);
    if (line != small)
        free(line);
}

void pp_reply_set_error(pp_reply *r, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pp_reply_set_errorv(r, status, fmt, ap);
    va_end(ap);
}

void pp_reply_deliver(pp_reply *r, pprof_http_done done, void *ctx)
{
    static char oom_text[] = "out of memory\n";
    if (r->failed) {
        /* Answer without allocating: a static body, not freed below. */
        pprof_buffer_free(&r->resp.body);
        pp_reply_init(r, 500);
        pp_reply_header(r, "Content-Type", "text/plain; charset=utf-8");
        pp_reply_header(r, "X-Go-Pprof", "1");
        r->resp.body.data = oom_text;
        r->resp.body.len = sizeof oom_text - 1;
        done(ctx, &r->resp);
        r->resp.body = (pprof_buffer){0};
        return;
    }
    done(ctx, &r->resp);
    pprof_buffer_free(&r->resp.body);
}

static void deliver_errorv(pprof_http_done done, void *ctx, int status, const char *fmt, va_list ap)
{
    pp_reply r;
    pp_reply_init(&r, status);
    pp_reply_set_errorv(&r, status, fmt, ap);
    pp_reply_deliver(&r, done, ctx);
}

void pp_reply_error_to(pprof_http_done done, void *ctx, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    deliver_errorv(done, ctx, status, fmt, ap);
    va_end(ap);
}

int pp_reply_send(pp_req *q, pp_reply *r)
{
    pp_reply_deliver(r, q->done, q->ctx);
    return 0;
}

int pp_reply_error(pp_req *q, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    deliver_errorv(q->done, q->ctx, status, fmt, ap);
    va_end(ap);
    return 0;
}

const char *pp_why(int rc)
{
    const char *e = pprof_last_error();
    return e[0] ? e : pprof_strerror(rc);
}
