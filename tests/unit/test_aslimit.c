/* test_aslimit.c: a program's address-space limit (RLIMIT_AS) keeps its
 * meaning beside the profiler's own mappings.
 * test-labels: plain-only quick
 *
 * The profiler's own heap reserves its region and a server runs (its
 * threads' stacks), so the process's virtual size is well over a GiB
 * before the program sets RLIMIT_AS to 256 MiB, as vsftpd's session
 * processes set theirs to 200 MiB. Then, in the process and in a forked
 * child that sets its own:
 *  - getrlimit and prlimit read back the values the program set;
 *  - the program may still map what fits under its limit (128 MiB), and
 *    not what does not (300 MiB): the limit still binds;
 *  - lowering it again, and the soft limit alone, then raising that back,
 *    read back as set; raising the hard limit again is refused unless
 *    the process has CAP_SYS_RESOURCE, as without the profiler.
 * (Sanitizer runtimes reserve terabytes of shadow: the plain build only.)
 */
#define _GNU_SOURCE
#include "check.h"
#include "heap/heap.h"
#include "pprof.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define MIB (1ull << 20)

static long vm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* Maps and unmaps `bytes`; whether the kernel allowed it. */
static int can_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    munmap(p, bytes);
    return 1;
}

/* Sets RLIMIT_AS to `bytes` and checks what it reads back and what it
 * lets the program map; returns whether every check passed. */
static int limit_binds(rlim_t bytes)
{
    int failed = check_failed;
    struct rlimit rl = {bytes, bytes}, got = {0, 0}, old = {0, 0};
    CHECKF(setrlimit(RLIMIT_AS, &rl) == 0, "errno %d", errno);
    CHECK(getrlimit(RLIMIT_AS, &got) == 0);
    CHECKF(got.rlim_cur == bytes && got.rlim_max == bytes, "getrlimit reads %llu %llu for %llu",
           (unsigned long long)got.rlim_cur, (unsigned long long)got.rlim_max, (unsigned long long)bytes);
    CHECK(prlimit(0, RLIMIT_AS, NULL, &old) == 0);
    CHECKF(old.rlim_cur == bytes && old.rlim_max == bytes, "prlimit reads %llu", (unsigned long long)old.rlim_cur);
    CHECKF(can_map(bytes / 2), "%llu MiB under a %llu MiB limit (virtual size %ld KiB)",
           (unsigned long long)(bytes / 2 / MIB), (unsigned long long)(bytes / MIB), vm_kib());
    CHECKF(!can_map(bytes + 44 * MIB), "%llu MiB over a %llu MiB limit", (unsigned long long)(bytes / MIB + 44),
           (unsigned long long)(bytes / MIB));
    return check_failed == failed;
}

int main(void)
{
    unsetenv("LIBPPROF_ADDR");
    void *own = pp_own_malloc(16, 4096); /* reserves the own heap's region */
    CHECK(own != NULL);
    pprof_server_config c = {.addr = "127.0.0.1:0", .no_tree = 1};
    CHECK(pprof_server_start(&c) == 0);
    long before = vm_kib();
    CHECKF(before > 1024 * 1024, "virtual size %ld KiB: the own heap's region is reserved", before);

    pid_t pid = fork();
    if (pid == 0)
        _exit(limit_binds(200 * MIB) ? 0 : 1); /* vsftpd's session process */
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child's checks (status %d)", status);

    limit_binds(256 * MIB);
    limit_binds(192 * MIB); /* lowered again */
    /* raising the hard limit again takes CAP_SYS_RESOURCE, as without
     * the profiler (whose part keeps the kernel's limit higher) */
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    int may =
        syscall(SYS_capget, &h, d) == 0 && (d[CAP_SYS_RESOURCE / 32].effective >> (CAP_SYS_RESOURCE % 32)) & 1;
    struct rlimit higher = {256 * MIB, 256 * MIB};
    errno = 0;
    int rc = setrlimit(RLIMIT_AS, &higher);
    CHECKF(may ? rc == 0 : rc == -1 && errno == EPERM, "raising the hard limit: %d, errno %d (privileged: %d)", rc,
           errno, may);
    if (may)
        limit_binds(192 * MIB);
    /* the soft limit lowered, then raised back to the hard one (no
     * privilege needed) */
    struct rlimit soft = {128 * MIB, 192 * MIB}, got = {0, 0};
    CHECK(setrlimit(RLIMIT_AS, &soft) == 0);
    CHECK(getrlimit(RLIMIT_AS, &got) == 0 && got.rlim_cur == 128 * MIB && got.rlim_max == 192 * MIB);
    CHECK(!can_map(160 * MIB));
    soft.rlim_cur = 192 * MIB;
    CHECK(setrlimit(RLIMIT_AS, &soft) == 0);
    CHECK(getrlimit(RLIMIT_AS, &got) == 0 && got.rlim_cur == 192 * MIB && got.rlim_max == 192 * MIB);
    CHECK(can_map(96 * MIB));
    CHECK(pprof_server_stop() == 0);
    pp_own_free(own);
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}
