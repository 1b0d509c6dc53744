/* prog_fdchurn.c: a program that closes every descriptor from 3 up and
 * opens its own files again, over and over, as sshd's re-exec'd child
 * does once at its start (closefrom, then its log, its pipes, its
 * socket) and as servers do per connection; it checks after each round
 * that every file it holds is still open, still the same file, and got
 * no bytes but its own (test_fd_churn.sh).
 *
 *   prog_fdchurn DIR SECONDS
 *
 * Prints "ready pid=PID", then for SECONDS: closefrom(3) (or close_range
 * on odd rounds), opens DIR/log and DIR/data, writes a numbered line to
 * each, opens a pipe, sleeps 100 us, and checks every descriptor (fstat:
 * open, the same device and inode) and the pipe's bytes. At the end it
 * reads both files back and compares them with what it wrote. Prints
 * "rounds=N bad=B" and the first few problems, then "done". Exit status
 * 0 when bad is 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


static long bad;

static void problem(long round, const char *what)
{
    if (bad++ < 5)
        printf("round %ld: %s\n", round, what);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The bytes of path, or NULL; *len set. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *p = malloc(cap);
    size_t k;
    while (p && (k = fread(p + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap)
            p = realloc(p, cap *= 2);
    }
    fclose(f);
    *len = n;
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: prog_fdchurn DIR SECONDS\n");
        return 2;
    }
    char log_path[4096], data_path[4096];
    snprintf(log_path, sizeof log_path, "%s/log", argv[1]);
    snprintf(data_path, sizeof data_path, "%s/data", argv[1]);
    double end = now() + atof(argv[2]);
    printf("ready pid=%d\n", (int)getpid());
    fflush(stdout);
    long round = 0;
    size_t log_bytes = 0, data_bytes = 0;
    for (; now() < end; round++) {
        if (round % 2)
            close_range(3, ~0U, 0);
        else
            closefrom(3);
        int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int data = open(data_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int p[2];
        if (log < 0 || data < 0 || pipe(p) != 0) {
            problem(round, strerror(errno));
            continue;
        }
        struct stat want[4];
        int fds[4] = {log, data, p[0], p[1]};
        for (int i = 0; i < 4; i++)
            fstat(fds[i], &want[i]);
        char line[64];
        int n = snprintf(line, sizeof line, "log %ld\n", round);
        if (write(log, line, (size_t)n) != n)
            problem(round, "a write to the log failed");
        log_bytes += (size_t)n;
        n = snprintf(line, sizeof line, "data %ld\n", round);
        if (write(data, line, (size_t)n) != n)
            problem(round, "a write to the data file failed");
        data_bytes += (size_t)n;
        if (write(p[1], "x", 1) != 1)
            problem(round, "a write to the pipe failed");
        nanosleep(&(struct timespec){0, 100000}, NULL);
        for (int i = 0; i < 4; i++) {
            struct stat st;
            if (fstat(fds[i], &st) != 0)
                problem(round, "a descriptor of the program's was closed");
            else if (st.st_dev != want[i].st_dev || st.st_ino != want[i].st_ino)
                problem(round, "a descriptor of the program's is another file now");
        }
        char c[8];
        fcntl(p[0], F_SETFL, O_NONBLOCK);
        ssize_t got = read(p[0], c, sizeof c);
        if (got != 1 || c[0] != 'x')
            problem(round, "the pipe did not hold exactly the program's byte");
    }
    const char *paths[2] = {log_path, data_path};
    size_t wrote[2] = {log_bytes, data_bytes};
    for (int i = 0; i < 2; i++) {
        size_t len = 0;
        char *text = slurp(paths[i], &len);
        size_t nul = text ? strlen(text) : 0;
        if (!text || len != wrote[i] || nul != len) {
            char what[160];
            snprintf(what, sizeof what, "%s holds %zu bytes (%zu before a NUL), %zu written", paths[i], len, nul,
                     wrote[i]);
            problem(round, what);
        }
        free(text);
    }
    printf("rounds=%ld bad=%ld\n", round, bad);
    printf("done\n");
    return bad != 0;
}
