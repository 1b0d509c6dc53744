/* test_fds.c: the profiler's descriptors, known by identity (base/fds.h)
 * and passed over by the program's close family (interpose/fd_hooks.c).
 * test-labels: plain-only quick
 *
 * - pp_fd_own moves a descriptor into the top quarter of the first 1,024
 *   numbers and registers it;
 * - the program's close of it answers EBADF and leaves it open; its
 *   close_range and closefrom close everything around it;
 * - a number the program took back behind the hooks' back (a raw close
 *   and a raw dup2) is not closed by pp_fd_close: the program keeps its
 *   file;
 * - a dup2 onto a registered number runs the taken hook first, then does
 *   what the program asked, and the number is the program's;
 * - a forked child closes the registered descriptors it inherited;
 * - pp_fd_fopen and pp_fd_opendir give registered streams that the
 *   program's closefrom passes over and pp_fd_fclose and pp_fd_closedir
 *   close and forget; a stream whose number the program took is left to
 *   the program;
 * - with the hooks built in (not under sanitizers), an open, socket or
 *   pipe made by the profiler's work is registered and moved up, the
 *   program's own is not; the profiler's close forgets it; a forked
 *   child keeps a file the profiler opened and closes its socket.
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int taken_fd = -1;

static void on_taken(int fd)
{
    taken_fd = fd;
}

static int is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

static int same(int a, int b)
{
    struct stat x, y;
    return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int main(void)
{
    int p[2];
    CHECK(pipe(p) == 0);
    int ours = pp_fd_own(p[0]);
    CHECKF(ours >= 768 && ours < 1024, "moved to %d", ours);
    CHECK(!is_open(p[0])); /* the old number is free again */
    CHECK(pp_fd_owned(ours) && pp_fd_still_own(ours));

    /* The program's close passes over it. */
    errno = 0;
    CHECK(close(ours) == -1 && errno == EBADF);
    CHECK(is_open(ours));

    /* close_range and closefrom close around it. */
    int a = open("/dev/null", O_RDONLY), b = fcntl(a, F_DUPFD, ours + 1);
    CHECK(a >= 0 && b > ours);
    CHECK(close_range(3, ~0U, 0) == 0);
    CHECK(is_open(ours) && !is_open(a) && !is_open(b) && !is_open(p[1]));
    a = open("/dev/null", O_RDONLY);
    b = fcntl(a, F_DUPFD, ours + 1);
    closefrom(3);
    CHECK(is_open(ours) && !is_open(a) && !is_open(b));

    /* The program closes it by a raw system call and puts its own file
     * there: pp_fd_close leaves the program's file open. */
    int f = open("/dev/zero", O_RDONLY);
    CHECK(syscall(SYS_close, ours) == 0);
#ifdef SYS_dup2
    CHECK(syscall(SYS_dup2, f, ours) == ours);
#else /* arm64 */
    CHECK(syscall(SYS_dup3, f, ours, 0) == ours);
#endif
    CHECK(!pp_fd_still_own(ours));
    CHECK(pp_fd_close(ours) == 0);
    CHECKF(is_open(ours) && same(ours, f), "the program's file at %d was closed", ours);
    CHECK(!pp_fd_owned(ours));
    close(ours);

    /* dup2 onto a registered number: the hook first, then the program's call. */
    pp_fd_on_taken(on_taken);
    CHECK(pipe(p) == 0);
    ours = pp_fd_own(p[0]);
    CHECK(dup2(f, ours) == ours);
    CHECK(taken_fd == ours);
    CHECK(!pp_fd_owned(ours) && same(ours, f));
    CHECK(close(ours) == 0); /* the program's now */
    close(p[1]);

    /* A forked child closes what it inherited; the parent keeps it. */
    CHECK(pipe(p) == 0);
    ours = pp_fd_own(p[0]);
    int n = pp_fd_count();
    CHECK(n >= 1);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
        _exit(is_open(ours) || pp_fd_owned(ours) || pp_fd_count() != 0 ? 1 : 0);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(is_open(ours) && pp_fd_owned(ours));
    CHECK(pp_fd_close(ours) == 0 && !is_open(ours));
    close(p[1]);

    /* Streams of the profiler's: registered, passed over, closed and forgotten. */
    FILE *st1 = pp_fd_fopen("/proc/self/status");
    DIR *d = pp_fd_opendir("/proc/self/task");
    CHECK(st1 && d);
    int sfd = fileno(st1), dfd = dirfd(d);
    CHECKF(sfd >= 768 && dfd >= 768 && pp_fd_owned(sfd) && pp_fd_owned(dfd), "at %d and %d", sfd, dfd);
    closefrom(3);
    CHECK(is_open(sfd) && is_open(dfd) && is_open(f) == 0);
    char line[256];
    CHECK(fgets(line, sizeof line, st1) != NULL && readdir(d) != NULL);
    CHECK(pp_fd_fclose(st1) == 0 && pp_fd_closedir(d) == 0);
    CHECK(!is_open(sfd) && !is_open(dfd) && !pp_fd_owned(sfd) && !pp_fd_owned(dfd));
    /* The program takes a stream's number: the stream's close leaves its file. */
    f = open("/dev/zero", O_RDONLY);
    st1 = pp_fd_fopen("/proc/self/status");
    CHECK(st1 != NULL);
    sfd = fileno(st1);
    CHECK(dup2(f, sfd) == sfd && taken_fd == sfd);
    CHECK(pp_fd_fclose(st1) == 0);
    CHECKF(is_open(sfd) && same(sfd, f), "the program's file at %d was closed", sfd);
    close(sfd);
#ifndef PPROF_NO_HOOKS
    /* The profiler's work registers what it makes; the program's calls do not. */
    int mine = open("/dev/null", O_RDONLY);
    CHECK(mine >= 0 && mine < 768 && !pp_fd_owned(mine));
    close(mine);
    pp_own_heap_enter();
    int own_file = open("/dev/null", O_RDONLY);
    int own_sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(pipe(p) == 0);
    pp_own_heap_leave();
    CHECKF(own_file >= 768 && pp_fd_owned(own_file), "the profiler's open gave %d", own_file);
    CHECKF(own_sock >= 768 && pp_fd_owned(own_sock), "the profiler's socket is %d", own_sock);
    CHECK(p[0] >= 768 && p[1] >= 768 && pp_fd_owned(p[0]) && pp_fd_owned(p[1]));
    CHECK(close(own_file) == -1 && errno == EBADF && is_open(own_file)); /* not the program's */
    fflush(stderr);
    pid = fork();
    if (pid == 0)
        _exit(!is_open(own_file) || !pp_fd_owned(own_file) || is_open(own_sock) ? 1 : 0);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    pp_own_heap_enter();
    CHECK(close(own_file) == 0 && close(own_sock) == 0 && close(p[0]) == 0 && close(p[1]) == 0);
    pp_own_heap_leave();
    CHECK(!pp_fd_owned(own_file) && !pp_fd_owned(own_sock) && !is_open(own_file));
#endif
    close(f);
    return check_summary("test_fds");
}
