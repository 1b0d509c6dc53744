/* creds_hooks.c: capset, prctl and the setuid, setgid and setgroups
 * family, interposed, so that a program that changes its credentials
 * keeping some capabilities is not aborted by the C library.
 *
 * The C library runs setuid, setgid and setgroups in every thread and
 * aborts when the results differ. Capabilities and the keep-capabilities
 * bits are per thread: after the program's thread changed them, and
 * before each of its setuid, setgid and setgroups calls, the profiler's
 * threads take the calling thread's state (threads/creds.c). When one
 * cannot, profiling stops before the call (pp_sandbox_enter), so the
 * program's call never meets a thread of the profiler's that differs.
 * prctl(PR_SET_SECCOMP) stops profiling before the process enters its
 * sandbox. prctl's other options pass through untouched. With debug files
 * fetched from debuginfod, the symbolizer keeps its files open before
 * each of these calls, as before a chroot: a cache that only the old
 * user may read stays read (symbolize/sym_keep.c).
 */
#define _GNU_SOURCE
#include "threads/threads.h"
#include "symbolize/symbolize.h"
#include "base/base.h"
#include "hooks.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

typedef int (*capset_fn)(cap_user_header_t, const cap_user_data_t);
typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long, unsigned long);
static capset_fn real_capset;
static prctl_fn real_prctl;

API int capset(cap_user_header_t hdr, const cap_user_data_t data); /* libcap's; glibc declares none */
API int capset(cap_user_header_t hdr, const cap_user_data_t data)
{
    if (!real_capset)
        real_capset = (capset_fn)pp_next_symbol("capset", NULL);
    int rc = real_capset ? real_capset(hdr, data) : (int)syscall(SYS_capset, hdr, data);
    if (rc == 0 && hdr && data && (hdr->pid == 0 || hdr->pid == (int)syscall(SYS_gettid))) {
        int saved = errno;
        pp_threads_creds_match();
        errno = saved;
    }
    return rc;
}

API int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    if (!real_prctl)
        real_prctl = (prctl_fn)pp_next_symbol("prctl", NULL);
    /* a filter with no program is a probe of the kernel (Chromium's, older
     * libseccomp's): it fails and passes */
    if (option == PR_SET_SECCOMP && (a2 == SECCOMP_MODE_STRICT || (a2 == SECCOMP_MODE_FILTER && a3)))
        pp_sandbox_enter(a2 == SECCOMP_MODE_STRICT ? "entered seccomp strict mode" : "entered a seccomp filter");
    int rc = real_prctl ? real_prctl(option, a2, a3, a4, a5) : (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    if (rc == 0 && (option == PR_SET_KEEPCAPS || option == PR_SET_SECUREBITS)) {
        int saved = errno;
        pp_threads_creds_match();
        errno = saved;
    }
    return rc;
}

/* Before a call the C library makes in every thread: the profiler's
 * threads take the caller's capabilities, or profiling stops. */
static void before_setxid(const char *call)
{
    int saved = errno;
    if (pp_sym_fetch_mode() == PPROF_DEBUGINFOD_ON)
        pp_sym_keep_files();
    if (!pp_sandboxed() && pp_threads_creds_match() > 0) {
        pp_say("libpprof: the profiler's threads could not take the program's capabilities before its %s; "
               "profiling stops so that the C library does not abort the program\n",
               call);
        pp_sandbox_enter("changed its credentials in a way the profiler's threads could not follow");
    }
    errno = saved;
}

#define SETXID(name, params, args)                                   \
    API int name params                                              \
    {                                                                \
        static int(*real) params;                                    \
        if (!real)                                                   \
            real = (int(*) params)pp_next_symbol(#name, NULL);       \
        if (!real) {                                                 \
            errno = ENOSYS;                                          \
            return -1;                                               \
        }                                                            \
        before_setxid(#name);                                        \
        return real args;                                            \
    }

SETXID(setuid, (uid_t u), (u))
SETXID(setgid, (gid_t g), (g))
SETXID(seteuid, (uid_t u), (u))
SETXID(setegid, (gid_t g), (g))
SETXID(setreuid, (uid_t r, uid_t e), (r, e))
SETXID(setregid, (gid_t r, gid_t e), (r, e))
SETXID(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
SETXID(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
SETXID(setgroups, (size_t n, const gid_t *list), (n, list))
SETXID(initgroups, (const char *user, gid_t g), (user, g)) /* its setgroups is the C library's own */
#endif
