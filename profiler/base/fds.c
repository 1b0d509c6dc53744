/* fds.c: the descriptors the profiler owns (fds.h).
 *
 * A bitmap of the registered numbers below 65,536 answers pp_fd_owned
 * without a lock (the interposed close consults it on every call); a
 * table under a futex lock keeps each one's device and inode. Numbers
 * the profiler takes are moved to F_DUPFD_CLOEXEC's lowest free number
 * at or above a floor: three quarters of min(descriptor limit, 1024).
 * Registration happens on the profiler's slow paths (a server start, a
 * connection, a tree member), never in a signal handler or malloc.
 */
#define _GNU_SOURCE
#include "fds.h"
#include "invariant.h"
#include "lock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BITS 65536
#define SLOTS 1024

typedef struct slot {
    int fd; /* -1: free */
    int keep; /* a forked child keeps it (pp_fd_keep) */
    dev_t dev;
    ino_t ino;
} slot;

static _Atomic uint64_t bits[BITS / 64];
static slot slots[SLOTS];
static int nslots; /* slots in use, the high-water mark of the table */
static pp_mutex lock = PP_MUTEX_INIT;
static void (*_Atomic taken_hook)(int);
static _Atomic int creating, bulk; /* makings and bulk closes under way */
static __thread int creating_here;  /* this thread's makings under way */

/* async-signal-safe */
int pp_fd_next_owned(int from)
{
    if (from < 0)
        from = 0;
    for (int w = from / 64; w < BITS / 64; w++) {
        uint64_t b = atomic_load_explicit(&bits[w], memory_order_acquire);
        if (w == from / 64)
            b &= ~(uint64_t)0 << (from % 64);
        if (b)
            return w * 64 + __builtin_ctzll(b);
    }
    return -1;
}

/* Nanoseconds since t0 on the monotonic clock. async-signal-safe */
static int64_t since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000LL + (t.tv_nsec - t0->tv_nsec);
}

/* Waits, at most limit_ns, until *c is 0. async-signal-safe */
static void wait_zero(_Atomic int *c, int64_t limit_ns)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; atomic_load(c) > 0; i++) {
        if (i < 100)
            continue;
        if (since(&t0) > limit_ns)
            return;
        nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

/* The two sides exclude each other without a lock a signal handler could
 * hold. A bulk close (the program's) enters at once and then waits for
 * the makings under way, 150 ms at most, so one that stalls (an open that
 * blocks) holds the program back no longer. A making (the profiler's)
 * enters only when it finds no bulk close after its own entry, and backs
 * out and waits otherwise, 2 s at most: the program never waits on a
 * making that started after its close, and a program that closes in a
 * tight loop cannot make one go ahead while a close runs. */

/* async-signal-safe */
void pp_fd_bulk_begin(void)
{
    atomic_fetch_add(&bulk, 1);
    wait_zero(&creating, 150000000LL);
}

void pp_fd_create_begin(void)
{
    if (creating_here++ > 0)
        return;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        atomic_fetch_add(&creating, 1);
        if (!atomic_load(&bulk) || since(&t0) > 2000000000LL)
            return;
        atomic_fetch_sub(&creating, 1);
        wait_zero(&bulk, 50000000LL);
    }
}

void pp_fd_create_end(void)
{
    PP_ASSERT(creating_here > 0); /* fds.h: each end has its begin */
    if (--creating_here == 0)
        atomic_fetch_sub(&creating, 1);
}

/* async-signal-safe */
void pp_fd_bulk_end(void)
{
    atomic_fetch_sub(&bulk, 1);
}

/* async-signal-safe */
void pp_fd_close_wait(void)
{
    if (atomic_load_explicit(&creating, memory_order_relaxed) && !creating_here)
        wait_zero(&creating, 50000000LL);
}

/* close(2) itself, past the interposed close. async-signal-safe */
static int sys_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}

/* async-signal-safe */
int pp_fd_owned(int fd)
{
    if (fd < 0 || fd >= BITS)
        return 0;
    return (atomic_load_explicit(&bits[fd / 64], memory_order_acquire) >> (fd % 64)) & 1;
}

static void mark(int fd, int on)
{
    if (fd < 0 || fd >= BITS)
        return;
    uint64_t b = (uint64_t)1 << (fd % 64);
    if (on)
        atomic_fetch_or(&bits[fd / 64], b);
    else
        atomic_fetch_and(&bits[fd / 64], ~b);
}

/* The slot of fd, or NULL. Under the lock. */
static slot *find_locked(int fd)
{
    PP_ASSERT(pp_mutex_held(&lock));
    for (int i = 0; i < nslots; i++)
        if (slots[i].fd == fd)
            return &slots[i];
    return NULL;
}

static int same_file(int fd, dev_t dev, ino_t ino)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* The lowest number a moved descriptor may take. */
static int floor_number(void)
{
    struct rlimit rl;
    rlim_t lim = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < lim)
        lim = rl.rlim_cur;
    return (int)(lim - lim / 4);
}

static int own(int fd, int keep);

int pp_fd_own(int fd)
{
    return own(fd, 0);
}

int pp_fd_keep(int fd)
{
    return own(fd, 1);
}

int pp_fd_lift(int fd)
{
    int floor = floor_number();
    if (fd >= 0 && fd < floor) {
        int moved = fcntl(fd, F_DUPFD_CLOEXEC, floor);
        if (moved >= 0) {
            sys_close(fd);
            fd = moved;
        }
    }
    return fd;
}

static int own(int fd, int keep)
{
    if (fd < 0)
        return -1;
    fd = pp_fd_lift(fd);
    struct stat st;
    if (fd >= BITS || fstat(fd, &st) != 0)
        return fd;
    pp_mutex_lock(&lock);
    slot *s = find_locked(fd);
    for (int i = 0; !s && i < nslots; i++)
        if (slots[i].fd < 0)
            s = &slots[i];
    if (!s && nslots < SLOTS)
        s = &slots[nslots++];
    if (s) {
        *s = (slot){fd, keep, st.st_dev, st.st_ino};
        mark(fd, 1);
    }
    pp_mutex_unlock(&lock);
    return fd;
}

/* The makers below call the kernel directly: the interposed calls
 * (interpose/make_hooks.c) would register what a thread working for the
 * profiler makes, and own() would do it a second time. */

int pp_fd_socket(int domain, int type, int protocol)
{
    pp_fd_create_begin();
    int fd = pp_fd_own((int)syscall(SYS_socket, domain, type, protocol));
    pp_fd_create_end();
    return fd;
}

int pp_fd_accept(int lfd, struct sockaddr *addr, socklen_t *len, int flags)
{
    pp_fd_create_begin();
    int fd = pp_fd_own(accept4(lfd, addr, len, flags));
    pp_fd_create_end();
    return fd;
}

int pp_fd_pipe(int p[2])
{
    pp_fd_create_begin();
    int rc = (int)syscall(SYS_pipe2, p, O_CLOEXEC);
    if (rc == 0) {
        p[0] = pp_fd_own(p[0]);
        p[1] = pp_fd_own(p[1]);
    }
    pp_fd_create_end();
    return rc;
}

int pp_fd_epoll(void)
{
    pp_fd_create_begin();
    int fd = pp_fd_own((int)syscall(SYS_epoll_create1, EPOLL_CLOEXEC));
    pp_fd_create_end();
    return fd;
}

int pp_fd_dup(int fd)
{
    pp_fd_create_begin();
    int d = pp_fd_own(fcntl(fd, F_DUPFD_CLOEXEC, floor_number()));
    pp_fd_create_end();
    return d;
}

/* An opened file of the profiler's, registered (kept by a forked child,
 * as an inherited descriptor is), or -1 with errno: EMFILE when it could
 * not be registered. */
static int open_owned(const char *path, int flags)
{
    pp_fd_create_begin();
    int fd = own((int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC), 1);
    if (fd >= 0 && !pp_fd_owned(fd)) {
        sys_close(fd);
        fd = -1;
        errno = EMFILE;
    }
    pp_fd_create_end();
    return fd;
}

FILE *pp_fd_fopen(const char *path)
{
    int fd = open_owned(path, O_RDONLY);
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (fd >= 0 && !f)
        pp_fd_close(fd);
    return f;
}

DIR *pp_fd_opendir(const char *path)
{
    int fd = open_owned(path, O_RDONLY | O_DIRECTORY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (fd >= 0 && !d)
        pp_fd_close(fd);
    return d;
}

/* Forgets fd, registered in s (NULL: nothing to forget). Under the lock. */
static void forget_locked(slot *s, int fd)
{
    if (!s)
        return;
    PP_ASSERT(pp_fd_owned(fd)); /* a registered number has its bit */
    s->fd = -1;
    mark(fd, 0);
}

/* The one way the profiler closes: under the lock (a program's dup2 onto
 * the number waits for it in pp_fd_taken), `closer` closes fd, or the
 * stream on it, while fd is still the file registered, and fd is
 * forgotten. A number the program took is left to it (a stream's memory
 * with it); one never registered is closed when `unregistered` says so. */
static int close_registered(int fd, int (*closer)(int, void *), void *stream, int unregistered)
{
    pp_mutex_lock(&lock);
    slot *s = find_locked(fd);
    int ours = s ? same_file(fd, s->dev, s->ino) : unregistered;
    int rc = ours ? closer(fd, stream) : 0;
    forget_locked(s, fd);
    pp_mutex_unlock(&lock);
    return rc;
}

static int close_fd(int fd, void *unused)
{
    (void)unused;
    return sys_close(fd);
}

static int close_file(int fd, void *f)
{
    (void)fd;
    return fclose(f);
}

static int close_dir(int fd, void *d)
{
    (void)fd;
    return closedir(d);
}

int pp_fd_fclose(FILE *f)
{
    return f ? close_registered(fileno(f), close_file, f, 0) : 0;
}

int pp_fd_closedir(DIR *d)
{
    return d ? close_registered(dirfd(d), close_dir, d, 0) : 0;
}

int pp_fd_close(int fd)
{
    return fd < 0 ? 0 : close_registered(fd, close_fd, NULL, 1);
}

int pp_fd_still_own(int fd)
{
    pp_mutex_lock(&lock);
    slot *s = find_locked(fd);
    int ours = s && same_file(fd, s->dev, s->ino);
    pp_mutex_unlock(&lock);
    return ours;
}

void pp_fd_on_taken(void (*hook)(int))
{
    atomic_store(&taken_hook, hook);
}

void pp_fd_taken(int fd)
{
    void (*hook)(int) = atomic_load(&taken_hook);
    if (hook)
        hook(fd);
    pp_mutex_lock(&lock);
    forget_locked(find_locked(fd), fd);
    pp_mutex_unlock(&lock);
}

int pp_fd_count(void)
{
    int n = 0;
    pp_mutex_lock(&lock);
    for (int i = 0; i < nslots; i++)
        n += slots[i].fd >= 0;
    pp_mutex_unlock(&lock);
    return n;
}

void pp_fd_fork_child(void)
{
    lock = (pp_mutex)PP_MUTEX_INIT; /* its holder did not come along */
    atomic_store(&creating, 0);
    atomic_store(&bulk, 0);
    int n = 0;
    for (int i = 0; i < nslots; i++) {
        int fd = slots[i].fd;
        if (fd < 0)
            continue;
        if (slots[i].keep) {
            slots[n++] = slots[i];
            continue;
        }
        slots[i].fd = -1;
        mark(fd, 0);
        if (same_file(fd, slots[i].dev, slots[i].ino))
            sys_close(fd);
    }
    for (int i = n; i < nslots; i++)
        slots[i].fd = -1;
    nslots = n;
}
