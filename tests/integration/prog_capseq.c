/* prog_capseq.c: squid's order of credential changes (test_squid.sh). Run
 * as root, under LD_PRELOAD.
 *
 *   prog_capseq UID ROUNDS
 *
 * Each round: "leave": setgroups, setgid, setresuid(UID, UID, 0), then a
 * capset keeping every permitted capability but CAP_NET_BIND_SERVICE out
 * of the effective set; "enter": setresuid(-1, 0, -1), which gives the
 * thread its permitted set as effective again. Between rounds the program
 * forks a child (the tree's agent thread starts in it after the changes)
 * that makes two rounds itself and exits 0, and it reads a line from
 * stdin after printing "ready N" (the test asks for profiles and dumps
 * then, which start the profiler's threads). A glibc that finds a thread
 * whose setgroups result differs aborts the process. It ends with "done"
 * and exit 0, or a line saying which call failed.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int capset(cap_user_header_t, const cap_user_data_t); /* glibc's, undeclared */
int capget(cap_user_header_t, cap_user_data_t);

static uid_t uid;

static void fail(const char *what)
{
    printf("failed: %s\n", what);
    fflush(stdout);
    _exit(1);
}

static void leave(void)
{
    gid_t g = (gid_t)uid;
    if (setgroups(1, &g) != 0)
        fail("setgroups");
    if (setgid(g) != 0)
        fail("setgid");
    if (setresuid(uid, uid, 0) != 0)
        fail("setresuid(uid, uid, 0)");
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (capget(&h, d) != 0)
        fail("capget");
    d[0].effective = 1u << CAP_NET_BIND_SERVICE;
    d[1].effective = 0;
    d[0].permitted |= 1u << CAP_NET_BIND_SERVICE;
    if (capset(&h, d) != 0)
        fail("capset");
}

static void enter(void)
{
    if (setresuid((uid_t)-1, 0, (uid_t)-1) != 0)
        fail("setresuid(-1, 0, -1)");
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    uid = (uid_t)atoi(argv[1]);
    int rounds = atoi(argv[2]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int r = 0; r < rounds; r++) {
        leave();
        enter();
        pid_t pid = fork();
        if (pid < 0)
            fail("fork");
        if (pid == 0) {
            usleep(200000); /* the agent thread has started */
            leave();
            enter();
            leave();
            enter();
            _exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("failed: child %d ended with status %#x\n", (int)pid, st);
            return 1;
        }
        printf("ready %d\n", r);
        char line[64];
        if (!fgets(line, sizeof line, stdin))
            break;
    }
    leave();
    puts("done");
    return 0;
}
