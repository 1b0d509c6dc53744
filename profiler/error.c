/* error.c: pprof_strerror and the per-thread detail of the last failure.
 *
 * A failing call may leave one line of detail (pp_error_detail) that
 * pprof_strerror appends to the code's fixed text, so a PPROF_ERATE can say
 * which rate is in force. The detail is per thread, so concurrent failures
 * on other threads do not mix their messages.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static __thread char detail[160];
static __thread int detail_code;
static __thread char message[256];

int pp_error_detail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    detail_code = code;
    return code;
}

static const char *base_text(int code)
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
    default: return "unknown error";
    }
}

const char *pprof_strerror(int code)
{
    if (code == detail_code && code != PPROF_OK && detail[0]) {
        snprintf(message, sizeof message, "%s: %s", base_text(code), detail);
        return message;
    }
    return base_text(code);
}
