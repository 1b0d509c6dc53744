/* error.h: recording the calling thread's last failure (pprof_last_error). */
#ifndef PP_ERROR_H
#define PP_ERROR_H
#include "pprof.h"

/* Records `code` (negative) as this thread's last failure, with no detail;
 * returns code, so `return pp_fail(PPROF_EINVAL);`. async-signal-safe */
int pp_fail(int code);
/* The same with a printf-style line of detail, so
 * `return pp_error_detail(PPROF_ERATE, "rate in force is %d Hz", hz);`.
 * Not async-signal-safe. */
int pp_error_detail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
