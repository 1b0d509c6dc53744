/* prog_mlock.c: a program that locks its memory, as daemons that must
 * never page do (corosync, multipathd, iscsid; chronyd -m, memcached -k,
 * openvpn --mlock), and reads back a limit it set (test_mlock).
 *
 * Usage: prog_mlock SECONDS
 *  1. sets RLIMIT_AS to 4 GiB and prints "as SET READ", the limit it set
 *     and the one getrlimit reads back;
 *  2. prints "before VMSIZE_KIB RSS_KIB", calls
 *     mlockall(MCL_CURRENT | MCL_FUTURE) and prints
 *     "mlockall RC ERRNO LOCKED_KIB RSS_KIB";
 *  3. works for SECONDS (CPU in burn(), a 1 MiB buffer mapped and touched
 *     every 100 ms), then prints "later LOCKED_KIB RSS_KIB";
 *  4. calls munlockall and prints "munlockall RC LOCKED_KIB".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long burn(double until)
{
    volatile unsigned long x = 0;
    while (now() < until)
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i * 2654435761u;
    return x;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0;
    struct rlimit as = {4ull << 30, 4ull << 30}, got = {0, 0};
    if (setrlimit(RLIMIT_AS, &as) != 0 || getrlimit(RLIMIT_AS, &got) != 0)
        perror("RLIMIT_AS");
    printf("as %llu %llu\n", (unsigned long long)as.rlim_cur, (unsigned long long)got.rlim_cur);
    printf("before %ld %ld\n", status_kib("VmSize"), status_kib("VmRSS"));
    int rc = mlockall(MCL_CURRENT | MCL_FUTURE), e = rc ? errno : 0;
    printf("mlockall %d %d %ld %ld\n", rc, e, status_kib("VmLck"), status_kib("VmRSS"));
    fflush(stdout);
    double end = now() + secs;
    while (now() < end) {
        char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            memset(p, 1, 1 << 20);
            munmap(p, 1 << 20);
        }
        burn(now() + 0.1);
    }
    printf("later %ld %ld\n", status_kib("VmLck"), status_kib("VmRSS"));
    rc = munlockall();
    printf("munlockall %d %ld\n", rc, status_kib("VmLck"));
    return 0;
}
