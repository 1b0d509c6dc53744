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
 */
#define _GNU_SOURCE
#include "hooks.h"
#include "base/base.h"

#include <errno.h>
#include <sys/resource.h>
#include <unistd.h>

_Static_assert(sizeof(struct rlimit) == sizeof(struct rlimit64), "one layout");

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

typedef int (*setrlimit_fn)(__rlimit_resource_t, const struct rlimit *);
typedef int (*prlimit_fn)(pid_t, __rlimit_resource_t, const struct rlimit *, struct rlimit *);
static setrlimit_fn real_setrlimit, real_setrlimit64;
static prlimit_fn real_prlimit, real_prlimit64;

void pp_limit_hooks_init(void)
{
    real_setrlimit = (setrlimit_fn)pp_next_symbol("setrlimit", NULL);
    real_setrlimit64 = (setrlimit_fn)pp_next_symbol("setrlimit64", NULL);
    real_prlimit = (prlimit_fn)pp_next_symbol("prlimit", NULL);
    real_prlimit64 = (prlimit_fn)pp_next_symbol("prlimit64", NULL);
}

/* Before this process's limit `resource` is set to `new`. */
static void before(pid_t pid, int resource, const struct rlimit *new)
{
    struct rlimit cur;
    if (!new || (pid != 0 && pid != getpid()))
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
    return real_setrlimit(resource, rl);
}

API int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *rl)
{
    NEED(real_setrlimit64);
    before(0, resource, (const struct rlimit *)rl); /* one layout on 64-bit systems */
    return real_setrlimit64(resource, (const struct rlimit *)rl);
}

API int prlimit(pid_t pid, __rlimit_resource_t resource, const struct rlimit *new, struct rlimit *old)
{
    NEED(real_prlimit);
    before(pid, resource, new);
    return real_prlimit(pid, resource, new, old);
}

API int prlimit64(pid_t pid, __rlimit_resource_t resource, const struct rlimit64 *new, struct rlimit64 *old)
{
    NEED(real_prlimit64);
    before(pid, resource, (const struct rlimit *)new);
    return real_prlimit64(pid, resource, (const struct rlimit *)new, (struct rlimit *)old);
}
#else
void pp_limit_hooks_init(void)
{
}
#endif
