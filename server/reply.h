/* reply.h: responses under construction (reply.c).
 *
 * The bottom of the server: every layer above builds its answers here and
 * hands them to a transport's done callback. Nothing here calls another
 * file of server/.
 */
#ifndef PP_REPLY_H
#define PP_REPLY_H

#include <stdarg.h>
#include <stddef.h>

#include "pprof.h"

/* A response under construction. Header values must outlive the reply
 * (string literals). */
typedef struct pp_reply {
    pprof_http_response resp;
    int failed;              /* an allocation failed: send a bare 500 */
} pp_reply;

/* Starts a reply with `status` and the header every response carries
 * (X-Content-Type-Options: nosniff). */
void pp_reply_init(pp_reply *r, int status);
void pp_reply_header(pp_reply *r, const char *name, const char *value);
void pp_reply_write(pp_reply *r, const void *data, size_t len);
void pp_reply_printf(pp_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A writer that appends to the reply's body (for pprof_profile_write). */
pprof_writer pp_reply_writer(pp_reply *r);
/* Turns `r` into an error answer: status, text/plain, X-Go-Pprof: 1 and
 * the formatted message as one line ending in "\n". */
void pp_reply_set_error(pp_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pp_reply_set_errorv(pp_reply *r, int status, const char *fmt, va_list ap);
/* Hands the reply to done(ctx, ...) and frees its body. */
void pp_reply_deliver(pp_reply *r, pprof_http_done done, void *ctx);
struct pp_req;
/* pp_reply_deliver to the request's own done callback. Returns 0. */
int pp_reply_send(struct pp_req *q, pp_reply *r);
/* Builds and sends an error answer. Returns 0. */
int pp_reply_error(struct pp_req *q, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Builds the error answer and hands it to done(ctx, ...). */
void pp_reply_error_to(pprof_http_done done, void *ctx, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Why a call failed with rc: the calling thread's last failure, or rc's
 * own text when the failing call left none. */
const char *pp_why(int rc);

#endif /* PP_REPLY_H */
