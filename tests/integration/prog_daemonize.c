/* prog_daemonize.c: a classic daemon's start (test_lifecycle.sh).
 *
 *   prog_daemonize SECONDS STATUS_FILE
 *
 * The process started forks; the child calls setsid and forks again, and
 * that grandchild is the daemon: it sends its pid back over a pipe, and
 * the process started prints "daemon=PID" and exits at once, as daemon(3)
 * and nginx's "daemon on" do. The daemon points its standard streams at
 * /dev/null, forks two workers that burn CPU in daemon_worker_burn() for
 * SECONDS, writes "workers=A B" to STATUS_FILE, waits for them and exits.
 */
#define _GNU_SOURCE
#include "../burn.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Not static: the test looks for it by name. */
PP_BURN_FUNCTION(daemon_worker_burn)

static void run_daemon(double seconds, const char *status)
{
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2)
        close(null);
    pid_t w[2];
    for (int i = 0; i < 2; i++)
        if ((w[i] = fork()) == 0) {
            daemon_worker_burn(seconds);
            _exit(0);
        }
    FILE *f = fopen(status, "w");
    if (f) {
        fprintf(f, "workers=%d %d\n", (int)w[0], (int)w[1]);
        fclose(f);
    }
    for (int i = 0; i < 2; i++)
        waitpid(w[i], NULL, 0);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: prog_daemonize SECONDS STATUS_FILE\n");
        return 2;
    }
    int p[2];
    if (pipe(p) != 0)
        return 1;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        setsid();
        pid_t d = fork();
        if (d == 0) {
            pid_t me = getpid();
            if (write(p[1], &me, sizeof me) != sizeof me)
                _exit(1);
            close(p[1]);
            run_daemon(atof(argv[1]), argv[2]);
            exit(0);
        }
        _exit(d > 0 ? 0 : 1);
    }
    close(p[1]);
    pid_t d = 0;
    if (read(p[0], &d, sizeof d) != sizeof d)
        return 1;
    waitpid(child, NULL, 0);
    printf("daemon=%d\n", (int)d);
    return 0;
}
