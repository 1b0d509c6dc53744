/* prog_dropprivs.c: a daemon's confinement after start: chroot, a change
 * of user, not dumpable (test_lifecycle.sh). Run as root.
 *
 *   prog_dropprivs MODE SECONDS [ROOT]
 *
 * MODE holds letters: c (chroot into ROOT, an empty directory, then chdir
 * "/"), u (setgroups, setgid and setuid to 65534), d (prctl
 * PR_SET_DUMPABLE 0). After them it prints "dropped uid=U dumpable=D",
 * forks a child, and both burn CPU in dropped_burn() for SECONDS; the
 * parent prints "child=PID" and waits for it.
 */
#define _GNU_SOURCE
#include "../burn.h"
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Not static: the test looks for it by name. */
PP_BURN_FUNCTION(dropped_burn)

int main(int argc, char **argv)
{
    if (argc < 3 || (strchr(argv[1], 'c') && argc < 4)) {
        fprintf(stderr, "usage: prog_dropprivs MODE SECONDS [ROOT]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    double seconds = atof(argv[2]);
    dropped_burn(0.1);
    if (strchr(argv[1], 'c') && (chroot(argv[3]) != 0 || chdir("/") != 0)) {
        perror("chroot");
        return 1;
    }
    if (strchr(argv[1], 'u') && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
        perror("setuid");
        return 1;
    }
    if (strchr(argv[1], 'd'))
        prctl(PR_SET_DUMPABLE, 0);
    printf("dropped uid=%d dumpable=%d\n", (int)getuid(), prctl(PR_GET_DUMPABLE));
    pid_t child = fork(); /* both burn; the parent says who the child is */
    if (child > 0)
        printf("child=%d\n", (int)child);
    dropped_burn(seconds);
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    return 0;
}
