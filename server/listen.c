/* listen.c: parsing LIBPPROF_ADDR and opening the listening socket (see
 * listen.h). */
#define _GNU_SOURCE
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int fail(pp_listen_error *kind, pp_listen_error k, char *why, size_t size, const char *fmt,
                const char *detail)
{
    *kind = k;
    snprintf(why, size, fmt, detail);
    return -1;
}

static int bound_port(int fd)
{
    union {
        struct sockaddr sa;
        struct sockaddr_in in;
        struct sockaddr_in6 in6;
    } a;
    memset(&a, 0, sizeof a);
    socklen_t sl = sizeof a;
    if (getsockname(fd, &a.sa, &sl) != 0)
        return 0;
    return ntohs(a.sa.sa_family == AF_INET6 ? a.in6.sin6_port : a.in.sin_port);
}

/* "unix:PATH": a Unix-domain socket, mode 0600. A socket file left by a
 * process that is gone (nothing accepts on it) is replaced; a live one is
 * "in use"; any other file is left alone. */
static int open_unix(const char *path, int backlog, pp_listen_error *kind, int *err_out, char *why,
                     size_t why_size)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (!*path || strlen(path) >= sizeof sun.sun_path)
        return fail(kind, PP_LISTEN_MALFORMED, why, why_size,
                    "malformed address (want unix:PATH, the path 1 to 107 bytes)%s", "");
    memcpy(sun.sun_path, path, strlen(path) + 1); /* it fits: checked above */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        goto failed;
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            errno = EEXIST;
            goto failed;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *)&sun, sizeof sun) == 0;
        if (probe >= 0)
            close(probe);
        if (live) {
            errno = EADDRINUSE;
            goto failed;
        }
        unlink(path);
    }
    /* Not listening until chmod is done: no one connects meanwhile. */
    if (bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0)
        goto failed;
    if (chmod(path, 0600) != 0 || listen(fd, backlog) != 0) {
        int e = errno;
        unlink(path);
        errno = e;
        goto failed;
    }
    return fd;
failed:
    *err_out = errno;
    if (fd >= 0)
        close(fd);
    return fail(kind, PP_LISTEN_BIND, why, why_size, "%s", strerror(*err_out));
}

int pp_listen_open(const char *addr, int backlog, int *port_out, pp_listen_error *kind, int *err_out,
                   char *why, size_t why_size)
{
    static const char malformed[] = "malformed address (want HOST:PORT, [IPv6]:PORT or unix:PATH)%s";
    char host[256];
    const char *port, *h;
    size_t hlen;
    *kind = PP_LISTEN_OK;
    *err_out = 0;
    if (strncmp(addr, "unix:", 5) == 0) {
        *port_out = 0;
        return open_unix(addr + 5, backlog, kind, err_out, why, why_size);
    }
    if (addr[0] == '[') {
        const char *rb = strchr(addr, ']');
        if (!rb || rb[1] != ':')
            return fail(kind, PP_LISTEN_MALFORMED, why, why_size, malformed, "");
        h = addr + 1;
        hlen = (size_t)(rb - h);
        port = rb + 2;
    } else {
        const char *colon = strrchr(addr, ':');
        if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
            return fail(kind, PP_LISTEN_MALFORMED, why, why_size, malformed, "");
        h = addr;
        hlen = (size_t)(colon - addr);
        port = colon + 1;
    }
    size_t plen = strlen(port);
    if (hlen >= sizeof host || plen == 0 || plen > 5 || strspn(port, "0123456789") != plen ||
        atoi(port) > 65535)
        return fail(kind, PP_LISTEN_MALFORMED, why, why_size, malformed, "");
    memcpy(host, h, hlen);
    host[hlen] = '\0';

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *res;
    int gai = getaddrinfo(hlen ? host : NULL, port, &hints, &res);
    if (gai != 0)
        return fail(kind, PP_LISTEN_RESOLVE, why, why_size, "%s", gai_strerror(gai));
    int fd = -1, err = EADDRNOTAVAIL;
    for (int pass = 0; pass < 2 && fd < 0; pass++) {
        for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
            int preferred = hlen ? ai->ai_family == AF_INET : ai->ai_family == AF_INET6;
            if (preferred != (pass == 0))
                continue;
            fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
            if (fd < 0) {
                err = errno;
                continue;
            }
            int one = 1, zero = 0;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (ai->ai_family == AF_INET6 && hlen == 0)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
                err = errno;
                close(fd);
                fd = -1;
            }
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        *err_out = err;
        return fail(kind, PP_LISTEN_BIND, why, why_size, "%s", strerror(err));
    }
    *port_out = bound_port(fd);
    return fd;
}

int pp_listen_is_loopback(int fd)
{
    struct sockaddr_storage ss = {0};
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss.ss_family == AF_INET6) {
        const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return ss.ss_family == AF_UNIX;
}
