/* prog_closeall.c: a program that closes every inherited descriptor at
 * start, as daemons do, then keeps files of its own and forks; it checks
 * that nothing else wrote to or closed them (test_lifecycle.sh).
 *
 *   prog_closeall MODE DIR
 *
 * MODE is how it closes every descriptor from 3 up: close_range,
 * closefrom or loop (close() on each number below the descriptor limit).
 * Then it opens DIR/f0..f7 and a pipe, writes known lines to the files
 * and prints "ready pid=PID". It sleeps until DIR/go exists (60 s at
 * most), writes more, forks a child that checks every descriptor it
 * inherited (open, the same file) and writes its own lines, waits for it,
 * checks its own descriptors, closes them and reads every file back.
 * Once told to go it opens one more file and prints "next_fd=N
 * expected=M": the number it got, and the one right after its own (what
 * it gets without libpprof, which keeps its descriptors above them).
 * Prints "child=ok", "parent=ok", "files=ok" (or what went wrong, with the
 * count of stray bytes) and "done", then returns from main.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NFILES 8

static int fds[NFILES], pipe_fds[2];
static struct stat ids[NFILES + 2];
static char expected[NFILES][4096];

static int *fd_at(int i)
{
    return i < NFILES ? &fds[i] : &pipe_fds[i - NFILES];
}

/* Whether every descriptor of ours is open and still the same file; says
 * which is not. */
static int check_fds(const char *who)
{
    int ok = 1;
    for (int i = 0; i < NFILES + 2; i++) {
        struct stat st;
        int fd = *fd_at(i);
        if (fstat(fd, &st) != 0) {
            printf("%s: descriptor %d (ours #%d) is closed: %s\n", who, fd, i, strerror(errno));
            ok = 0;
        } else if (st.st_dev != ids[i].st_dev || st.st_ino != ids[i].st_ino) {
            printf("%s: descriptor %d (ours #%d) is another file now\n", who, fd, i);
            ok = 0;
        }
    }
    char c;
    ssize_t n = read(pipe_fds[0], &c, 1);
    if (n >= 0) {
        printf("%s: %zd stray byte(s) in our pipe\n", who, n);
        ok = 0;
    }
    return ok;
}

/* Writes a line tagged `tag` to each file (unless only_expect) and adds
 * it to what the file must hold. */
static void write_lines(const char *tag, int only_expect)
{
    for (int i = 0; i < NFILES; i++) {
        char line[128];
        int n = snprintf(line, sizeof line, "%s line of file %d\n", tag, i);
        if (!only_expect && write(fds[i], line, (size_t)n) != n)
            printf("write to file %d failed: %s\n", i, strerror(errno));
        strcat(expected[i], line);
    }
}

static void close_all(const char *mode)
{
    if (!strcmp(mode, "close_range")) {
        if (close_range(3, ~0U, 0) != 0)
            printf("close_range: %s\n", strerror(errno));
    } else if (!strcmp(mode, "closefrom")) {
        closefrom(3);
    } else {
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        for (int fd = 3; fd < (int)rl.rlim_cur; fd++)
            close(fd);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: prog_closeall close_range|closefrom|loop DIR\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    close_all(argv[1]);
    for (int i = 0; i < NFILES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/f%d", argv[2], i);
        fds[i] = open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644);
        if (fds[i] < 0) {
            printf("open %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    if (pipe2(pipe_fds, O_NONBLOCK) != 0)
        return 1;
    for (int i = 0; i < NFILES + 2; i++)
        fstat(*fd_at(i), &ids[i]);
    write_lines("first", 0);
    printf("ready pid=%d fds=%d..%d\n", (int)getpid(), fds[0], pipe_fds[1]);
    char go[4096];
    snprintf(go, sizeof go, "%s/go", argv[2]);
    for (int t = 0; t < 6000 && access(go, F_OK) != 0; t++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    int next = open("/dev/null", O_RDONLY | O_CLOEXEC); /* the lowest free number: right after its own */
    printf("next_fd=%d expected=%d\n", next, pipe_fds[1] + 1);
    close(next);
    write_lines("second", 0);
    pid_t child = fork();
    if (child == 0) {
        int ok = check_fds("child");
        write_lines("child", 0);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    write_lines("child", 1);
    printf(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "child=ok\n" : "child=bad\n");
    int ok = check_fds("parent");
    printf(ok ? "parent=ok\n" : "parent=bad\n");
    for (int i = 0; i < NFILES + 2; i++)
        close(*fd_at(i));
    long stray = 0;
    for (int i = 0; i < NFILES; i++) {
        char path[4096], got[8192];
        snprintf(path, sizeof path, "%s/f%d", argv[2], i);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
        if (f)
            fclose(f);
        got[n] = 0;
        size_t want = strlen(expected[i]);
        if (n != want || memcmp(got, expected[i], want) != 0) {
            stray += labs((long)n - (long)want) + (n == want);
            printf("file %d: %zu bytes, %zu expected\n", i, n, want);
        }
    }
    if (stray)
        printf("files=bad stray=%ld\n", stray);
    else
        printf("files=ok\n");
    printf("done\n");
    return 0;
}
