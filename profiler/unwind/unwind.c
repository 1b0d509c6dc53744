/* unwind.c: stack capture that is safe inside a signal handler.
 *
 * The walk starts from the signal's ucontext and steps frame by frame with
 * the DWARF call-frame information of .eh_frame (cfi.c), falling back to
 * the frame-pointer chain where an address has no FDE. It takes no lock,
 * allocates nothing, makes no system call and touches no thread-local
 * storage that could go through __tls_get_addr: after any dlopen of a
 * library with thread-local variables, __tls_get_addr may call malloc on
 * the thread's next access, and a handler that interrupted malloc would
 * corrupt the heap. (That is why libunwind, whose caches are thread-local
 * through __tls_get_addr, is not used here.)
 *
 * Tables are found ahead of time: outside any handler, the .eh_frame_hdr
 * search table of every loaded object is recorded in a sorted array, so the
 * handler never calls dl_iterate_phdr or takes the loader's lock. Objects
 * come and go: the collector re-reads the list when the loader's add/remove
 * counters change (until then, code of a new object is walked by frame
 * pointers), and interpose/ wraps dlclose. Before an object is unmapped,
 * `loader_busy` is raised and the wrapper waits until no handler is inside
 * a walk (handlers count themselves in `in_flight`); handlers that start
 * meanwhile record only the interrupted PC. The array is double buffered
 * and a buffer is reused only after the same grace period.
 *
 * Every stack read is checked against the thread's stack bounds (recorded
 * outside the handler for threads that started through pthread_create and
 * for the main thread; a window above the interrupted stack pointer for
 * others), and each frame's stack pointer must be above the previous one,
 * so a corrupt or unusual stack ends the walk instead of faulting. Each
 * step says why it could not go on (enum pp_unwind_end, unwind.h): the
 * outermost frame is a normal end, anything else a cut stack that the
 * callers mark.
 *
 * The architecture seam is arch/arch.h: DWARF numbering, the signal
 * context's registers, the frame-record layout, return-address signing.
 * Registers live in one array indexed by DWARF number, with a slot for
 * the frame's pc (PP_REG_PC: on x86-64 the return-address column itself;
 * on arm64 slot 32, since there a leaf's return address stays in x30).
 */
#define _GNU_SOURCE
#include "unwind.h"
#include "cfi.h"
#include "arch/arch.h"
#include "base/base.h"

#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_OBJECTS 1024
#define UNKNOWN_STACK_WINDOW (128 * 1024) /* readable above SP when bounds are unknown */

typedef struct obj {
    uintptr_t start, end;       /* executable range */
    pp_cfi_table cfi;
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

/* Rows of the common shape (CFA = SP or FP + offset, the return address
 * saved at CFA + offset or, on arm64, still in x30, FP unchanged or saved
 * at CFA + offset, offsets multiples of 8 within 4 KiB), computed once per
 * pc and packed with a tag into one word, so a warm walk costs a load per
 * frame. Direct-mapped; written and read with relaxed atomics, so a race
 * at worst loses an entry. Cleared when objects are unloaded.
 *   bit 63 valid | 39-62 tag | 38 CFA on FP | 22-37 CFA offset |
 *   21 FP saved | 20 return address in its register |
 *   10-19 return address offset / 8 + 512 | 0-9 FP offset / 8 + 512
 * The outermost frame (return address undefined, as in clone3 and _start)
 * is cached too, as CFA offset 0xffff: every walk ends there. */
#define CACHE_OUTERMOST 0xffffull
#define CACHE_BITS 11 /* 16 KiB */
static _Atomic uint64_t row_cache[1 << CACHE_BITS] __attribute__((aligned(4096)));

/* The loader's own r_debug, found through the executable's DT_DEBUG entry
 * (a direct reference to _r_debug from an executable would read a copy
 * made at start-up, frozen). NULL when unknown. */
static const struct r_debug *loader_debug;

/* This thread's stack, [lo, hi); 0 when unknown. Initial-exec TLS. */
static __thread uintptr_t stack_lo, stack_hi;

/* --- the walk (async-signal-safe) --- */

typedef struct bounds {
    uintptr_t lo, hi;
    pid_t checked_pid;    /* bounds not known for sure: read with process_vm_readv */
    int refused;          /* a read was refused since the step began */
} bounds;

/* A step's result: STEP_OK, or how the walk ends there (enum pp_unwind_end). */
#define STEP_OK (-1)

/* async-signal-safe */
static int read_stack(void *ctx, uint64_t addr, uint64_t *value)
{
    bounds *b = ctx;
    if (addr < b->lo || addr > b->hi - 8 || (addr & 7)) {
        b->refused = 1;
        return 0;
    }
    if (!b->checked_pid) {
        memcpy(value, (const void *)(uintptr_t)addr, 8);
        return 1;
    }
    /* A system call that fails with EFAULT where a load would fault. */
    struct iovec local = {value, 8}, remote = {(void *)(uintptr_t)addr, 8};
    if (process_vm_readv(b->checked_pid, &local, 1, &remote, 1, 0) == 8)
        return 1;
    b->refused = 1;
    return 0;
}

/* async-signal-safe */
static const obj *find_object(const objset *s, uintptr_t pc)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pc < s->o[mid].start)
            hi = mid;
        else if (pc >= s->o[mid].end)
            lo = mid + 1;
        else
            return &s->o[mid];
    }
    return NULL;
}

/* Why a CFI step failed: a refused read, or a rule it cannot apply.
 * async-signal-safe */
static int cfi_failure(const bounds *b)
{
    return b->refused ? PP_UNWIND_OFF_STACK : PP_UNWIND_NO_INFO;
}

/* One step by the CFI row: regs become the caller's. Returns STEP_OK,
 * PP_UNWIND_WHOLE at the outermost frame (the return address undefined),
 * or why it cannot step. async-signal-safe */
static int step_cfi(const pp_cfi_row *row, uint64_t *regs, bounds *b)
{
    uint64_t cfa, caller[PP_CFI_REGS];
    if (row->r[PP_REG_RA].kind == PP_RULE_UNDEF)
        return PP_UNWIND_WHOLE; /* the outermost frame */
    if (row->cfa_expr) {
        if (!pp_cfi_eval(row->cfa_expr, row->cfa_expr_len, regs, 0, 0, read_stack, b, &cfa))
            return cfi_failure(b);
    } else {
        if (row->cfa_reg < 0 || row->cfa_reg >= PP_CFI_REGS)
            return PP_UNWIND_NO_INFO;
        cfa = regs[row->cfa_reg] + (uint64_t)row->cfa_off;
    }
    for (int r = 0; r < PP_CFI_REGS; r++) {
        const pp_cfi_rule *rule = &row->r[r];
        uint64_t v = regs[r], addr;
        switch (rule->kind) {
        case PP_RULE_OFFSET:
            if (!read_stack(b, cfa + (uint64_t)rule->off, &v))
                return PP_UNWIND_OFF_STACK;
            break;
        case PP_RULE_VAL_OFFSET: v = cfa + (uint64_t)rule->off; break;
        case PP_RULE_REG:
            if (rule->off < 0 || rule->off >= PP_CFI_REGS)
                return PP_UNWIND_NO_INFO;
            v = regs[rule->off];
            break;
        case PP_RULE_EXPR:
            if (!pp_cfi_eval(rule->expr, (size_t)rule->off, regs, 1, cfa, read_stack, b, &addr) ||
                !read_stack(b, addr, &v))
                return cfi_failure(b);
            break;
        case PP_RULE_VAL_EXPR:
            if (!pp_cfi_eval(rule->expr, (size_t)rule->off, regs, 1, cfa, read_stack, b, &v))
                return cfi_failure(b);
            break;
        case PP_RULE_UNDEF: break; /* not the return address (checked above) */
        default: /* same value */
            if (r == PP_REG_RA && !PP_ARCH_RA_IN_REG)
                return PP_UNWIND_NO_INFO; /* x86-64's return address is never in a register */
            break;
        }
        caller[r] = v;
    }
    caller[PP_REG_SP] = cfa;
    caller[PP_REG_PC] = pp_arch_strip_ra(caller[PP_REG_RA]);
    memcpy(regs, caller, sizeof caller);
    return STEP_OK;
}

static uint64_t pc_hash(uintptr_t pc) /* async-signal-safe */
{
    return (uint64_t)pc * 0x9e3779b97f4a7c15ull;
}

/* async-signal-safe */
static uint64_t cache_get(uintptr_t pc)
{
    uint64_t h = pc_hash(pc);
    uint64_t e = atomic_load_explicit(&row_cache[h >> (64 - CACHE_BITS)], memory_order_relaxed);
    return (e >> 63) && ((e >> 39) & 0xffffff) == ((h >> 8) & 0xffffff) ? e : 0;
}

/* 1 if a saved register's offset from the CFA fits the cache's 10 bits.
 * async-signal-safe */
static int small_offset(int64_t off)
{
    return off % 8 == 0 && off >= -4096 && off < 4096;
}

/* Stores the row for pc if it has the common shape. async-signal-safe */
static void cache_put(uintptr_t pc, const pp_cfi_row *row)
{
    uint64_t h = pc_hash(pc);
    if (row->r[PP_REG_RA].kind == PP_RULE_UNDEF) {
        uint64_t e = 1ull << 63 | ((h >> 8) & 0xffffff) << 39 | CACHE_OUTERMOST << 22;
        atomic_store_explicit(&row_cache[h >> (64 - CACHE_BITS)], e, memory_order_relaxed);
        return;
    }
    const pp_cfi_rule *ra = &row->r[PP_REG_RA], *fp = &row->r[PP_REG_FP];
    int ra_in_reg = PP_ARCH_RA_IN_REG && ra->kind == PP_RULE_SAME;
    if (row->cfa_expr || (row->cfa_reg != PP_REG_SP && row->cfa_reg != PP_REG_FP) || row->cfa_off < 0 ||
        row->cfa_off >= 65536 || (!ra_in_reg && (ra->kind != PP_RULE_OFFSET || !small_offset(ra->off))))
        return;
    if (fp->kind != PP_RULE_SAME && (fp->kind != PP_RULE_OFFSET || !small_offset(fp->off)))
        return;
    for (int r = 0; r < PP_CFI_REGS; r++) /* other registers restored only by the full step */
        if (r != PP_REG_FP && r != PP_REG_SP && r != PP_REG_RA && r != PP_REG_PC && row->r[r].kind != PP_RULE_SAME &&
            row->r[r].kind != PP_RULE_OFFSET && row->r[r].kind != PP_RULE_UNDEF)
            return;
    if (row->cfa_off == CACHE_OUTERMOST)
        return;
    uint64_t e = 1ull << 63 | ((h >> 8) & 0xffffff) << 39 | (uint64_t)(row->cfa_reg == PP_REG_FP) << 38 |
                 (uint64_t)row->cfa_off << 22;
    if (ra_in_reg)
        e |= 1ull << 20;
    else
        e |= (uint64_t)(ra->off / 8 + 512) << 10;
    if (fp->kind == PP_RULE_OFFSET)
        e |= 1ull << 21 | (uint64_t)(fp->off / 8 + 512);
    atomic_store_explicit(&row_cache[h >> (64 - CACHE_BITS)], e, memory_order_relaxed);
}

/* One step by a cached row; returns as step_cfi. async-signal-safe */
static int step_cached(uint64_t e, uint64_t *regs, bounds *b)
{
    if (((e >> 22) & 0xffff) == CACHE_OUTERMOST)
        return PP_UNWIND_WHOLE;
    uint64_t cfa = regs[(e >> 38) & 1 ? PP_REG_FP : PP_REG_SP] + ((e >> 22) & 0xffff), ra, fp;
    if ((e >> 20) & 1) {
        ra = regs[PP_REG_RA];
    } else {
        int64_t off = ((int64_t)((e >> 10) & 0x3ff) - 512) * 8;
        if (!read_stack(b, cfa + (uint64_t)off, &ra))
            return PP_UNWIND_OFF_STACK;
    }
    if ((e >> 21) & 1) {
        int64_t off = ((int64_t)(e & 0x3ff) - 512) * 8;
        if (!read_stack(b, cfa + (uint64_t)off, &fp))
            return PP_UNWIND_OFF_STACK;
        regs[PP_REG_FP] = fp;
    }
    regs[PP_REG_SP] = cfa;
    regs[PP_REG_RA] = ra;
    regs[PP_REG_PC] = pp_arch_strip_ra(ra);
    return STEP_OK;
}

/* One step out of an interrupted function that keeps its caller's pc in
 * the link register and took no stack (an arm64 PLT stub, which has no
 * CFI): the leaf rule of the CFI, without the CFI. async-signal-safe */
static int step_link(uint64_t *regs)
{
    regs[PP_REG_PC] = pp_arch_strip_ra(regs[PP_REG_RA]);
    return STEP_OK;
}

/* The code of PP_HIDDEN_FRAME functions (the linker's bounds of their
 * section; weak: a program that links none has none). */
extern const char __start_pp_hidden_text[] __attribute__((weak, visibility("hidden")));
extern const char __stop_pp_hidden_text[] __attribute__((weak, visibility("hidden")));

/* 1 for a call site inside a PP_HIDDEN_FRAME function. async-signal-safe */
static inline int hidden(uintptr_t at)
{
    return at - (uintptr_t)__start_pp_hidden_text < (uintptr_t)(__stop_pp_hidden_text - __start_pp_hidden_text);
}

/* One step by the frame-pointer chain: [fp] the caller's fp, [fp+8] the
 * return address (x86-64's push rbp, arm64's frame record). Used where
 * the pc has no CFI: a frame pointer of 0 is the chain's end (the ABIs'
 * outermost frame: PP_UNWIND_WHOLE), one that leads to no record in the
 * stack means the frame cannot be followed (PP_UNWIND_NO_INFO: the pc's
 * missing CFI is the cause, the frame pointer only a fallback).
 * async-signal-safe */
static int step_fp(uint64_t *regs, bounds *b)
{
    uint64_t fp = regs[PP_REG_FP], ra, next;
    if (fp == 0)
        return PP_UNWIND_WHOLE;
    if (fp < regs[PP_REG_SP] || !read_stack(b, fp, &next) || !read_stack(b, fp + 8, &ra))
        return PP_UNWIND_NO_INFO;
    regs[PP_REG_FP] = next;
    regs[PP_REG_SP] = fp + 16;
    regs[PP_REG_RA] = ra;
    regs[PP_REG_PC] = pp_arch_strip_ra(ra);
    return STEP_OK;
}

/* Walks from regs; the first pc is not a return address. Sets *end (see
 * unwind.h). async-signal-safe */
static int walk(uint64_t *regs, uint64_t *pcs, int max, int *end)
{
    const objset *s = &sets[atomic_load(&cur_set)];
    bounds b = {stack_lo, stack_hi, 0, 0};
    if (!b.hi || regs[PP_REG_SP] < b.lo || regs[PP_REG_SP] >= b.hi) {
        /* Unknown or foreign stack (a thread that did not start through
         * pthread_create, a coroutine): a window above the stack pointer,
         * every read checked by the kernel. */
        b.lo = regs[PP_REG_SP] - 128;
        b.hi = regs[PP_REG_SP] + UNKNOWN_STACK_WINDOW;
        b.checked_pid = (pid_t)syscall(SYS_getpid);
    }
    int n = 0, signal_frame = 1;
    *end = PP_UNWIND_WHOLE;
    for (;;) {
        uintptr_t pc = regs[PP_REG_PC];
        if (pc == 0)
            break; /* the outermost frame */
        /* A caller's pc is a return address: look up (and report) the call. */
        uintptr_t at = signal_frame ? pc : pc - 1;
        /* A cached row is never the trampoline's (its row is an
         * expression), so a hit needs neither the object nor that check. */
        uint64_t e = cache_get(at);
        const obj *o = e ? NULL : find_object(s, at);
        if (o && !signal_frame && pc + PP_ARCH_SIGRETURN_LEN <= o->end && pp_arch_is_sigreturn(pc)) {
            /* A handler's frame returns into the trampoline: continue with
             * the context it saved (the trampoline itself is not shown). */
            uint64_t uca = regs[PP_REG_SP] + PP_ARCH_SIGFRAME_UC;
            if (b.checked_pid || uca < b.lo || uca + sizeof(ucontext_t) > b.hi) {
                *end = PP_UNWIND_OFF_STACK;
                break;
            }
            pp_arch_load_context((const ucontext_t *)(uintptr_t)uca, regs);
            signal_frame = 1;
            continue;
        }
        if (signal_frame || !hidden(at)) {
            if (n == max) {
                *end = PP_UNWIND_TRUNCATED;
                break;
            }
            pcs[n++] = at;
        }
        uint64_t sp = regs[PP_REG_SP];
        pp_cfi_row row;
        int step;
        b.refused = 0;
        if (e) {
            step = step_cached(e, regs, &b);
        } else if (o && pp_cfi_find(&o->cfi, at, &row)) {
            cache_put(at, &row);
            step = step_cfi(&row, regs, &b);
        } else if (PP_ARCH_RA_IN_REG && signal_frame && o && pp_arch_in_plt_stub(at, o->start, o->end)) {
            step = step_link(regs);
        } else {
            step = step_fp(regs, &b);
        }
        if (step != STEP_OK) {
            *end = step;
            break;
        }
        /* The stack pointer must grow, but for the step out of an
         * interrupted arm64 leaf, whose caller's pc was still in x30 and
         * whose frame may take no stack at all. */
        if (regs[PP_REG_SP] < sp || (regs[PP_REG_SP] == sp && !(PP_ARCH_RA_IN_REG && signal_frame))) {
            *end = PP_UNWIND_SP_STUCK;
            break;
        }
        signal_frame = 0;
    }
    return n;
}

/* async-signal-safe */
int pp_unwind_signal(void *ucontext, uint64_t *pcs, int max, int *end)
{
    *end = PP_UNWIND_WHOLE;
    const ucontext_t *uc = ucontext;
    atomic_fetch_add(&in_flight, 1);
    int n = 0;
    /* r_state is not RT_CONSISTENT while the loader maps or unmaps an
     * object, including unloads that bypass the dlclose wrapper. */
    const struct r_debug *rd = loader_debug;
    if (!atomic_load(&loader_busy) && (!rd || rd->r_state == RT_CONSISTENT) && max >= 1) {
        uint64_t regs[PP_CFI_REGS];
        pp_arch_load_context(uc, regs);
        n = walk(regs, pcs, max, end);
    } else if (max >= 1) {
        *end = PP_UNWIND_UNLOADING;
    }
    atomic_fetch_sub(&in_flight, 1);
    if (n == 0 && max >= 1) {
        pcs[0] = pp_arch_context_pc(uc);
        n = 1;
    }
    return n;
}

/* async-signal-safe, malloc-safe */
__attribute__((noinline)) int pp_unwind_here(uint64_t caller, uint64_t *pcs, int max, int *end)
{
    *end = PP_UNWIND_WHOLE;
    uint64_t tmp[PP_MAX_WALK];
    int n = 0;
    atomic_fetch_add(&in_flight, 1);
    const struct r_debug *rd = loader_debug;
    if (!atomic_load(&loader_busy) && (!rd || rd->r_state == RT_CONSISTENT) && max >= 1) {
        uint64_t regs[PP_CFI_REGS] = {0};
        PP_ARCH_CAPTURE_HERE(regs);
        int extra = max + 8 < PP_MAX_WALK ? max + 8 : PP_MAX_WALK; /* room for the profiler's frames */
        int how;
        n = walk(regs, tmp, extra, &how);
        /* Drop the profiler's own frames: everything before the call site
         * in the hooked function's caller. */
        int first = -1;
        for (int i = 0; i < n; i++)
            if (tmp[i] == caller - 1) {
                first = i;
                break;
            }
        if (first < 0) {
            /* Cut before the caller's frame: the call site alone, and
             * why the walk could not reach it. */
            n = 0;
            *end = how == PP_UNWIND_WHOLE || how == PP_UNWIND_TRUNCATED ? PP_UNWIND_NO_INFO : how;
        } else {
            n -= first;
            if (n > max) { /* truncation wins over a stop beyond max */
                n = max;
                how = PP_UNWIND_TRUNCATED;
            }
            memcpy(pcs, tmp + first, (size_t)n * sizeof *pcs);
            *end = how;
        }
    } else if (max >= 1) {
        *end = PP_UNWIND_UNLOADING;
    }
    atomic_fetch_sub(&in_flight, 1);
    if (n == 0 && max >= 1) {
        pcs[0] = caller - 1;
        n = 1;
    }
    return n;
}

/* A thread stopped in the kernel: pc and sp from /proc, the frame pointer guessed. */
int pp_unwind_remote(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t *pcs, int max, int *end)
{
    *end = PP_UNWIND_WHOLE;
    int n = 0;
    atomic_fetch_add(&in_flight, 1);
    const struct r_debug *rd = loader_debug;
    if (!atomic_load(&loader_busy) && (!rd || rd->r_state == RT_CONSISTENT) && max >= 1) {
        uint64_t regs[PP_CFI_REGS] = {0};
        regs[PP_REG_PC] = pc;
        regs[PP_REG_SP] = sp;
        regs[PP_REG_FP] = fp;
        n = walk(regs, pcs, max, end);
    } else if (max >= 1) {
        *end = PP_UNWIND_UNLOADING;
    }
    atomic_fetch_sub(&in_flight, 1);
    if (n == 0 && max >= 1) {
        pcs[0] = pc;
        n = 1;
    }
    return n;
}

/* 1 if the bytes before `ra` in loaded code end in a call instruction. */
int pp_unwind_after_call(uint64_t ra)
{
    ra = pp_arch_strip_ra(ra);
    const objset *s = &sets[atomic_load(&cur_set)];
    const obj *o = find_object(s, ra - 1);
    if (!o || ra < o->start + 8)
        return 0;
    /* Read through the kernel: the object may be unloaded meanwhile. */
    uint8_t buf[8];
    struct iovec local = {buf, 8}, remote = {(void *)(uintptr_t)(ra - 8), 8};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 8)
        return 0;
    return pp_arch_after_call(buf);
}

/* --- the object list, outside handlers --- */

static void clear_cache(void)
{
    for (size_t i = 0; i < sizeof row_cache / sizeof row_cache[0]; i++)
        atomic_store_explicit(&row_cache[i], 0, memory_order_relaxed);
}

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
    if (lo >= hi || s->n == MAX_OBJECTS)
        return 0;
    obj *o = &s->o[s->n];
    memset(o, 0, sizeof *o);
    o->start = lo;
    o->end = hi;
    /* The unwind tables may be read only within the loaded segment that
     * holds them (.eh_frame_hdr and .eh_frame share one). */
    for (int i = 0; eh && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && eh->p_vaddr >= ph->p_vaddr && eh->p_vaddr < ph->p_vaddr + ph->p_memsz &&
            eh->p_memsz <= ph->p_vaddr + ph->p_memsz - eh->p_vaddr) {
            uintptr_t seg = info->dlpi_addr + ph->p_vaddr;
            pp_cfi_table_init(&o->cfi, (const uint8_t *)(info->dlpi_addr + eh->p_vaddr), eh->p_memsz, seg,
                              seg + ph->p_memsz);
            break;
        }
    }
    s->n++;
    return 0;
}

/* Finds r_debug in the executable's dynamic section (the first object). */
static int find_debug(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_DEBUG)
                loader_debug = (const struct r_debug *)d->d_un.d_ptr;
    }
    return 1; /* the executable only */
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
    int next = !atomic_load(&cur_set);
    objset *s = &sets[next];
    s->n = 0;
    dl_iterate_phdr(collect_object, s);
    qsort(s->o, s->n, sizeof s->o[0], by_start);
    atomic_store(&cur_set, next);
    /* Handlers may still be reading the old set: let them finish before a
     * later refresh overwrites it. */
    wait_for_handlers();
}

void pp_unwind_refresh(int force)
{
    unsigned long long v[2] = {0, 0};
    dl_iterate_phdr(count_changes, v);
    pp_mutex_lock(&refresh_lock);
    if (v[1] != seen_subs) /* an unload the wrapper did not see */
        clear_cache();
    if (force || v[0] != seen_adds || v[1] != seen_subs) {
        seen_adds = v[0];
        seen_subs = v[1];
        refresh_locked();
    }
    pp_mutex_unlock(&refresh_lock);
}

void pp_unwind_thread_prepare(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    pp_own_heap_enter(); /* glibc allocates for the attributes: the profiler's */
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            stack_lo = (uintptr_t)addr;
            stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    pp_own_heap_leave();
}

void pp_unwind_thread_stack(uintptr_t *lo, uintptr_t *hi)
{
    *lo = stack_lo;
    *hi = stack_hi;
}

extern void *__libc_stack_end; /* the loader's: the main thread's stack pointer at start */

void pp_unwind_init(void)
{
    dl_iterate_phdr(find_debug, NULL);
    /* The main thread at start: its stack ends above the loader's first
     * stack pointer and may grow to RLIMIT_STACK below (as
     * pthread_getattr_np says, which reads /proc/self/maps for it: a tenth
     * of a millisecond of every exec). */
    struct rlimit rl;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (syscall(SYS_gettid) == getpid() && __libc_stack_end && getrlimit(RLIMIT_STACK, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < ((uintptr_t)__libc_stack_end >> 1)) {
        stack_hi = ((uintptr_t)__libc_stack_end + page - 1) & ~(page - 1);
        stack_lo = stack_hi - rl.rlim_cur;
    } else {
        pp_unwind_thread_prepare();
    }
    pp_unwind_refresh(1);
}

/* The refresh lock is not held across fork: a thread in dlclose may hold
 * a mutex of the program's that another library's fork handler waits for.
 * A refresh under way in the parent was filling the set not in use, so the
 * child's current set is whole; the child forgets the cached rows and what
 * it has seen, so its next refresh starts over. */
void pp_unwind_fork_child(void)
{
    /* Threads that were mid-walk or mid-dlclose in the parent do not exist
     * here. */
    atomic_store(&in_flight, 0);
    atomic_store(&loader_busy, 0);
    refresh_lock = (pp_mutex)PP_MUTEX_INIT;
    clear_cache();
    seen_adds = seen_subs = ~0ull;
}

void pp_unwind_loader_enter(void)
{
    atomic_fetch_add(&loader_busy, 1);
    wait_for_handlers();
}

void pp_unwind_loader_exit(void)
{
    /* Unloaded code's addresses may be reused: forget their rows. No
     * handler walks while loader_busy is raised. */
    clear_cache();
    pp_unwind_refresh(0);
    atomic_fetch_sub(&loader_busy, 1);
}
