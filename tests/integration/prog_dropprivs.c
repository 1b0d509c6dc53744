/* prog_dropprivs.c: a daemon's confinement after start: chroot, a change
 * of user, not dumpable (test_lifecycle.sh). Run as root.
 *
 *   prog_dropprivs MODE SECONDS [ROOT]
 *
 * MODE holds letters: s (sleep 1 s first, while profiles start), c (chroot
 * into ROOT, an empty directory, then chdir "/"), u (setgroups, setgid and
 * setuid to 65534), k (the same in setpriv's order, keeping capabilities:
 * PR_SET_KEEPCAPS, setresuid, capset to raise CAP_SETGID again, setresgid,
 * setgroups, then capset to drop every capability), d (prctl
 * PR_SET_DUMPABLE 0). After them it prints "dropped uid=U dumpable=D",
 * forks a child, and both burn CPU in dropped_burn() for SECONDS; the
 * parent prints "child=PID" and waits for it.
 */
#define _GNU_SOURCE
#include "../burn.h"
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int capset(cap_user_header_t, const cap_user_data_t); /* glibc's, undeclared */
int capget(cap_user_header_t, cap_user_data_t);

/* Drops to 65534 as setpriv --reuid --regid --clear-groups does. */
static int drop_keeping_caps(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (prctl(PR_SET_KEEPCAPS, 1) != 0 || setresuid(65534, 65534, 65534) != 0 || capget(&h, d) != 0)
        return -1;
    d[0].effective = d[0].permitted & (1u << CAP_SETGID);
    if (capset(&h, d) != 0 || setresgid(65534, 65534, 65534) != 0 || setgroups(0, NULL) != 0)
        return -1;
    memset(d, 0, sizeof d);
    return capset(&h, d);
}

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
    if (strchr(argv[1], 's'))
        sleep(1);
    if (strchr(argv[1], 'c') && (chroot(argv[3]) != 0 || chdir("/") != 0)) {
        perror("chroot");
        return 1;
    }
    if (strchr(argv[1], 'u') && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
        perror("setuid");
        return 1;
    }
    if (strchr(argv[1], 'k') && drop_keeping_caps() != 0) {
        perror("keeping capabilities");
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
