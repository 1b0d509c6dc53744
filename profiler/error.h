/* error.h: recording one line of detail for pprof_strerror. */
#ifndef PP_ERROR_H
#define PP_ERROR_H
#include "pprof.h"

/* Stores a printf-style detail for `code` on this thread; returns code, so
 * `return pp_error_detail(PPROF_ERATE, "rate in force is %d Hz", hz);`.
 * Not async-signal-safe. */
int pp_error_detail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
