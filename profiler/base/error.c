/* error.c: error texts and the calling thread's last failure.
 *
 * pprof_strerror gives a code's fixed text and pprof_err_name its name
 * (both switches list every code of pprof.h's enum: a new code goes in
 * both). Every failing call records its code on the calling thread, with
 * one line of detail where it has one (pp_error_detail: which rate is in
 * force, which name is taken) or none (pp_fail), so pprof_last_error
 * never shows the detail of an earlier, unrelated failure. Per thread, so
 * concurrent failures do not mix. The text is made whole when the failure
 * is recorded, in a buffer that every detail libpprof makes fits (error.h).
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static __thread int last_code;
static __thread char message[PP_ERROR_MAX]; /* "text: detail", "" without a detail */

/* async-signal-safe */
void pp_fail_note(int code)
{
    if (code < 0) {
        last_code = code;
        message[0] = 0;
    }
}

void pp_error_note(int code, const char *fmt, ...)
{
    int n = snprintf(message, sizeof message, "%s: ", pprof_strerror(code));
    va_list ap;
    va_start(ap, fmt);
    int d = vsnprintf(message + n, sizeof message - (size_t)n, fmt, ap);
    va_end(ap);
    if (d < 0 || !message[n]) /* no detail after all */
        message[0] = 0;
    else if ((size_t)n + (size_t)d >= sizeof message) /* never for libpprof's texts (error.h): said, not hidden */
        memcpy(message + sizeof message - 4, "...", 4);
    last_code = code;
}

const char *pp_elide(const char *s, char buf[PP_ELIDE_MAX])
{
    size_t len = strlen(s);
    if (len < PP_ELIDE_MAX)
        return s;
    memcpy(buf, "...", 3);
    memcpy(buf + 3, s + len - (PP_ELIDE_MAX - 4), PP_ELIDE_MAX - 4);
    buf[PP_ELIDE_MAX - 1] = 0;
    return buf;
}

const char *pprof_strerror(int code)
{
    switch (code) {
    case PPROF_OK: return "success";
    case PPROF_EINVAL: return "invalid argument";
    case PPROF_ENOMEM: return "out of memory";
    case PPROF_EBUSY: return "already running";
    case PPROF_ERATE: return "sampling rate differs from the rate in force";
    case PPROF_ESTATE: return "not valid in the current state";
    case PPROF_ESYS: return "system call failed";
    case PPROF_EIO: return "write failed";
    case PPROF_ENOTSUP: return "not supported";
    case PPROF_EADDR: return "cannot serve on that address";
    case PPROF_ELIMIT: return "limit reached";
    case PPROF_ENOTFOUND: return "not found";
    default: return "unknown error";
    }
}

/* async-signal-safe */
const char *pprof_err_name(int code)
{
    switch (code) {
    case PPROF_OK: return "PPROF_OK";
    case PPROF_EINVAL: return "PPROF_EINVAL";
    case PPROF_ENOMEM: return "PPROF_ENOMEM";
    case PPROF_EBUSY: return "PPROF_EBUSY";
    case PPROF_ERATE: return "PPROF_ERATE";
    case PPROF_ESTATE: return "PPROF_ESTATE";
    case PPROF_ESYS: return "PPROF_ESYS";
    case PPROF_EIO: return "PPROF_EIO";
    case PPROF_ENOTSUP: return "PPROF_ENOTSUP";
    case PPROF_EADDR: return "PPROF_EADDR";
    case PPROF_ELIMIT: return "PPROF_ELIMIT";
    case PPROF_ENOTFOUND: return "PPROF_ENOTFOUND";
    default: return "PPROF_E?";
    }
}

const char *pprof_last_error(void)
{
    if (!last_code)
        return "";
    return message[0] ? message : pprof_strerror(last_code);
}

void pp_say(const char *fmt, ...)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(2, (struct sockaddr *)&ss, &len) == 0 && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6))
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}
