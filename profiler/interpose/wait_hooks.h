/* wait_hooks.h: the frame a wrapped wait keeps while it calls the C
 * library's (wait_hooks.c, sock_hooks.c; see signals/restart.c). */
#ifndef PP_WAIT_HOOKS_H
#define PP_WAIT_HOOKS_H
#include "arch/arch.h"
#include "base/base.h"
#include "signals/signals.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#define NS 1000000000LL

/* When a wait began, for a wrapper that needs it only when the wait is
 * broken (sock_hooks.c): the processor's counter where the kernel's clock
 * reads it too (pp_wait_counter, set once at start-up), a few cycles
 * with no memory touched; else CLOCK_MONOTONIC's nanoseconds, with the top
 * bit set. async-signal-safe */
#define WAIT_STAMP_NS (1ull << 63)
extern int pp_wait_counter;
static inline uint64_t wait_stamp(void)
{
    return pp_wait_counter ? pp_arch_counter() & ~WAIT_STAMP_NS
                           : (uint64_t)pp_now_ns(CLOCK_MONOTONIC) | WAIT_STAMP_NS;
}
/* The nanoseconds since `stamp`, rounded down. async-signal-safe */
int64_t pp_wait_since_ns(uint64_t stamp);

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
