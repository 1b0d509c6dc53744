/* exec_hooks.c: the exec family, interposed, so that a process of a tree
 * that execs a program libpprof will not be loaded into says so first.
 *
 * The loader runs a program in secure-execution mode (AT_SECURE) when the
 * exec leaves its effective user or group other than its real one (a
 * set-user-ID or set-group-ID file, or a process whose ids already differ,
 * as squid's master running as root for real user proxy), or gives it
 * file capabilities. It then ignores LD_PRELOAD's entries with a slash,
 * and loads the others only from its trusted directories and only when
 * the file has the set-user-ID bit. A program started with libpprof taken
 * out of LD_PRELOAD (postfix's master cleans its children's environment)
 * runs without it too. Such a program still runs; only its profile is
 * missing. So before the exec, the process tells its tree's hub which
 * program it runs and why it will not be profiled (pp_exec_note: the
 * hub's index names it, ?pid= answers 404 with the reason), and takes it
 * back when the exec fails. The profiling signal is ignored for the exec
 * (pp_signal_exec_begin): one pending would end the new program. The
 * calls themselves are the C library's: execl, execle and execlp build
 * the argument array and go through execve, execvpe.
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "signals/signals.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

extern char **environ;
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
static execve_fn real_execve, real_execvpe;
static fexecve_fn real_fexecve;

/* The LD_PRELOAD entry in env that loads this library: 0 none, 1 one with
 * a slash, 2 one without (a name the loader searches for). */
static int preload_entry(char *const *env, const char *own)
{
    const char *base = strrchr(own, '/') ? strrchr(own, '/') + 1 : own;
    for (; env && *env; env++) {
        if (strncmp(*env, "LD_PRELOAD=", 11) != 0)
            continue;
        for (const char *p = *env + 11; *p;) {
            size_t n = strcspn(p, ": ");
            if (n > 0) {
                const char *slash = memrchr(p, '/', n);
                const char *name = slash ? slash + 1 : p;
                size_t nl = (size_t)(p + n - name);
                if ((n == strlen(own) && strncmp(p, own, n) == 0) || (nl == strlen(base) && strncmp(name, base, nl) == 0))
                    return slash ? 1 : 2;
            }
            p += n;
            p += strspn(p, ": ");
        }
    }
    return 0;
}

/* Why the program at path (or open as fd) would run in secure-execution
 * mode, in `out`; 0 when it would not. */
static int secure_exec(const char *path, int fd, char *out, size_t size)
{
    struct stat st;
    struct statvfs vf;
    if ((fd >= 0 ? fstat(fd, &st) : stat(path, &st)) != 0)
        return 0; /* the exec fails */
    uid_t ru, eu, su;
    gid_t rg, eg, sg;
    if (getresuid(&ru, &eu, &su) != 0 || getresgid(&rg, &eg, &sg) != 0)
        return 0;
    int raise = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 &&
                !((fd >= 0 ? fstatvfs(fd, &vf) : statvfs(path, &vf)) == 0 && (vf.f_flag & ST_NOSUID));
    if (raise && (st.st_mode & S_ISUID))
        eu = st.st_uid;
    if (raise && (st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
        eg = st.st_gid;
    if (eu != ru) {
        snprintf(out, size, "effective user %u, real user %u", (unsigned)eu, (unsigned)ru);
        return 1;
    }
    if (eg != rg) {
        snprintf(out, size, "effective group %u, real group %u", (unsigned)eg, (unsigned)rg);
        return 1;
    }
    if (raise && ru != 0 &&
        (fd >= 0 ? fgetxattr(fd, "security.capability", NULL, 0) : getxattr(path, "security.capability", NULL, 0)) >
            0) {
        snprintf(out, size, "the file has capabilities");
        return 1;
    }
    return 0;
}

/* The program and its arguments, as far as they fit. */
static void command_line(char *out, size_t size, const char *path, char *const argv[])
{
    int n = snprintf(out, size, "%s", path);
    /* execl's ARGV_FROM_VA fills argv up to the NULL it counted, which the
     * analyzer cannot follow across two va_start passes. */
    /* NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Branch) */
    for (int i = 1; argv && argv[i] && n > 0 && (size_t)n < size; i++)
        n += snprintf(out + n, size - (size_t)n, " %s", argv[i]);
    if (n > 0 && (size_t)n >= size && size > 4)
        memcpy(out + size - 4, "...", 4);
}

/* Before an exec of path (or fd) with argv and env: tells the hub that
 * this process execs, and why when the program will run without
 * libpprof. 1 when told. */
static int before_exec(const char *path, int fd, char *const argv[], char *const env[])
{
    Dl_info info;
    if (!dladdr((void *)before_exec, &info) || !info.dli_fname)
        return 0;
    int now = preload_entry(environ, info.dli_fname);
    if (!now) {
        pp_exec_note(""); /* linked, or in /etc/ld.so.preload: loaded again as it was */
        return 1;
    }
    int then = preload_entry(env, info.dli_fname);
    char cmd[160], ids[64], why[448];
    command_line(cmd, sizeof cmd, path, argv);
    if (!then) {
        snprintf(why, sizeof why, "exec'd %s with libpprof taken out of LD_PRELOAD", cmd);
    } else if (secure_exec(path, fd, ids, sizeof ids)) {
        struct stat st;
        if (then == 2 && stat(info.dli_fname, &st) == 0 && (st.st_mode & S_ISUID))
            return 0; /* a set-user-ID copy found by name: the loader takes it */
        snprintf(why, sizeof why,
                 "exec'd %s in secure-execution mode (%s), where the loader ignores LD_PRELOAD's %s "
                 "(docs/daemons.md: secure-execution mode)",
                 cmd, ids, then == 1 ? "paths" : "libraries without the set-user-ID bit");
    } else {
        pp_exec_note(""); /* it comes back under the same pid, profiled */
        return 1;
    }
    pp_exec_note(why);
    return 1;
}

static int after_failed_exec(int told)
{
    int saved = errno;
    pp_signal_exec_failed();
    if (told)
        pp_exec_note(NULL);
    errno = saved;
    return -1;
}

API int execve(const char *path, char *const argv[], char *const envp[])
{
    if (!real_execve)
        real_execve = (execve_fn)pp_next_symbol("execve", NULL);
    int told = before_exec(path, -1, argv, envp);
    pp_signal_exec_begin();
    real_execve(path, argv, envp);
    return after_failed_exec(told);
}

API int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

/* The path execvpe will run for file: file itself when it has a slash,
 * else the first executable one in PATH. */
static const char *search(const char *file, char *buf, size_t size)
{
    if (strchr(file, '/'))
        return file;
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    for (const char *p = path;; p++) {
        size_t n = strcspn(p, ":");
        if (snprintf(buf, size, "%.*s%s%s", (int)n, p, n ? "/" : "", file) < (int)size && access(buf, X_OK) == 0)
            return buf;
        p += n;
        if (!*p)
            return file;
    }
}

API int execvpe(const char *file, char *const argv[], char *const envp[])
{
    if (!real_execvpe)
        real_execvpe = (execve_fn)pp_next_symbol("execvpe", NULL);
    char buf[PATH_MAX];
    int told = file[0] ? before_exec(search(file, buf, sizeof buf), -1, argv, envp) : 0;
    pp_signal_exec_begin();
    real_execvpe(file, argv, envp);
    return after_failed_exec(told);
}

API int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

API int fexecve(int fd, char *const argv[], char *const envp[])
{
    if (!real_fexecve)
        real_fexecve = (fexecve_fn)pp_next_symbol("fexecve", NULL);
    char path[32];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int told = before_exec(argv[0] ? argv[0] : path, fd, argv, envp);
    pp_signal_exec_begin();
    real_fexecve(fd, argv, envp);
    return after_failed_exec(told);
}

/* execl, execle and execlp: the variadic arguments (up to the NULL) in
 * an array on the stack, as the C library's own build it; execle's
 * environment follows the NULL. */
#define ARGV_FROM_VA(arg0, ap, argv)      \
    size_t n_ = 1;                        \
    va_start(ap, arg0);                   \
    while (va_arg(ap, const char *))      \
        n_++;                             \
    va_end(ap);                           \
    char *argv[n_ + 1];                   \
    argv[0] = (char *)arg0;               \
    va_start(ap, arg0);                   \
    for (size_t i_ = 1; i_ <= n_; i_++)   \
        argv[i_] = va_arg(ap, char *)

API int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_VA(arg, ap, argv);
    va_end(ap);
    return execve(path, argv, environ);
}

API int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_VA(arg, ap, argv);
    char **env = va_arg(ap, char **);
    va_end(ap);
    return execve(path, argv, env);
}

API int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_VA(arg, ap, argv);
    va_end(ap);
    return execvpe(file, argv, environ);
}
#endif
