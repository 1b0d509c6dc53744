/* mlock_hooks.c: mlockall and munlockall, interposed, so that a program
 * that locks its memory locks its own and not the profiler's.
 *
 * mlockall(MCL_CURRENT) locks, and faults in, every mapping of the
 * process: without this the profiler's threads' stacks (8 MiB each),
 * its static tables and the libraries only it loaded made 57 MB more
 * resident and locked in a program of 2.4 MB, and the kernel's check of the call against
 * RLIMIT_MEMLOCK (an unprivileged process may lock all only when its
 * whole address space fits under the limit) counted the profiler's
 * reserved heap region too, so the call failed where it succeeds
 * without the profiler. Here MCL_CURRENT locks the mappings of
 * /proc/self/maps one by one, less the profiler's own (pp_own_maps, its
 * threads' stacks, libpprof's own segments), after the same check on
 * what is left; the C library's and libpprof's other libraries stay in
 * the program's part. MCL_FUTURE goes to the kernel, and from then on
 * the profiler's new mappings and threads' stacks are unlocked as they
 * are made (base/own_maps.h) until munlockall, or in a forked child,
 * which inherits no lock. Without /proc (a chroot), the kernel locks all
 * and the profiler's ranges are unlocked after.
 */
#define _GNU_SOURCE
#include "hooks.h"
#include "base/base.h"
#include "threads/threads.h"

#include <errno.h>
#include <link.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

#define MAX_OWN 640
typedef struct own_ranges {
    uintptr_t lo[MAX_OWN], hi[MAX_OWN];
    int n;
} own_ranges;

typedef int (*mlockall_fn)(int);
typedef int (*munlockall_fn)(void);
static mlockall_fn real_mlockall;
static munlockall_fn real_munlockall;

static own_ranges own; /* large; calls are rare and made one at a time (mu) */
static pp_mutex mu = PP_MUTEX_INIT;

static void forked_child(void)
{
    pp_future_locked_set(0); /* a child inherits no lock */
    mu = (pp_mutex)PP_MUTEX_INIT;
}

void pp_mlock_hooks_init(void)
{
    if (real_mlockall)
        return;
    real_munlockall = (munlockall_fn)pp_next_symbol("munlockall", NULL);
    real_mlockall = (mlockall_fn)pp_next_symbol("mlockall", NULL);
    pp_atfork(NULL, NULL, forked_child);
}

/* The loaded objects, and which libpprof brought in: those its
 * DT_NEEDED closure holds and no other object's does. */
#define MAX_OBJ 512
static struct obj {
    struct dl_phdr_info info;
    const char *soname, *strtab;
    const ElfW(Dyn) * dyn;
    unsigned char profilers, programs;
} objs[MAX_OBJ];
static int nobj, self_obj;

static int note_obj(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (nobj == MAX_OBJ)
        return 1;
    struct obj *o = &objs[nobj];
    *o = (struct obj){.info = *info};
    uintptr_t self = (uintptr_t)&note_obj;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz)
            self_obj = nobj;
        if (ph->p_type == PT_DYNAMIC)
            o->dyn = (const ElfW(Dyn) *)lo;
    }
    for (const ElfW(Dyn) *d = o->dyn; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB) /* the loader relocated it, except in the vDSO */
            o->strtab = (const char *)(d->d_un.d_ptr + (d->d_un.d_ptr < info->dlpi_addr ? info->dlpi_addr : 0));
    for (const ElfW(Dyn) *d = o->dyn; d && o->strtab && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_SONAME)
            o->soname = o->strtab + d->d_un.d_val;
    nobj++;
    return 0;
}

/* The object a DT_NEEDED name stands for, or -1. */
static int obj_named(const char *needed)
{
    for (int i = 0; i < nobj; i++) {
        const char *base = strrchr(objs[i].info.dlpi_name, '/');
        base = base ? base + 1 : objs[i].info.dlpi_name;
        if ((objs[i].soname && strcmp(objs[i].soname, needed) == 0) || strcmp(base, needed) == 0)
            return i;
    }
    return -1;
}

/* Marks object i and what it needs, transitively: which = 0 the
 * profiler's closure, 1 the program's. */
static void mark(int i, int which)
{
    unsigned char *m = which ? &objs[i].programs : &objs[i].profilers;
    if (*m)
        return;
    *m = 1;
    for (const ElfW(Dyn) *d = objs[i].dyn; d && objs[i].strtab && d->d_tag != DT_NULL; d++) {
        int j = d->d_tag == DT_NEEDED ? obj_named(objs[i].strtab + d->d_un.d_val) : -1;
        if (j >= 0)
            mark(j, which);
    }
}

/* Adds the segments of libpprof and of the libraries only it needs. */
static void own_objects(own_ranges *o)
{
    nobj = 0;
    self_obj = -1;
    dl_iterate_phdr(note_obj, NULL);
    if (self_obj <= 0) /* linked into the program: its own */
        return;
    int i;
    mark(self_obj, 0);
    for (int k = 0; pp_own_object(k); k++) /* what it loaded with dlopen */
        if ((i = obj_named(pp_own_object(k))) >= 0)
            mark(i, 0);
    for (i = 0; i < nobj; i++)
        if (!objs[i].profilers)
            mark(i, 1);
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (i = 0; i < nobj; i++) {
        if (!(i == self_obj || (objs[i].profilers && !objs[i].programs)))
            continue;
        for (int k = 0; k < objs[i].info.dlpi_phnum && o->n < MAX_OWN; k++) {
            const ElfW(Phdr) *ph = &objs[i].info.dlpi_phdr[k];
            uintptr_t lo = objs[i].info.dlpi_addr + ph->p_vaddr;
            if (ph->p_type != PT_LOAD)
                continue;
            o->lo[o->n] = lo & ~(page - 1);
            o->hi[o->n++] = (lo + ph->p_memsz + page - 1) & ~(page - 1);
        }
    }
}

/* The profiler's own ranges, sorted by start. */
static void own_collect(own_ranges *o)
{
    const char *what[MAX_OWN];
    size_t n = pp_own_maps(o->lo, o->hi, what, MAX_OWN);
    o->n = (int)(n < MAX_OWN ? n : MAX_OWN);
    o->n += pp_threads_own_stacks(o->lo + o->n, o->hi + o->n, MAX_OWN - o->n);
    own_objects(o);
    for (int i = 1; i < o->n; i++)
        for (int j = i; j > 0 && o->lo[j - 1] > o->lo[j]; j--) {
            uintptr_t l = o->lo[j], h = o->hi[j];
            o->lo[j] = o->lo[j - 1];
            o->hi[j] = o->hi[j - 1];
            o->lo[j - 1] = l;
            o->hi[j - 1] = h;
        }
}

/* Calls fn on each part of [lo, hi) outside the own ranges. */
static void outside(const own_ranges *o, uintptr_t lo, uintptr_t hi, void (*fn)(uintptr_t, uintptr_t, void *),
                    void *arg)
{
    for (int i = 0; i < o->n && lo < hi; i++) {
        if (o->hi[i] <= lo || o->lo[i] >= hi)
            continue;
        if (o->lo[i] > lo)
            fn(lo, o->lo[i], arg);
        if (o->hi[i] > lo)
            lo = o->hi[i];
    }
    if (lo < hi)
        fn(lo, hi, arg);
}

/* Calls fn on each part of the process's mappings outside the own
 * ranges; -1 when /proc/self/maps cannot be read. */
static int each_program_range(const own_ranges *o, void (*fn)(uintptr_t, uintptr_t, void *), void *arg)
{
    pp_own_heap_enter(); /* the stream's buffer is the profiler's */
    FILE *f = pp_fd_fopen("/proc/self/maps");
    int opened = f != NULL;
    char line[4608]; /* a path is at most PATH_MAX */
    while (f && fgets(line, sizeof line, f)) {
        char *end;
        uintptr_t lo = strtoull(line, &end, 16), hi = *end == '-' ? strtoull(end + 1, NULL, 16) : 0;
        if (hi > lo && lo < (uintptr_t)1 << 56) /* not the kernel's [vsyscall] */
            outside(o, lo, hi, fn, arg);
    }
    if (f)
        pp_fd_fclose(f);
    pp_own_heap_leave();
    return opened ? 0 : -1;
}

static void add_bytes(uintptr_t lo, uintptr_t hi, void *sum)
{
    *(uintptr_t *)sum += hi - lo;
}

static void lock_range(uintptr_t lo, uintptr_t hi, void *flags)
{
    syscall(SYS_mlock2, lo, hi - lo, *(int *)flags & MCL_ONFAULT ? MLOCK_ONFAULT : 0); /* gone since: no matter */
}

API int mlockall(int flags)
{
    PP_NEED(real_mlockall, pp_mlock_hooks_init);
    if ((flags & ~(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)) || !(flags & MCL_CURRENT)) {
        int rc = real_mlockall(flags); /* MCL_FUTURE alone, or flags the kernel refuses */
        if (rc == 0)
            pp_future_locked_set(1);
        return rc;
    }
    pp_mutex_lock(&mu);
    own_collect(&own);
    uintptr_t program = 0;
    int rc = 0;
    if (each_program_range(&own, add_bytes, &program) != 0) { /* no /proc: lock all, then unlock the own ranges */
        rc = real_mlockall(flags);
        if (rc == 0) {
            pp_future_locked_set((flags & MCL_FUTURE) != 0);
            for (int i = 0; i < own.n; i++)
                munlock((void *)own.lo[i], own.hi[i] - own.lo[i]);
        }
        pp_mutex_unlock(&mu);
        return rc;
    }
    struct rlimit lim;
    if (!pp_capable(CAP_IPC_LOCK) && syscall(SYS_prlimit64, 0, RLIMIT_MEMLOCK, NULL, &lim) == 0) {
        if (lim.rlim_cur == 0) /* the kernel's checks, on the program's part alone */
            rc = EPERM;
        else if (lim.rlim_cur != RLIM_INFINITY && program > lim.rlim_cur)
            rc = ENOMEM;
    }
    if (!rc && !(flags & MCL_FUTURE) && pp_future_locked() && real_munlockall() == 0)
        pp_future_locked_set(0); /* mlockall without MCL_FUTURE ends it */
    if (!rc && (flags & MCL_FUTURE)) {
        if (real_mlockall(flags & ~MCL_CURRENT) != 0)
            rc = errno;
        else
            pp_future_locked_set(1);
    }
    if (!rc) {
        own_collect(&own); /* again: what the profiler made meanwhile was made unlocked */
        each_program_range(&own, lock_range, &flags);
    }
    pp_mutex_unlock(&mu);
    if (rc) {
        errno = rc;
        return -1;
    }
    return 0;
}

API int munlockall(void)
{
    PP_NEED(real_munlockall, pp_mlock_hooks_init);
    int rc = real_munlockall();
    if (rc == 0)
        pp_future_locked_set(0);
    return rc;
}
#else
void pp_mlock_hooks_init(void)
{
}
#endif
