/* creds_hooks.c: capset and prctl, interposed, so that a program that
 * drops root keeping some capabilities is not aborted by the C library.
 *
 * The C library runs setuid, setgid and setgroups in every thread and
 * aborts when the results differ. Capabilities and the keep-capabilities
 * bits are per thread: after the program's own thread changed them, the
 * profiler's threads make the same change (threads/creds.c) before the
 * call returns. prctl(PR_SET_SECCOMP) stops profiling before the process
 * enters its sandbox (pp_sandbox_enter, lifecycle.c). prctl's other options
 * pass through untouched.
 */
#define _GNU_SOURCE
#include "threads/threads.h"
#include "base/base.h"
#include "thread_hooks.h"

#include <errno.h>
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

API int capset(cap_user_header_t hdr, const cap_user_data_t data)
{
    if (!real_capset)
        real_capset = (capset_fn)pp_next_symbol("capset", NULL);
    int rc = real_capset ? real_capset(hdr, data) : (int)syscall(SYS_capset, hdr, data);
    if (rc == 0 && hdr && data && (hdr->pid == 0 || hdr->pid == (int)syscall(SYS_gettid))) {
        int saved = errno;
        pp_threads_mirror_capset(hdr, data);
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
    if (option == PR_SET_SECCOMP && (a2 == SECCOMP_MODE_STRICT || a2 == SECCOMP_MODE_FILTER))
        pp_sandbox_enter(a2 == SECCOMP_MODE_STRICT ? "seccomp strict mode" : "a seccomp filter");
    int rc = real_prctl ? real_prctl(option, a2, a3, a4, a5) : (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    if (rc == 0 && (option == PR_SET_KEEPCAPS || option == PR_SET_SECUREBITS)) {
        int saved = errno;
        pp_threads_mirror_prctl(option, a2);
        errno = saved;
    }
    return rc;
}
#endif
