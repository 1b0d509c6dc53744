/* sym_store.c: debug files kept on disk by build ID.
 *
 * Two stores, each laid out as elfutils' debuginfod client lays out its
 * cache (<dir>/<build ID in hex>/debuginfo), so either can be pointed at
 * the other's directory:
 *   - libpprof's cache: LIBPPROF_DEBUGINFO_CACHE, else
 *     $XDG_CACHE_HOME/libpprof/debuginfo, else ~/.cache/libpprof/debuginfo.
 *     Files fetched from debuginfod (sym_fetch.c) go there. It is bounded
 *     by LIBPPROF_DEBUGINFO_CACHE_MB: past it, the files used least
 *     recently go first (a use sets a file's modification time). Every
 *     process that names the same directory shares it: a process tree's
 *     members inherit the variable.
 *   - the debuginfod client's cache, which gdb, perf and debuginfod-find
 *     fill: DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client,
 *     else ~/.cache/debuginfod_client. Read, never written.
 * A directory is used only when it is the caller's (or root's) and no one
 * else may write to it: a debug file is parsed by libdw inside the host.
 * A file enters the cache under a temporary name, and is renamed into
 * place once it is an ELF file with the build ID it was asked for.
 * Everything here runs on the profiler's threads (the symbolizer's
 * session, the fetch thread), never in a signal handler.
 */
#define _GNU_SOURCE
#include "sym_internal.h"

#include <dirent.h>
#include <sys/time.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char own_dir[1024], client_dir[1024];
static uint64_t budget;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t bytes_now; /* under mu: the cache's size at its last scan */
static bool scanned;       /* under mu: the first look was taken */

static int absolute(const char *path)
{
    return path[0] == '/' && strlen(path) < 900;
}

/* dir = $var, else $XDG_CACHE_HOME/tail, else $HOME/.cache/tail; "" for none. */
static void dir_from_env(const char *var, const char *tail, char *out, size_t n)
{
    const char *v = strncmp(var, "LIBPPROF_", 9) == 0
                        ? pp_env_text(var, absolute, "an absolute directory", "the default directory")
                        : getenv(var),
               *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    out[0] = '\0';
    if (v && v[0] == '/')
        snprintf(out, n, "%s", v);
    else if (x && x[0] == '/')
        snprintf(out, n, "%s/%s", x, tail);
    else if (h && h[0] == '/')
        snprintf(out, n, "%s/.cache/%s", h, tail);
}

static void store_init(void)
{
    dir_from_env("LIBPPROF_DEBUGINFO_CACHE", "libpprof/debuginfo", own_dir, sizeof own_dir);
    dir_from_env("DEBUGINFOD_CACHE_PATH", "debuginfod_client", client_dir, sizeof client_dir);
    budget = (uint64_t)pp_env_int("LIBPPROF_DEBUGINFO_CACHE_MB", 2048, 1, 1 << 24) << 20;
}

/* Whether dir may be trusted: a directory of ours or root's that no one
 * else may write to. */
static bool dir_safe(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == 0) &&
           (st.st_mode & 022) == 0;
}

/* mkdir -p, each new directory 0700. */
static bool make_dirs(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return false;
        *p = c;
        if (c == '\0')
            return true;
    }
}

const char *pp_sym_store_dir(void)
{
    pthread_once(&once, store_init);
    return own_dir;
}

uint64_t pp_sym_store_budget(void)
{
    pthread_once(&once, store_init);
    return budget;
}

bool pp_sym_store_path(int which, const char *hex, char *out, size_t n)
{
    pthread_once(&once, store_init);
    const char *dir = which == 0 ? own_dir : client_dir;
    if (!dir[0] || !hex[0])
        return false;
    int len = snprintf(out, n, "%s/%s/debuginfo", dir, hex);
    return len > 0 && (size_t)len < n;
}

int pp_sym_store_open(const char *hex, char **out_name)
{
    pthread_once(&once, store_init);
    for (int which = 0; which < 2; which++) {
        char path[1200];
        const char *dir = which == 0 ? own_dir : client_dir;
        if (!pp_sym_store_path(which, hex, path, sizeof path))
            continue;
        /* Out of reach (a chroot, a dropped privilege): the copy kept before. */
        int fd = dir_safe(dir) ? pp_sym_open(path) : pp_sym_open_kept(path);
        if (fd < 0)
            continue;
        if (which == 0)
            futimens(fd, NULL); /* used now: the last to go */
        *out_name = strdup(path);
        return pp_fd_lift(fd);
    }
    return -1;
}

/* A path under the cache for hex: <dir>/<hex>/<name>. */
static bool entry_path(const char *hex, const char *name, char *out, size_t n)
{
    int len = snprintf(out, n, "%s/%s/%s", own_dir, hex, name);
    return own_dir[0] && len > 0 && (size_t)len < n;
}

int pp_sym_store_begin(const char *hex, char *tmp, size_t n, const char **why)
{
    pthread_once(&once, store_init);
    char dir[1200];
    *why = "no cache directory: set LIBPPROF_DEBUGINFO_CACHE (or HOME)";
    if (!own_dir[0])
        return -1;
    *why = "the cache directory cannot be made, or others may write to it";
    if (!make_dirs(own_dir) || !dir_safe(own_dir) || !entry_path(hex, "", dir, sizeof dir) ||
        (mkdir(dir, 0700) != 0 && errno != EEXIST))
        return -1;
    char name[64];
    snprintf(name, sizeof name, "debuginfo.part.%d.%ld", (int)getpid(), (long)syscall(SYS_gettid));
    *why = "the cache directory cannot be written";
    if (!entry_path(hex, name, tmp, n))
        return -1;
    return pp_fd_lift(open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
}

bool pp_sym_build_id_hex(const unsigned char *bits, size_t n, char *out, size_t size)
{
    if (n == 0 || n * 2 >= size)
        return false;
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", bits[i]);
    return true;
}

bool pp_sym_tree_path(const char *hex, char *out, size_t n)
{
    int len = snprintf(out, n, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
    return strlen(hex) >= 4 && len > 0 && (size_t)len < n;
}

/* Whether the file open on fd is an ELF file with build ID hex. */
static bool has_build_id(int fd, const char *hex)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const unsigned char *bits;
    ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, (const void **)&bits) : -1;
    char got[PP_SYM_HEX_MAX];
    bool same = n > 0 && pp_sym_build_id_hex(bits, (size_t)n, got, sizeof got) && strcmp(got, hex) == 0;
    if (elf)
        elf_end(elf);
    return same;
}

static void trim(void);

int pp_sym_store_commit(const char *hex, const char *tmp, int fd, const char **why)
{
    char final[1200];
    *why = "the file served is not an ELF file with that build ID";
    bool ok = has_build_id(fd, hex);
    pp_fd_close(fd);
    if (ok && entry_path(hex, "debuginfo", final, sizeof final) && rename(tmp, final) == 0) {
        trim();
        return 0;
    }
    if (ok)
        *why = "the cache directory cannot be written";
    unlink(tmp);
    return -1;
}

void pp_sym_store_abort(const char *tmp, int fd)
{
    if (fd >= 0)
        pp_fd_close(fd);
    unlink(tmp);
}

typedef struct entry {
    char hex[PP_SYM_HEX_MAX];
    uint64_t size;
    struct timespec used;
} entry;

static int older_first(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    return (x->used.tv_nsec > y->used.tv_nsec) - (x->used.tv_nsec < y->used.tv_nsec);
}

/* Removes what a process left behind (a part file an hour old), and the
 * files used least recently while the cache is over its bound; notes the
 * size. Another process may trim at the same time: what it removed first
 * is gone already. */
static void trim(void)
{
    DIR *d = own_dir[0] ? pp_fd_opendir(own_dir) : NULL;
    if (!d)
        return;
    entry *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        char path[1200], part[1200];
        struct stat st;
        if (e->d_name[0] == '.' || strlen(e->d_name) >= PP_SYM_HEX_MAX)
            continue;
        DIR *sub = entry_path(e->d_name, "", part, sizeof part) ? pp_fd_opendir(part) : NULL;
        for (struct dirent *f; sub && (f = readdir(sub));)
            if (strncmp(f->d_name, "debuginfo.part.", 15) == 0 && entry_path(e->d_name, f->d_name, path, sizeof path) &&
                stat(path, &st) == 0 && st.st_mtime < now - 3600)
                unlink(path);
        if (sub)
            pp_fd_closedir(sub);
        if (!entry_path(e->d_name, "debuginfo", path, sizeof path) || stat(path, &st) != 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            entry *g = realloc(v, ncap * sizeof *v);
            if (!g)
                break;
            v = g;
            cap = ncap;
        }
        snprintf(v[n].hex, sizeof v[n].hex, "%s", e->d_name);
        v[n].size = (uint64_t)st.st_size;
        v[n].used = st.st_mtim;
        total += v[n++].size;
    }
    pp_fd_closedir(d);
    if (n > 1)
        qsort(v, n, sizeof *v, older_first);
    for (size_t i = 0; i < n && total > budget; i++) {
        char path[1200];
        if (entry_path(v[i].hex, "debuginfo", path, sizeof path) && (unlink(path) == 0 || errno == ENOENT)) {
            total -= v[i].size;
            if (entry_path(v[i].hex, "", path, sizeof path))
                rmdir(path);
        }
    }
    free(v);
    pthread_mutex_lock(&mu);
    bytes_now = total;
    pthread_mutex_unlock(&mu);
}

uint64_t pp_sym_store_bytes(void)
{
    pthread_once(&once, store_init);
    pthread_mutex_lock(&mu);
    bool first = !scanned;
    scanned = true; /* looked at once; fetches keep the size from then on */
    pthread_mutex_unlock(&mu);
    if (first && dir_safe(own_dir))
        trim(); /* the first look: a cache kept from before */
    pthread_mutex_lock(&mu);
    uint64_t b = bytes_now;
    pthread_mutex_unlock(&mu);
    return b;
}
