/* wait_hooks.c: the program's waits with a timeout, interposed, so that
 * one the profiling signal breaks ends exactly when it would have.
 *
 * poll, ppoll, select, pselect, epoll_wait, epoll_pwait and epoll_pwait2
 * take a time to wait, not a deadline, and the kernel keeps no time left
 * for them that a signal handler could read (or writes it into glibc's own
 * copy); nor for nanosleep and clock_nanosleep without a place for the
 * time left, usleep, or sigtimedwait (a futex wait made with syscall():
 * syscall_hook.c). Entered again as they
 * were, they would wait their whole time once more, and a thread woken as
 * its time ran out would wait again instead of returning 0
 * (signals/restart.c). Each wrapper notes the deadline before it calls the
 * C library's function, with pp_wait_depth raised: the profiling
 * handler, when it breaks the wait and no signal of the program's is
 * pending, sets pp_wait_broken and leaves the EINTR, and the wrapper calls
 * again with the time that remains (none once the deadline has passed:
 * the call then returns what is ready, as it would have). An EINTR that
 * a signal of the program's caused is the program's, with the time left
 * where the call reports it. A poll's time is in milliseconds: the time
 * that remains is rounded up, so a broken poll ends at most 1 ms past its
 * deadline and never before it. A call that is not broken costs a clock
 * read (vDSO) and two thread-local writes.
 *
 * Waits whose time is absolute or written back by the kernel where
 * restart.c finds it (condition variables, semaphores, sleep) need no
 * wrapper: restart.c enters them again exactly.
 */
#define _GNU_SOURCE
/* These define poll, recv and the rest themselves: the C library's
 * _FORTIFY_SOURCE inline wrappers of the same names (a distribution's
 * default flags) would clash with their attributes. */
#undef _FORTIFY_SOURCE
#include "base/base.h"
#include "signals/signals.h"
#include "hooks.h"
#include "unwind/unwind.h"
#include "wait_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

#define NEXT(X)                                                                                                   \
    X(poll) X(ppoll) X(select) X(pselect) X(epoll_wait) X(epoll_pwait) X(epoll_pwait2) X(nanosleep)             \
        X(clock_nanosleep) X(usleep) X(sigtimedwait)
NEXT(PP_NEXT_DECL)

int pp_wait_counter;
static uint64_t counter0; /* the counter and the clock at start-up */
static int64_t clock0;

/* Whether the kernel's clock is the processor's counter: arm64's always
 * is; x86-64's when its clocksource is tsc (then the TSC runs at one
 * rate, the same on every CPU). */
static int counter_is_clock(void)
{
#ifdef __aarch64__
    return 1;
#else
    char buf[16] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n == 4 && !memcmp(buf, "tsc\n", 4);
#endif
}

/* Stamps are the counter from here on, converted by its rate since now. */
static void stamps_init(void)
{
    if (!counter_is_clock())
        return;
    counter0 = pp_arch_counter();
    clock0 = pp_now_ns(CLOCK_MONOTONIC);
    pp_wait_counter = 1;
}

/* async-signal-safe */
int64_t pp_wait_since_ns(uint64_t stamp)
{
    if (stamp & WAIT_STAMP_NS) {
        int64_t d = pp_now_ns(CLOCK_MONOTONIC) - (int64_t)(stamp & ~WAIT_STAMP_NS);
        return d > 0 ? d : 0;
    }
    uint64_t c = pp_arch_counter() & ~WAIT_STAMP_NS;
    int64_t now = pp_now_ns(CLOCK_MONOTONIC);
    if (c <= stamp || c <= counter0 || now <= clock0)
        return 0;
    /* the counter's rate, measured over the whole time since start-up */
    return (int64_t)((double)(c - stamp) * (double)(now - clock0) / (double)(c - counter0));
}

void pp_wait_hooks_init(void)
{
    stamps_init();
    NEXT(PP_NEXT_RESOLVE)
}

#define NEED(fn) PP_NEED(fn, pp_wait_hooks_init)

/* The milliseconds to wait until `deadline` (CLOCK_MONOTONIC), rounded
 * up; `ms` itself when it is not a wait with a time (negative: no limit). async-signal-safe */
static int ms_left(int ms, int64_t deadline)
{
    if (ms <= 0)
        return ms;
    int64_t left = deadline - pp_now_ns(CLOCK_MONOTONIC);
    return left <= 0 ? 0 : (int)((left + 999999) / 1000000);
}

/* async-signal-safe */
static int64_t ms_deadline(int ms)
{
    return ms > 0 ? pp_now_ns(CLOCK_MONOTONIC) + (int64_t)ms * 1000000 : 0;
}

/* The time left until `deadline` in *left, for a wait whose time was
 * `ts` (NULL: no limit, and NULL again). async-signal-safe */
static const struct timespec *ts_left(const struct timespec *ts, int64_t deadline, struct timespec *left)
{
    if (!ts)
        return NULL;
    *left = ns_ts(deadline - pp_now_ns(CLOCK_MONOTONIC));
    return left;
}

/* A wait with a time in milliseconds `ms`: `call` (which waits `t`) made
 * until the profiling signal does not break it, with the time left. */
#define WAIT_MS(ms, call)                                                                                         \
    do {                                                                                                          \
        wait_frame f;                                                                                             \
        int64_t deadline = ms_deadline(ms);                                                                      \
        wait_enter(&f);                                                                                           \
        int rc, t = (ms);                                                                                         \
        while (wait_broken((rc = (call)) < 0))                                                                   \
            t = ms_left((ms), deadline);                                                                         \
        wait_leave(&f);                                                                                           \
        return rc;                                                                                                \
    } while (0)

/* The same for a time in a timespec `ts` (NULL: no limit; `call` waits
 * `t`); an invalid time goes to `call` as it is, for its EINVAL. */
#define WAIT_TS(ts, call)                                                                                         \
    do {                                                                                                          \
        const struct timespec *t = (ts);                                                                          \
        if (t && !valid(t))                                                                                       \
            return (call);                                                                                        \
        wait_frame f;                                                                                             \
        int64_t deadline = t ? pp_now_ns(CLOCK_MONOTONIC) + ts_ns(t) : 0;                                       \
        struct timespec left;                                                                                     \
        wait_enter(&f);                                                                                           \
        int rc;                                                                                                   \
        while (wait_broken((rc = (call)) < 0))                                                                   \
            t = ts_left((ts), deadline, &left);                                                                  \
        wait_leave(&f);                                                                                           \
        return rc;                                                                                                \
    } while (0)

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int poll(struct pollfd *fds, nfds_t n, int ms)
{
    NEED(real_poll);
    WAIT_MS(ms, real_poll(fds, n, t));
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    NEED(real_ppoll);
    WAIT_TS(ts, real_ppoll(fds, n, t, mask));
}

/* Linux's select writes the time left into *tv (glibc passes it on), as
 * it does when the program's own signal breaks it: called again with it,
 * it waits exactly what remains. The sets are written only on success. */
/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
    NEED(real_select);
    wait_frame f;
    wait_enter(&f);
    int rc;
    while (wait_broken((rc = real_select(n, r, w, e, tv)) < 0))
        ;
    wait_leave(&f);
    return rc;
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *mask)
{
    NEED(real_pselect);
    WAIT_TS(ts, real_pselect(n, r, w, e, t, mask));
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int epoll_wait(int ep, struct epoll_event *ev, int max, int ms)
{
    NEED(real_epoll_wait);
    WAIT_MS(ms, real_epoll_wait(ep, ev, max, t));
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int epoll_pwait(int ep, struct epoll_event *ev, int max, int ms, const sigset_t *mask)
{
    NEED(real_epoll_pwait);
    WAIT_MS(ms, real_epoll_pwait(ep, ev, max, t, mask));
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *ts, const sigset_t *mask)
{
    NEED(real_epoll_pwait2);
    WAIT_TS(ts, real_epoll_pwait2(ep, ev, max, t, mask));
}

/* A relative sleep of `req` on `clock` broken by the profiling signal at
 * `deadline`: slept to the deadline. Returns clock_nanosleep's result;
 * when the program's own signal ends it, *rem (when not NULL) gets the
 * time left. async-signal-safe */
PP_HIDDEN_FRAME static int sleep_until(clockid_t clock, int64_t deadline, struct timespec *rem)
{
    struct timespec until = ns_ts(deadline);
    int rc;
    do {
        rc = real_clock_nanosleep(clock, TIMER_ABSTIME, &until, NULL);
        errno = rc;
    } while (wait_broken(rc != 0));
    if (rc == EINTR && rem)
        *rem = ns_ts(deadline - pp_now_ns(clock));
    return rc;
}

/* sleep_until on CLOCK_MONOTONIC for the calls that answer -1 and errno
 * (nanosleep, usleep). async-signal-safe */
static int sleep_rest(int64_t deadline, struct timespec *rem)
{
    int rc = sleep_until(CLOCK_MONOTONIC, deadline, rem);
    errno = rc;
    return rc ? -1 : 0;
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    if (!real_clock_nanosleep)
        pp_wait_hooks_init();
    if (!real_clock_nanosleep)
        return ENOSYS;
    if ((flags & TIMER_ABSTIME) || !valid(req))
        return real_clock_nanosleep(clock, flags, req, rem); /* entered again exactly by restart.c */
    wait_frame f;
    int64_t deadline = pp_now_ns(clock) + ts_ns(req);
    wait_enter(&f);
    int saved = errno, rc = real_clock_nanosleep(clock, flags, req, rem);
    errno = rc;
    if (wait_broken(rc != 0))
        rc = sleep_until(clock, deadline, rem);
    errno = saved;
    wait_leave(&f);
    return rc;
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int nanosleep(const struct timespec *req, struct timespec *rem)
{
    NEED(real_nanosleep);
    if (!valid(req) || !real_clock_nanosleep)
        return real_nanosleep(req, rem);
    wait_frame f;
    int64_t deadline = pp_now_ns(CLOCK_MONOTONIC) + ts_ns(req);
    wait_enter(&f);
    int rc = real_nanosleep(req, rem);
    if (wait_broken(rc < 0))
        rc = sleep_rest(deadline, rem);
    wait_leave(&f);
    return rc;
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int usleep(useconds_t us)
{
    NEED(real_usleep);
    if (!real_clock_nanosleep)
        return real_usleep(us);
    wait_frame f;
    int64_t deadline = pp_now_ns(CLOCK_MONOTONIC) + (int64_t)us * 1000;
    wait_enter(&f);
    int rc = real_usleep(us);
    if (wait_broken(rc < 0))
        rc = sleep_rest(deadline, NULL);
    wait_leave(&f);
    return rc;
}

/* async-signal-safe once the constructor resolved the next definitions */
PP_HIDDEN_FRAME API int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts)
{
    NEED(real_sigtimedwait);
    WAIT_TS(ts, real_sigtimedwait(set, info, t));
}
#else
void pp_wait_hooks_init(void)
{
}
#endif
