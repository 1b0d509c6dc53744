/* sym_keep.c: the files the symbolizer keeps open for when a chroot has
 * put them out of reach.
 *
 * Daemons that start as root often chroot into an empty directory. The
 * symbolizer reads /proc/self/maps and the mapped objects by path, so a
 * profile taken after the chroot would have no function names. Before the
 * program's chroot (interpose/priv_hooks.c), pp_sym_keep_files opens
 * /proc/self/maps and every object mapped then, with its debug files from
 * the build-ID tree and the stores of fetched files (sym_store.c) when
 * there are any, read-only: files, never
 * directories (a directory descriptor from outside the new root would let
 * the program walk out of it). pp_sym_open opens a path as usual, and when
 * that fails, hands out a copy of the kept descriptor for that path (the
 * maps file rewound to its start, which the kernel answers with the
 * mappings as they are now). The descriptors are the profiler's
 * (base/fds.h: the program's closes pass over them) and a forked child
 * keeps them; a child reading the kept maps file reads its parent's
 * mappings, which are its own as of the fork. Objects loaded after the
 * chroot are opened by their path inside it, as the loader opened them.
 */
#define _GNU_SOURCE
#include "sym_internal.h"
#include "base/base.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_KEPT 256
#define MAPS "/proc/self/maps"

static pp_mutex lock = PP_MUTEX_INIT;
static struct {
    char *path;
    int fd;
} kept[MAX_KEPT];
static int nkept, maps_fd = -1;

/* The kept descriptor of path, or -1 (lock held). */
static int kept_fd_locked(const char *path, size_t len)
{
    for (int i = 0; i < nkept; i++)
        if (strlen(kept[i].path) == len && memcmp(kept[i].path, path, len) == 0)
            return kept[i].fd;
    return -1;
}

/* Keeps path open under the lock (its name copied); returns the
 * descriptor or -1. */
static int keep_locked(const char *path, size_t len)
{
    char *copy = nkept < MAX_KEPT ? strndup(path, len) : NULL;
    int fd = copy ? pp_fd_keep(open(copy, O_RDONLY | O_CLOEXEC)) : -1;
    if (fd < 0) {
        free(copy);
        return -1;
    }
    kept[nkept].path = copy;
    kept[nkept++].fd = fd;
    return fd;
}

/* Keeps path open when it is a file that can be read and is not kept yet. */
static void keep_if_there_locked(const char *path)
{
    if (access(path, R_OK) == 0 && kept_fd_locked(path, strlen(path)) < 0)
        keep_locked(path, strlen(path));
}

/* Keeps the debug files for the object open as fd, if there are any: the
 * build-ID tree's and the stores' (sym_store.c). */
static void keep_debug_file_locked(int fd)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const unsigned char *bits;
    ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&bits) : -1;
    char hex[PP_SYM_HEX_MAX], path[1200];
    if (n >= 2 && pp_sym_build_id_hex(bits, (size_t)n, hex, sizeof hex)) {
        if (pp_sym_tree_path(hex, path, sizeof path))
            keep_if_there_locked(path);
        for (int which = 0; which < 2; which++)
            if (pp_sym_store_path(which, hex, path, sizeof path))
                keep_if_there_locked(path);
    }
    if (elf)
        elf_end(elf);
}

void pp_sym_keep_files(void)
{
    pp_own_heap_enter(); /* the paths are the profiler's */
    elf_version(EV_CURRENT);
    pp_mutex_lock(&lock);
    if (maps_fd < 0)
        maps_fd = pp_fd_keep(open(MAPS, O_RDONLY | O_CLOEXEC));
    FILE *f = maps_fd >= 0 ? pp_fd_fopen(MAPS) : NULL;
    char line[4608];
    while (f && nkept < MAX_KEPT && fgets(line, sizeof line, f)) {
        maps_line m;
        if (!pp_sym_parse_maps_line(line, strcspn(line, "\n"), &m) || m.deleted || m.pathlen == 0 ||
            m.path[0] != '/' || kept_fd_locked(m.path, m.pathlen) >= 0)
            continue;
        int fd = keep_locked(m.path, m.pathlen);
        if (fd >= 0)
            keep_debug_file_locked(fd);
    }
    if (f)
        pp_fd_fclose(f);
    pp_mutex_unlock(&lock);
    pp_own_heap_leave();
}

int pp_sym_open_kept(const char *path)
{
    pp_mutex_lock(&lock);
    int k = strcmp(path, MAPS) == 0 ? maps_fd : kept_fd_locked(path, strlen(path));
    int fd = k >= 0 ? fcntl(k, F_DUPFD_CLOEXEC, 0) : -1;
    if (fd >= 0)
        lseek(fd, 0, SEEK_SET); /* shared with the kept one: one reader at a time (the lock) */
    pp_mutex_unlock(&lock);
    return fd;
}

int pp_sym_open(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 || (errno != ENOENT && errno != EACCES && errno != ENOTDIR))
        return fd;
    int err = errno;
    fd = pp_sym_open_kept(path);
    if (fd < 0)
        errno = err;
    return fd;
}
