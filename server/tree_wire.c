/* tree_wire.c: what the hub and its members share (see tree_internal.h):
 * the messages between them, the abstract names of their sockets, and
 * what /proc says of a process.
 *
 * The hub listens on a Unix socket in the abstract namespace,
 * "libpprof-tree-<pid>" (no file to clean up; the hub keeps only peers of
 * its own user, or its descendants, by SO_PEERCRED). Messages are a fixed
 * header and a body of at most 256 MiB; a malformed one ends the
 * connection.
 */
#define _GNU_SOURCE
#include "tree_internal.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x70707472u
#define MAX_BODY (256u << 20)

/* Sends (`out`) or receives all n bytes; 0 or -1. */
static int io_full(int fd, void *p, size_t n, int out)
{
    for (char *c = p; n;) {
        ssize_t k = out ? send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int pp_tree_send(int fd, uint32_t type, uint32_t id, int status, const void *body, size_t len)
{
    pp_tree_msg m = {MAGIC, type, id, status, len};
    return io_full(fd, &m, sizeof m, 1) || (len && io_full(fd, (void *)body, len, 1)) ? -1 : 0;
}

int pp_tree_recv(int fd, pp_tree_msg *m, char **body)
{
    *body = NULL;
    if (io_full(fd, m, sizeof *m, 0) || m->magic != MAGIC || m->len > MAX_BODY)
        return -1;
    if (!(*body = malloc(m->len + 1)))
        return -1;
    (*body)[m->len] = 0;
    if (m->len && io_full(fd, *body, m->len, 0)) {
        free(*body);
        *body = NULL;
        return -1;
    }
    return 0;
}

int pp_tree_recv_some(int fd, pp_tree_reader *r)
{
    for (;;) {
        char *dst;
        size_t want;
        if (r->got < sizeof r->m) {
            dst = (char *)&r->m + r->got;
            want = sizeof r->m - r->got;
        } else {
            if (!r->body) {
                if (r->m.magic != MAGIC || r->m.len > MAX_BODY || !(r->body = malloc(r->m.len + 1)))
                    return -1;
                r->body[r->m.len] = 0;
            }
            size_t off = r->got - sizeof r->m;
            if (off == r->m.len)
                return 1;
            dst = r->body + off;
            want = r->m.len - off;
        }
        ssize_t k = recv(fd, dst, want, MSG_DONTWAIT);
        if (k > 0)
            r->got += (size_t)k;
        else if (k < 0 && errno == EINTR)
            continue;
        else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        else
            return -1;
    }
}

void pp_tree_reader_reset(pp_tree_reader *r)
{
    free(r->body);
    *r = (pp_tree_reader){0};
}

void pp_tree_name_of(int pid, char out[PP_TREE_NAME_MAX])
{
    snprintf(out, PP_TREE_NAME_MAX, "libpprof-tree-%d", pid);
}

/* The abstract address named `name`, and its length. */
static socklen_t address(const char *name, struct sockaddr_un *a)
{
    size_t n = strnlen(name, sizeof a->sun_path - 1);
    *a = (struct sockaddr_un){.sun_family = AF_UNIX};
    memcpy(a->sun_path + 1, name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int pp_tree_listen(const char *name)
{
    struct sockaddr_un a;
    socklen_t len = address(name, &a);
    int fd = pp_fd_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, len) || listen(fd, 64))) {
        int e = errno;
        pp_fd_close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int pp_tree_connect(const char *name)
{
    struct sockaddr_un a;
    socklen_t len = address(name, &a);
    int fd = pp_fd_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, len)) {
        pp_fd_close(fd);
        return -1;
    }
    return fd;
}

int pp_tree_off(void)
{
    return pp_process_isolated() || !pp_env_int("LIBPPROF_TREE", 1, 0, 1);
}

/* Reads /proc/<pid>/<what> into buf (NUL-terminated): its length, or 0. */
static size_t read_proc(int pid, const char *what, char *buf, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, what);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = 0;
    return n > 0 ? (size_t)n : 0;
}

void pp_tree_comm(int pid, char out[16])
{
    read_proc(pid, "comm", out, 16);
    out[strcspn(out, "\n")] = 0;
}

/* The fields of /proc/<pid>/stat after the name (which may hold spaces
 * and parentheses), or NULL. */
static const char *stat_fields(int pid, char *buf, size_t size)
{
    if (!read_proc(pid, "stat", buf, size))
        return NULL;
    const char *close_paren = strrchr(buf, ')');
    return close_paren ? close_paren + 1 : NULL;
}

int pp_tree_parent_of(int pid)
{
    char buf[512];
    const char *f = stat_fields(pid, buf, sizeof buf);
    int ppid = 0;
    if (f)
        sscanf(f, " %*c %d", &ppid);
    return ppid;
}

int pp_tree_seccomp(int pid)
{
    char buf[2048];
    int mode = 0;
    const char *f = read_proc(pid, "status", buf, sizeof buf) ? strstr(buf, "\nSeccomp:") : NULL;
    if (f)
        sscanf(f + 9, "%d", &mode);
    return mode;
}

int pp_tree_ended(int pid)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return 1;
    char buf[512];
    const char *f = stat_fields(pid, buf, sizeof buf);
    return f && f[0] == ' ' && (f[1] == 'Z' || f[1] == 'X');
}

int64_t pp_tree_now_s(void)
{
    return pp_now_ns(CLOCK_MONOTONIC) / 1000000000;
}

int pp_tree_descends(int pid)
{
    int me = (int)getpid();
    for (int depth = 0; pid > 1 && depth < 16; depth++)
        if ((pid = pp_tree_parent_of(pid)) == me)
            return 1;
    return 0;
}

int pp_tree_exec_maps(pprof_buffer *b)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    pprof_buffer all = {0};
    pprof_writer w = pprof_writer_buffer(&all);
    char chunk[16384];
    ssize_t n;
    int rc = 0;
    while (rc == 0 && ((n = read(fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR)))
        rc = n > 0 ? w.write(w.ctx, chunk, (size_t)n) : 0;
    close(fd);
    pprof_writer out = pprof_writer_buffer(b);
    for (char *line = all.data, *end = all.data + all.len; rc == 0 && line && line < end;) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *e = nl ? nl : end, *p = line, *f[5];
        int fl[5];
        for (int k = 0; k < 5; k++) { /* addresses, permissions, offset, device, inode */
            while (p < e && *p == ' ')
                p++;
            for (f[k] = p; p < e && *p != ' ';)
                p++;
            fl[k] = (int)(p - f[k]);
        }
        while (p < e && *p == ' ')
            p++;
        if (fl[1] >= 3 && f[1][2] == 'x' && p < e && *p == '/') {
            char text[PATH_MAX + 96];
            int k = snprintf(text, sizeof text, "0-0 %.*s 0 %.*s %.*s %.*s\n", fl[1], f[1], fl[3], f[3], fl[4],
                             f[4], (int)(e - p), p);
            rc = k > 0 && (size_t)k < sizeof text ? out.write(out.ctx, text, (size_t)k) : 0;
        }
        line = nl ? nl + 1 : end;
    }
    pprof_buffer_free(&all);
    return rc || n < 0 ? -1 : 0;
}
