/* error.h: recording the calling thread's last failure (pprof_last_error). */
#ifndef PP_ERROR_H
#define PP_ERROR_H
#include "pprof.h"

/* Records `code` (negative) as this thread's last failure, with no detail.
 * async-signal-safe */
void pp_fail_note(int code);
/* The same with a printf-style line of detail. Not async-signal-safe. */
void pp_error_note(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* pp_fail_note, returning code, so `return pp_fail(PPROF_EINVAL);`. Inline,
 * so that the compiler and the static analysers see the code returned.
 * async-signal-safe */
static inline int pp_fail(int code)
{
    pp_fail_note(code);
    return code;
}
/* pp_error_note, returning code (a constant or a variable: it is named
 * twice), so `return pp_error_detail(PPROF_ERATE, "rate in force is %d
 * Hz", hz);`. Not async-signal-safe. */
#define pp_error_detail(code, ...) (pp_error_note((code), __VA_ARGS__), pp_error_code(code))
static inline int pp_error_code(int code)
{
    return code;
}

/* Prints one of the profiler's lines ("libpprof: ...") on stderr, unless
 * stderr is a network socket: an inetd-style service's connection, or a
 * vsftpd session's, whose protocol the line would break. Every line the
 * profiler prints goes through it. Not async-signal-safe. */
void pp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Room for pprof_last_error's text, NUL included: a code's text, ": " and
 * a detail of up to PP_DETAIL_MAX bytes. Every detail libpprof makes fits
 * whole: fixed texts are far shorter, and a path, address or name from
 * outside goes in through pp_elide. A buffer that holds such a text for
 * later is PP_ERROR_MAX bytes. */
#define PP_DETAIL_MAX 440
#define PP_ERROR_MAX (PP_DETAIL_MAX + 72)
/* Room for what pp_elide writes, NUL included. */
#define PP_ELIDE_MAX 161
/* `s` as it goes into a message: s itself when under PP_ELIDE_MAX bytes,
 * else "..." and its last bytes written to buf (its end says most: a
 * file's name, an address's port). */
const char *pp_elide(const char *s, char buf[PP_ELIDE_MAX]);
#endif
