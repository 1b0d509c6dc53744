/* wait_hooks.h: the frame a wrapped wait keeps while it calls the C
 * library's (wait_hooks.c, sock_hooks.c; see signals/restart.c). */
#ifndef PP_WAIT_HOOKS_H
#define PP_WAIT_HOOKS_H
#include "base/base.h"
#include "signals/signals.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#define NS 1000000000LL

/* A wrapped wait in progress: the outer one's broken flag, kept. */
typedef struct {
    int outer_broken;
} wait_frame;

/* async-signal-safe */
static inline void wait_enter(wait_frame *f)
{
    f->outer_broken = pp_wait_broken;
    pp_wait_broken = 0;
    pp_wait_depth++;
}

/* 1 when the call should be made again: it failed with EINTR that the
 * profiling signal caused. Clears the mark for the next call. async-signal-safe */
static inline int wait_broken(int failed)
{
    int again = failed && errno == EINTR && pp_wait_broken;
    pp_wait_broken = 0;
    return again;
}

/* async-signal-safe */
static inline void wait_leave(wait_frame *f)
{
    pp_wait_depth--;
    pp_wait_broken = f->outer_broken;
}

/* async-signal-safe */
static inline int64_t ts_ns(const struct timespec *t)
{
    return (int64_t)t->tv_sec * NS + t->tv_nsec;
}

/* async-signal-safe */
static inline struct timespec ns_ts(int64_t ns)
{
    if (ns < 0)
        ns = 0;
    return (struct timespec){(time_t)(ns / NS), (long)(ns % NS)};
}

/* Whether `t` is a time a wait accepts. async-signal-safe */
static inline int valid(const struct timespec *t)
{
    return t && t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < NS;
}

#endif
