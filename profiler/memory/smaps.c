/* smaps.c: reads /proc/self/smaps into mappings.
 *
 * The file is read in pieces through one buffer and parsed line by line:
 * a mapping's header ("lo-hi perms offset dev inode path") and then its
 * fields, of which Rss and Anonymous are kept. A process with many
 * mappings has a long file (about a kilobyte per mapping), so it is never
 * held whole. The sum of the mappings' Rss is what smaps_rollup says.
 */
#define _GNU_SOURCE
#include "smaps.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Appends s to the names; returns its offset, or -1. */
static long add_name(pp_vmas *m, const char *s, size_t len)
{
    if (pp_reserve(&m->names, &m->names_cap, m->names_len + len, 1) < 0)
        return -1;
    memcpy(m->names + m->names_len, s, len);
    m->names[m->names_len + len] = 0;
    long off = (long)m->names_len;
    m->names_len += len + 1;
    return off;
}

/* A header line: "lo-hi perms offset dev inode   path". 0, 1 when the
 * line is not one, -1 when out of memory. */
static int header(pp_vmas *m, const char *line, size_t len)
{
    char *end;
    unsigned long long lo = strtoull(line, &end, 16);
    if (*end != '-')
        return 1;
    unsigned long long hi = strtoull(end + 1, &end, 16);
    if (*end != ' ' || end + 5 > line + len)
        return 1;
    if (pp_reserve(&m->v, &m->cap, m->n, sizeof *m->v) != 0)
        return -1;
    pp_vma *v = &m->v[m->n];
    memset(v, 0, sizeof *v);
    v->lo = (uintptr_t)lo;
    v->hi = (uintptr_t)hi;
    memcpy(v->perms, end + 1, 4);
    const char *p = end + 5;
    for (int field = 0; field < 3 && p < line + len; field++) { /* offset, dev, inode */
        while (p < line + len && *p == ' ')
            p++;
        while (p < line + len && *p != ' ')
            p++;
    }
    while (p < line + len && *p == ' ')
        p++;
    long off = add_name(m, p, (size_t)(line + len - p));
    if (off < 0)
        return -1;
    v->path = (const char *)(uintptr_t)off; /* an offset until the names stop moving */
    m->n++;
    return 0;
}

/* A field line of the current mapping. */
static void field(pp_vmas *m, const char *line)
{
    if (!m->n)
        return;
    pp_vma *v = &m->v[m->n - 1];
    if (!strncmp(line, "Rss:", 4))
        v->rss = strtoull(line + 4, NULL, 10) * 1024;
    else if (!strncmp(line, "Anonymous:", 10))
        v->anon = strtoull(line + 10, NULL, 10) * 1024;
}

int pp_smaps_read(pp_vmas *out)
{
    memset(out, 0, sizeof *out);
    int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pp_error_detail(PPROF_ESYS, "cannot read /proc/self/smaps: %s", strerror(errno));
    enum { BUF = 65536 };
    char *buf = malloc(BUF);
    if (!buf) {
        close(fd);
        return pp_fail(PPROF_ENOMEM);
    }
    int rc = 0;
    size_t have = 0;
    while (!rc) {
        ssize_t r = read(fd, buf + have, BUF - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = pp_error_detail(PPROF_ESYS, "reading /proc/self/smaps: %s", strerror(errno));
            break;
        }
        have += (size_t)r;
        size_t at = 0;
        for (;;) {
            char *nl = memchr(buf + at, '\n', have - at);
            if (!nl)
                break;
            *nl = 0;
            const char *line = buf + at;
            size_t len = (size_t)(nl - line);
            if (line[0] >= 'A' && line[0] <= 'Z')
                field(out, line);
            else if (header(out, line, len) < 0)
                rc = pp_fail(PPROF_ENOMEM);
            at += len + 1;
        }
        memmove(buf, buf + at, have - at);
        have -= at;
        if (r == 0 || have == BUF)
            break;
    }
    free(buf);
    close(fd);
    for (size_t i = 0; i < out->n; i++)
        out->v[i].path = out->names + (uintptr_t)out->v[i].path;
    if (rc)
        pp_smaps_free(out);
    return rc;
}

void pp_smaps_free(pp_vmas *m)
{
    free(m->v);
    free(m->names);
    memset(m, 0, sizeof *m);
}
