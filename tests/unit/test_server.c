/* test_server.c: pprof_server_start/stop and their errors.
 * test-labels: concurrency quick
 *
 * Starts on 127.0.0.1:0 and answers a request on the port it reports; a
 * second start gives PPROF_EBUSY; stop twice gives PPROF_ESTATE the second
 * time; a malformed address or a port already in use gives PPROF_EADDR;
 * an explicit address wins over LIBPPROF_ADDR; the listening socket is
 * close-on-exec.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* GET path on 127.0.0.1:port; returns the status code, or -1. */
static int get_status(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char req[256], resp[64] = {0};
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    int status = -1;
    if (write(fd, req, (size_t)n) == n && read(fd, resp, sizeof resp - 1) > 12)
        sscanf(resp, "HTTP/1.%*d %d", &status);
    close(fd);
    return status;
}

/* Whether some open descriptor is a listening socket without FD_CLOEXEC. */
static int inheritable_listener(void)
{
    for (int fd = 3; fd < 1024; fd++) {
        int flags = fcntl(fd, F_GETFD), acc = 0;
        socklen_t len = sizeof acc;
        if (flags >= 0 && !(flags & FD_CLOEXEC) &&
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) == 0 && acc)
            return 1;
    }
    return 0;
}

int main(void)
{
    setenv("LIBPPROF_ADDR", "not-an-address", 1); /* explicit configuration must win */
    pprof_server_config cfg = {.addr = "127.0.0.1:0"};
    CHECK(pprof_server_start(&cfg) == 0);
    int port = pprof_server_port();
    CHECKF(port > 0, "port %d", port);
    CHECK(get_status(port, "/debug/pprof/cmdline") == 200);
    CHECK(get_status(port, "/debug/pprof/nothing") == 404);
    CHECK(!inheritable_listener());
    CHECK(pprof_server_start(&cfg) == PPROF_EBUSY);
    CHECK(pprof_server_stop() == 0);
    CHECK(pprof_server_stop() == PPROF_ESTATE);
    CHECK(get_status(port, "/debug/pprof/cmdline") == -1);

    CHECK(pprof_server_start(&(pprof_server_config){.addr = "nonsense"}) == PPROF_EADDR);
    CHECK(pprof_server_start(&(pprof_server_config){.addr = "127.0.0.1:99999"}) == PPROF_EADDR);
    CHECK(pprof_server_start(&(pprof_server_config){.addr = "127.0.0.1:0", .prefix = "nope"}) == PPROF_EINVAL);

    /* a port already taken */
    int busy = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof sa;
    CHECK(bind(busy, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(busy, 1) == 0 &&
          getsockname(busy, (struct sockaddr *)&sa, &len) == 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(sa.sin_port));
    CHECK(pprof_server_start(&(pprof_server_config){.addr = addr}) == PPROF_EADDR);
    close(busy);
    CHECK(pprof_server_start(&(pprof_server_config){.addr = addr}) == 0);
    CHECK(get_status(ntohs(sa.sin_port), "/debug/pprof/") == 200);
    CHECK(pprof_server_stop() == 0);
    return check_summary("test_server");
}
