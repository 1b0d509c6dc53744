/* test_server_fork.c: a forked child of a serving process lets go of the
 * server's state.
 * test-labels: plain-only quick
 *
 * The child does not serve (pprof_server_port is PPROF_ESTATE), can start
 * a server of its own, and its copy of the server's connection holder
 * (a quarter of the descriptors it may open, each with a client's
 * address) goes back to the profiler's own heap at the fork: the child's
 * own heap holds at least that much less than the parent's did.
 */
#define _GNU_SOURCE
#include "check.h"
#include "heap/heap.h"
#include "pprof.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    unsetenv("LIBPPROF_ADDR");
    struct rlimit rl = {2048, 2048}; /* a holder of 320 connections, 256 of them waiting for their heads */
    setrlimit(RLIMIT_NOFILE, &rl);
    pprof_server_config c = {.addr = "127.0.0.1:0", .no_tree = 1};
    CHECK(pprof_server_start(&c) == 0);
    uint64_t before = 0, mapped, fell;
    pp_own_heap_stats(&before, &mapped, &fell);
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t after = 0;
        pp_own_heap_stats(&after, &mapped, &fell);
        int ok = pprof_server_port() == PPROF_ESTATE;
        pprof_server_config mine = {.addr = "127.0.0.1:0", .no_tree = 1};
        ok = ok && pprof_server_start(&mine) == 0 && pprof_server_port() > 0 && pprof_server_stop() == 0;
        uint64_t out[2] = {after, (uint64_t)ok};
        if (write(p[1], out, sizeof out) != sizeof out)
            _exit(2);
        _exit(0);
    }
    uint64_t got[2] = {0, 0};
    CHECK(read(p[0], got, sizeof got) == sizeof got);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECKF(got[1] == 1, "the child serves its own, not the parent's");
    /* 256 held connections of at least a sockaddr_storage each */
    CHECKF(got[0] + 256 * sizeof(struct sockaddr_storage) <= before, "own heap in use: parent %llu, child %llu",
           (unsigned long long)before, (unsigned long long)got[0]);
    CHECK(pprof_server_stop() == 0);
    return check_summary("test_server_fork");
}
