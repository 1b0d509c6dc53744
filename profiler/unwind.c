/* unwind.c: stack capture that is safe inside a signal handler.
 *
 * libunwind walks the stack from the signal's ucontext. Left alone, it finds
 * unwind tables by calling dl_iterate_phdr, which takes the dynamic loader's
 * lock: a handler interrupting a thread that holds malloc's lock while
 * another thread sits in dlopen waiting for that malloc lock would deadlock.
 * So the tables are found ahead of time: outside any handler, every loaded
 * object's .eh_frame_hdr search table is registered with libunwind as
 * dynamic unwind info (which libunwind consults first), and
 * dl_iterate_phdr is interposed so that inside a handler it reports no
 * objects: an address in no registered table (JIT code, an object loaded a
 * moment ago) gets libunwind's frame-based fallback, never the loader's lock.
 *
 * The walk itself is unw_backtrace, whose per-thread trace cache makes a
 * warm walk a few ns per frame. Its first use on a thread sets the cache up
 * (pthread_setspecific, mmap), so every thread does that outside any
 * handler: the main thread at load, others in the pthread_create hook.
 *
 * Objects come and go: the collector re-registers when the loader's
 * add/remove counters change, and dlclose is wrapped. Before an object
 * is unmapped, `loader_busy` is raised and the wrapper waits until no
 * handler is inside a walk (handlers count themselves in `in_flight`), so
 * no handler reads a table that is being unmapped; handlers that start
 * meanwhile record only the interrupted PC. The table of objects is double
 * buffered and swapped after the same grace period.
 */
#define _GNU_SOURCE
#include "unwind.h"
#include "lock.h"
#include "profile.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OBJECTS 1024
#define HANDLER_FRAMES 8 /* frames from unw_backtrace down to the trampoline, at most */

typedef struct obj {
    uintptr_t start, end;       /* executable range */
    uintptr_t hdr;              /* .eh_frame_hdr address (the segment base) */
    const int32_t *table;       /* pairs (initial_loc, fde) relative to hdr */
    size_t count;
} obj;

typedef struct objset {
    size_t n;
    obj o[MAX_OBJECTS];
} objset;

static objset sets[2];
static _Atomic int cur_set;
static _Atomic int in_flight;
static _Atomic int loader_busy;
static pp_mutex refresh_lock = PP_MUTEX_INIT;
static unsigned long long seen_adds, seen_subs;

/* libunwind's registrations, one per object of the current set. */
static unw_dyn_info_t dyn[2][MAX_OBJECTS];

/* --- reading DWARF-encoded pointers from mapped memory --- */

static uintptr_t read_uleb(const uint8_t **p)
{
    uintptr_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
        b = *(*p)++;
        if (shift < 64)
            v |= (uintptr_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    return v;
}

static intptr_t read_sleb(const uint8_t **p)
{
    intptr_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
        b = *(*p)++;
        if (shift < 64)
            v |= (intptr_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= -((intptr_t)1 << shift);
    return v;
}

/* Reads a pointer with DW_EH_PE encoding `enc`; `base` is the datarel base.
 * Returns 0 for encodings it does not know. async-signal-safe */
static int read_encoded(const uint8_t **p, uint8_t enc, uintptr_t base, uintptr_t *out)
{
    const uint8_t *start = *p;
    uintptr_t v;
    if (enc == 0xff) /* DW_EH_PE_omit */
        return 0;
    switch (enc & 0x0f) {
    case 0x00: memcpy(&v, *p, 8); *p += 8; break;                             /* absptr */
    case 0x01: v = read_uleb(p); break;                                       /* uleb128 */
    case 0x02: { uint16_t x; memcpy(&x, *p, 2); *p += 2; v = x; break; }      /* udata2 */
    case 0x03: { uint32_t x; memcpy(&x, *p, 4); *p += 4; v = x; break; }      /* udata4 */
    case 0x04: memcpy(&v, *p, 8); *p += 8; break;                             /* udata8 */
    case 0x09: v = (uintptr_t)read_sleb(p); break;                            /* sleb128 */
    case 0x0a: { int16_t x; memcpy(&x, *p, 2); *p += 2; v = (uintptr_t)(intptr_t)x; break; }
    case 0x0b: { int32_t x; memcpy(&x, *p, 4); *p += 4; v = (uintptr_t)(intptr_t)x; break; }
    case 0x0c: memcpy(&v, *p, 8); *p += 8; break;                             /* sdata8 */
    default: return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += (uintptr_t)start; break; /* pcrel */
    case 0x30: v += base; break;             /* datarel */
    default: return 0;
    }
    *out = v;
    return 1;
}

static __thread int in_handler;

#ifndef __SANITIZE_THREAD__
/* The warm path: libunwind's per-thread trace cache. async-signal-safe */
static int walk(uint64_t *pcs, int room)
{
    return unw_backtrace((void **)pcs, room);
}
#else
/* ThreadSanitizer builds: the trace cache's per-thread destructor runs after
 * TSan has torn the thread down, so step without it. async-signal-safe */
static int walk(uint64_t *pcs, int room)
{
    unw_context_t ctx;
    unw_cursor_t c;
    int n = 0;
    unw_getcontext(&ctx);
    if (unw_init_local(&c, &ctx) < 0)
        return 0;
    do {
        unw_word_t ip;
        if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
            break;
        pcs[n++] = ip;
    } while (n < room && unw_step(&c) > 0);
    return n;
}
#endif

/* async-signal-safe */
int pp_unwind_signal(void *ucontext, uint64_t *pcs, int max, int *truncated)
{
    *truncated = 0;
    ucontext_t *uc = ucontext;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    atomic_fetch_add(&in_flight, 1);
    if (atomic_load(&loader_busy) || max < 1) {
        atomic_fetch_sub(&in_flight, 1);
        pcs[0] = pc;
        return 1;
    }
    /* The walk starts here, in the handler; the frames up to the signal
     * trampoline are dropped below. Room for them, and one frame more than
     * max to tell a truncated stack. */
    int room = max + 1 + HANDLER_FRAMES;
    if (room > PPROF_MAX_FRAMES + 1)
        room = PPROF_MAX_FRAMES + 1;
    in_handler = 1;
    int n = walk(pcs, room);
    in_handler = 0;
    atomic_fetch_sub(&in_flight, 1);
    int first = -1;
    for (int i = 0; i < n && i <= HANDLER_FRAMES; i++)
        if (pcs[i] == pc) {
            first = i;
            break;
        }
    if (first < 0) {
        pcs[0] = pc;
        return 1;
    }
    n -= first;
    if (n > max) {
        n = max;
        *truncated = 1;
    }
    pcs[0] = pc;
    for (int i = 1; i < n; i++)
        pcs[i] = pcs[i + first] - 1; /* return address -> call site */
    return n;
}

/* --- registration, outside handlers --- */

static void wait_for_handlers(void)
{
    while (atomic_load(&in_flight) > 0)
        sched_yield();
}

static int collect_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    objset *s = arg;
    const ElfW(Phdr) *eh = NULL;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_EH_FRAME)
            eh = ph;
        else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < lo)
                lo = a;
            if (a + ph->p_memsz > hi)
                hi = a + ph->p_memsz;
        }
    }
    if (!eh || lo >= hi || s->n == MAX_OBJECTS)
        return 0;
    const uint8_t *hdr = (const uint8_t *)(info->dlpi_addr + eh->p_vaddr);
    /* version 1, eh_frame_ptr encoding, fde_count encoding, table encoding */
    if (hdr[0] != 1 || hdr[3] != 0x3b) /* table must be datarel|sdata4 */
        return 0;
    const uint8_t *p = hdr + 4;
    uintptr_t eh_frame, count;
    if (!read_encoded(&p, hdr[1], (uintptr_t)hdr, &eh_frame) ||
        !read_encoded(&p, hdr[2], (uintptr_t)hdr, &count))
        return 0;
    s->o[s->n++] = (obj){.start = lo, .end = hi, .hdr = (uintptr_t)hdr,
                         .table = (const int32_t *)p, .count = count};
    return 0;
}

static int by_start(const void *a, const void *b)
{
    const obj *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int count_changes(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    unsigned long long *v = arg;
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1;
}

static void refresh_locked(void)
{
    int old = atomic_load(&cur_set), next = !old;
    objset *s = &sets[next];
    s->n = 0;
    dl_iterate_phdr(collect_object, s);
    qsort(s->o, s->n, sizeof s->o[0], by_start);
    for (size_t i = 0; i < s->n; i++) {
        unw_dyn_info_t *d = &dyn[next][i];
        memset(d, 0, sizeof *d);
        d->start_ip = s->o[i].start;
        d->end_ip = s->o[i].end;
        d->format = UNW_INFO_FORMAT_REMOTE_TABLE;
        d->u.rti.segbase = s->o[i].hdr;
        d->u.rti.table_data = (unw_word_t)(uintptr_t)s->o[i].table;
        d->u.rti.table_len = s->o[i].count * 8 / sizeof(unw_word_t);
        _U_dyn_register(d);
    }
    atomic_store(&cur_set, next);
    for (size_t i = 0; i < sets[old].n; i++)
        _U_dyn_cancel(&dyn[old][i]);
    sets[old].n = 0;
    /* Handlers may still be reading the old set: let them finish before a
     * later refresh overwrites it. */
    wait_for_handlers();
}

void pp_unwind_refresh(int force)
{
    unsigned long long v[2] = {0, 0};
    dl_iterate_phdr(count_changes, v);
    pp_mutex_lock(&refresh_lock);
    if (force || v[0] != seen_adds || v[1] != seen_subs) {
        seen_adds = v[0];
        seen_subs = v[1];
        refresh_locked();
    }
    pp_mutex_unlock(&refresh_lock);
}

void pp_unwind_thread_prepare(void)
{
    uint64_t pcs[4];
    walk(pcs, 4);
}

void pp_unwind_init(void)
{
    /* libunwind initialises itself, and each thread's trace cache, on first
     * use: do that here, not in a handler. */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    pp_unwind_thread_prepare();
    pp_unwind_refresh(1);
}

void pp_unwind_loader_enter(void)
{
    atomic_fetch_add(&loader_busy, 1);
    wait_for_handlers();
}

void pp_unwind_loader_exit(void)
{
    pp_unwind_refresh(0);
    atomic_fetch_sub(&loader_busy, 1);
}

/* --- loader wrappers ---
 * dl_iterate_phdr is how libunwind finds tables it has not been given: in a
 * handler it answers "no objects", so libunwind falls back to its
 * frame-based step instead of taking the loader's lock. */

#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
/* (Sanitizer runtimes intercept dl_iterate_phdr themselves, before any
 * constructor runs; sanitizer builds go without this guard.) */
typedef int (*iterate_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);

__attribute__((visibility("default"))) int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *),
                                                           void *data)
{
    static iterate_fn real;
    if (in_handler)
        return 0; /* async-signal-safe path */
    if (!real)
        real = (iterate_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
    return real(cb, data);
}
#endif

/* dlclose
 * dlopen is not wrapped (a wrapper would change the caller that the loader
 * uses for RPATH and namespaces); new objects are registered by the
 * collector's periodic refresh, and until then stacks stop at them. */

typedef int (*dlclose_fn)(void *);

__attribute__((visibility("default"))) int dlclose(void *handle)
{
    static dlclose_fn real;
    if (!real)
        real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
    pp_unwind_loader_enter();
    int r = real(handle);
    pp_unwind_loader_exit();
    return r;
}
