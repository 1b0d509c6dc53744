/* limit_hooks.c: setrlimit and prlimit, interposed, so that a process
 * that lowers its limits lets libpprof do first what the new limits
 * would forbid. The call itself passes through unchanged.
 *
 *  - RLIMIT_NOFILE lowered (sshd's pre-auth child sets it to 0 before it
 *    enters its sandbox): what needs a new descriptor, the narrow hooks
 *    (base/process.h; a tree member that has not connected to its hub
 *    yet connects now).
 *  - RLIMIT_NPROC set to 0 (haproxy's workers after start-up, unless
 *    insecure-fork-wanted; OpenSSH's rlimit sandbox): no thread can start
 *    from then on in a process that is not privileged, so the threads a
 *    profile would start start now and stay, waiting while no profile
 *    needs them: the no-threads hooks (the CPU collector, the server's
 *    scheduler).
 *
 * One limit is changed on its way: RLIMIT_AS, the address space, which
 * counts the profiler's own mappings (its heap's reserved region, its
 * tables, its threads' stacks) as the program's. vsftpd's session
 * processes set it to 200 MiB, under what the profiler's region alone
 * takes, and every mmap of theirs failed after. The kernel gets the
 * program's values plus the address space the profiler holds at the call
 * (pp_own_maps_bytes, pp_threads_own_stack_bytes), so the program keeps
 * the room it asked for; a thread the profiler starts later takes its
 * stack from the program's room unless the C library kept one from a
 * thread that ended. Reads of the limit (getrlimit, prlimit) give the
 * program back its own values while the kernel's are the ones set here.
 * An unprivileged process may not raise its hard limit: the added part
 * then stops at the hard limit it has.
 */
#define _GNU_SOURCE
#include "hooks.h"
#include "base/base.h"
#include "threads/threads.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <unistd.h>

_Static_assert(sizeof(struct rlimit) == sizeof(struct rlimit64), "one layout");

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

typedef int (*setrlimit_fn)(__rlimit_resource_t, const struct rlimit *);
typedef int (*getrlimit_fn)(__rlimit_resource_t, struct rlimit *);
typedef int (*prlimit_fn)(pid_t, __rlimit_resource_t, const struct rlimit *, struct rlimit *);
static setrlimit_fn real_setrlimit, real_setrlimit64;
static getrlimit_fn real_getrlimit, real_getrlimit64;
static prlimit_fn real_prlimit, real_prlimit64;

void pp_limit_hooks_init(void)
{
    real_setrlimit = (setrlimit_fn)pp_next_symbol("setrlimit", NULL);
    real_setrlimit64 = (setrlimit_fn)pp_next_symbol("setrlimit64", NULL);
    real_getrlimit = (getrlimit_fn)pp_next_symbol("getrlimit", NULL);
    real_getrlimit64 = (getrlimit_fn)pp_next_symbol("getrlimit64", NULL);
    real_prlimit = (prlimit_fn)pp_next_symbol("prlimit", NULL);
    real_prlimit64 = (prlimit_fn)pp_next_symbol("prlimit64", NULL);
}

/* RLIMIT_AS as the program set it, and as the kernel got it: each value
 * on its own (a read that races a change of the limit may see either). */
static _Atomic rlim_t as_host_cur, as_host_max, as_set_cur, as_set_max;
static _Atomic int as_changed;

static rlim_t plus(rlim_t v, size_t add)
{
    return v == RLIM_INFINITY || add >= RLIM_INFINITY - v ? RLIM_INFINITY : v + add;
}

static int is_self(pid_t pid)
{
    return pid == 0 || pid == getpid();
}

/* The program's own values for this process's RLIMIT_AS as the kernel
 * has it in *r. */
static void as_host_view(struct rlimit *r)
{
    if (!atomic_load(&as_changed))
        return;
    if (r->rlim_cur == atomic_load(&as_set_cur))
        r->rlim_cur = atomic_load(&as_host_cur);
    if (r->rlim_max == atomic_load(&as_set_max))
        r->rlim_max = atomic_load(&as_host_max);
}

/* Sets this process's RLIMIT_AS to the program's `want` plus the
 * profiler's own address space; the previous limit, as the program sees
 * it, in *old (may be NULL). As prlimit. */
static int set_as(const struct rlimit *want, struct rlimit *old)
{
    struct rlimit prev;
    if (!want) {
        errno = EFAULT; /* as the kernel says */
        return -1;
    }
    if (real_prlimit(0, RLIMIT_AS, NULL, &prev) != 0)
        return -1;
    struct rlimit seen = prev;
    as_host_view(&seen);
    if (want->rlim_max > seen.rlim_max && want->rlim_max <= prev.rlim_max && !pp_capable(CAP_SYS_RESOURCE)) {
        errno = EPERM; /* the kernel would refuse it the program's own hard limit */
        return -1;
    }
    size_t own = pp_own_maps_bytes() + pp_threads_own_stack_bytes();
    struct rlimit up = {plus(want->rlim_cur, own), plus(want->rlim_max, own)};
    int rc = real_prlimit(0, RLIMIT_AS, &up, NULL);
    if (rc != 0 && errno == EPERM && want->rlim_max <= prev.rlim_max && want->rlim_cur <= want->rlim_max) {
        up.rlim_max = prev.rlim_max; /* may not raise its hard limit */
        up.rlim_cur = up.rlim_cur < up.rlim_max ? up.rlim_cur : up.rlim_max;
        rc = real_prlimit(0, RLIMIT_AS, &up, NULL);
    }
    if (rc != 0) { /* the program's own call, with its own result */
        up = *want;
        rc = real_prlimit(0, RLIMIT_AS, want, NULL);
        if (rc != 0)
            return rc;
    }
    atomic_store(&as_changed, 0);
    atomic_store(&as_host_cur, want->rlim_cur);
    atomic_store(&as_host_max, want->rlim_max);
    atomic_store(&as_set_cur, up.rlim_cur);
    atomic_store(&as_set_max, up.rlim_max);
    atomic_store(&as_changed, up.rlim_cur != want->rlim_cur || up.rlim_max != want->rlim_max);
    if (old)
        *old = seen;
    return 0;
}

/* Before this process's limit `resource` is set to `new`. */
static void before(pid_t pid, int resource, const struct rlimit *new)
{
    struct rlimit cur;
    if (!new || !is_self(pid))
        return;
    int saved = errno;
    if (resource == RLIMIT_NOFILE && getrlimit(RLIMIT_NOFILE, &cur) == 0 && new->rlim_cur < cur.rlim_cur)
        pp_narrow_run();
    if (resource == RLIMIT_NPROC && new->rlim_cur == 0)
        pp_no_threads_run();
    errno = saved;
}

#define NEED(fn) PP_NEED(fn, pp_limit_hooks_init)

API int setrlimit(__rlimit_resource_t resource, const struct rlimit *rl)
{
    NEED(real_setrlimit);
    before(0, resource, rl);
    if (resource == RLIMIT_AS && real_prlimit)
        return set_as(rl, NULL);
    return real_setrlimit(resource, rl);
}

API int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *rl)
{
    NEED(real_setrlimit64);
    before(0, resource, (const struct rlimit *)rl); /* one layout on 64-bit systems */
    if (resource == RLIMIT_AS && real_prlimit)
        return set_as((const struct rlimit *)rl, NULL);
    return real_setrlimit64(resource, (const struct rlimit *)rl);
}

API int getrlimit(__rlimit_resource_t resource, struct rlimit *rl)
{
    NEED(real_getrlimit);
    int rc = real_getrlimit(resource, rl);
    if (rc == 0 && resource == RLIMIT_AS)
        as_host_view(rl);
    return rc;
}

API int getrlimit64(__rlimit_resource_t resource, struct rlimit64 *rl)
{
    NEED(real_getrlimit64);
    int rc = real_getrlimit64(resource, (struct rlimit *)rl);
    if (rc == 0 && resource == RLIMIT_AS)
        as_host_view((struct rlimit *)rl);
    return rc;
}

/* prlimit and prlimit64, with `next` the next definition. */
static int prlimit_with(prlimit_fn next, pid_t pid, __rlimit_resource_t resource, const struct rlimit *set,
                        struct rlimit *old)
{
    before(pid, resource, set);
    if (resource != RLIMIT_AS || !is_self(pid))
        return next(pid, resource, set, old);
    if (set && real_prlimit)
        return set_as(set, old);
    int rc = next(pid, resource, set, old);
    if (rc == 0 && old)
        as_host_view(old);
    return rc;
}

API int prlimit(pid_t pid, __rlimit_resource_t resource, const struct rlimit *new, struct rlimit *old)
{
    NEED(real_prlimit);
    return prlimit_with(real_prlimit, pid, resource, new, old);
}

API int prlimit64(pid_t pid, __rlimit_resource_t resource, const struct rlimit64 *new, struct rlimit64 *old)
{
    NEED(real_prlimit64);
    return prlimit_with(real_prlimit64, pid, resource, (const struct rlimit *)new, (struct rlimit *)old);
}
#else
void pp_limit_hooks_init(void)
{
}
#endif
