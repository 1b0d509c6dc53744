/* error.c: error texts and the calling thread's last failure.
 *
 * pprof_strerror gives a code's fixed text and pprof_err_name its name
 * (both switches list every code of pprof.h's enum: a new code goes in
 * both). Every failing call records its code on the calling thread, with
 * one line of detail where it has one (pp_error_detail: which rate is in
 * force, which name is taken) or none (pp_fail), so pprof_last_error
 * never shows the detail of an earlier, unrelated failure. Per thread, so
 * concurrent failures do not mix.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static __thread int last_code;
static __thread char last_detail[160];
static __thread char message[256];

/* async-signal-safe */
int pp_fail(int code)
{
    if (code < 0) {
        last_code = code;
        last_detail[0] = 0;
    }
    return code;
}

int pp_error_detail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_detail, sizeof last_detail, fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
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
    if (!last_detail[0])
        return pprof_strerror(last_code);
    snprintf(message, sizeof message, "%s: %s", pprof_strerror(last_code), last_detail);
    return message;
}
