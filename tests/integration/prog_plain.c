/* prog_plain.c: an ordinary program that knows nothing of libpprof, for the
 * preload test (LD_PRELOAD=libpprof.so LIBPPROF_ADDR=... prog_plain).
 *
 *   prog_plain SECONDS [CHILD_SECONDS [EXEC_STDERR]]
 *
 * Burns CPU in busy_loop_for_preload() for SECONDS of wall time. After the
 * first quarter of that (or at once when SECONDS is 0) it forks two
 * children that outlive it by CHILD_SECONDS (default 4; negative: no
 * children): one that only sleeps ("fork-child=PID") and one that execs
 * sleep(1) ("exec-child=PID"), with its stderr sent to the file EXEC_STDERR
 * when given. Prints "pid=PID" first and "done" last, then exits 0 without
 * waiting for the children.
 */
#define _GNU_SOURCE
#include "../burn.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Spends `seconds` of wall time computing; the test looks for it by name
 * in a profile taken through LD_PRELOAD. */
PP_BURN_FUNCTION(busy_loop_for_preload)

static void spawn_children(double parent_left, double child_extra, const char *exec_stderr)
{
    char secs[32];
    snprintf(secs, sizeof secs, "%.1f", parent_left + child_extra);

    fflush(stdout);
    pid_t a = fork();
    if (a == 0) {
        struct timespec ts = {.tv_sec = (time_t)(parent_left + child_extra),
                              .tv_nsec = (long)((parent_left + child_extra) * 1e9) % 1000000000L};
        while (nanosleep(&ts, &ts) != 0)
            ;
        _exit(0);
    }
    pid_t b = fork();
    if (b == 0) {
        if (exec_stderr) {
            int fd = open(exec_stderr, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0 && fd != 2) {
                dup2(fd, 2);
                close(fd);
            }
        }
        execlp("sleep", "sleep", secs, (char *)NULL);
        _exit(127);
    }
    printf("fork-child=%d\nexec-child=%d\n", (int)a, (int)b);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    double child_extra = argc > 2 ? atof(argv[2]) : 4.0;
    const char *exec_stderr = argc > 3 ? argv[3] : NULL;
    printf("pid=%d\n", (int)getpid());
    fflush(stdout);
    busy_loop_for_preload(seconds / 4);
    if (child_extra >= 0)
        spawn_children(seconds - seconds / 4, child_extra, exec_stderr);
    busy_loop_for_preload(seconds - seconds / 4);
    printf("done\n");
    fflush(stdout);
    return 0;
}
