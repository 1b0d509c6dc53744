/* heap_hooks_cxx.c: C++ operator new and delete, interposed.
 *
 * tcmalloc and jemalloc define their own operators, which do not go
 * through malloc, so every variant is interposed here (by its mangled
 * name; this file is C) and forwarded to the next definition, found on
 * first use. A sampled object is allocated as malloc's are (the next
 * allocator's malloc, or memalign for an aligned new) and released with its
 * free. While a forwarded operator new runs, the re-entry guard keeps the
 * malloc it may call (libstdc++'s does) from sampling the same allocation
 * again; the guard is restored by a cleanup that also runs when the
 * operator throws (this file is built with -fexceptions). When no C++
 * runtime is loaded, the operators fall back to malloc and free.
 */
#ifndef PPROF_NO_HOOKS /* sanitizer builds: their runtime owns malloc */
#define _GNU_SOURCE
#include "heap/heap.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define API __attribute__((visibility("default")))
#define CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))

enum { NEW, NEW_A, NEW_NT, NEW_A_NT, NEW_ARR, NEW_ARR_A, NEW_ARR_NT, NEW_ARR_A_NT, NNEW };
static const char *const new_names[NNEW] = {
    "_Znwm", "_ZnwmSt11align_val_t", "_ZnwmRKSt9nothrow_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_Znam", "_ZnamSt11align_val_t", "_ZnamRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
};
enum { DEL, DEL_S, DEL_A, DEL_S_A, DEL_NT, DEL_A_NT, DEL_ARR, DEL_ARR_S, DEL_ARR_A, DEL_ARR_S_A,
       DEL_ARR_NT, DEL_ARR_A_NT, NDEL };
static const char *const del_names[NDEL] = {
    "_ZdlPv", "_ZdlPvm", "_ZdlPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdlPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPv", "_ZdaPvm", "_ZdaPvSt11align_val_t",
    "_ZdaPvmSt11align_val_t", "_ZdaPvRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};
static void *_Atomic new_fns[NNEW], *_Atomic del_fns[NDEL];

/* The next definition of an operator, looked up until one is loaded.
 * malloc-safe (dlsym's own allocations are not sampled: the guard is up) */
#define MISSING ((void *)1)   /* looked up, not found: retried now and then */
static _Atomic unsigned misses;

static void *lookup(void *_Atomic *slot, const char *name)
{
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (f == MISSING && (atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed) & 4095))
        return NULL; /* no C++ runtime after us (yet): dlsym is not called on every call */
    if ((f && f != MISSING) || !(pp_next_ready() || pp_next_resolve()))
        return f == MISSING ? NULL : f;
    int64_t saved[2];
    pp_heap_guard_enter(saved);
    f = pp_next_symbol(name, NULL);
    pp_heap_guard_leave(saved);
    atomic_store_explicit(slot, f ? f : MISSING, memory_order_release);
    return f;
}

static void guard_cleanup(int64_t (*saved)[2]) /* malloc-safe */
{
    pp_heap_guard_leave(*saved);
}

/* One operator new: sample, else forward under the guard. malloc-safe */
static void *new_impl(int which, size_t n, size_t align, const void *nothrow, uint64_t caller)
{
    if (pp_own_depth) /* the own heap's, through malloc */
        return align ? memalign(align, n ? n : 1) : malloc(n ? n : 1);
    if ((pp_heap_left -= (int64_t)n) <= 0 && pp_next_ready() && pp_heap_should_sample(n)) {
        void *p = align ? pp_next.memalign(align, n ? n : 1) : pp_next.malloc(n ? n : 1);
        if (p && pp_heap_sampled(p, n, caller) == 0)
            return p;
        /* Not tracked (tables full), so delete could not tell it must go to
         * free: give it back and let the real operator allocate (and report
         * a failure its own way). */
        if (p)
            pp_next.free(p);
    }
    void *f = lookup(&new_fns[which], new_names[which]);
    if (!f)
        return align ? memalign(align, n ? n : 1) : malloc(n ? n : 1);
    int64_t saved[2] __attribute__((cleanup(guard_cleanup)));
    pp_heap_guard_enter(saved);
    switch (which) {
    case NEW: case NEW_ARR: return ((void *(*)(size_t))f)(n);
    case NEW_A: case NEW_ARR_A: return ((void *(*)(size_t, size_t))f)(n, align);
    case NEW_NT: case NEW_ARR_NT: return ((void *(*)(size_t, const void *))f)(n, nothrow);
    default: return ((void *(*)(size_t, size_t, const void *))f)(n, align, nothrow);
    }
}

/* One operator delete: a sampled object goes to free, others forward.
 * malloc-safe */
static void del_impl(int which, void *p, size_t size, size_t align, const void *nothrow)
{
    if (!p)
        return;
    if (pp_own_owns(p)) {
        pp_own_free(p);
        return;
    }
    /* A sampled object came from the next allocator's malloc or memalign:
     * free it there, never through a sized delete. While a fork holds the
     * table, any object that may be sampled is handed to the table, which
     * gives it to free later (valid for every operator new's memory). */
    if (pp_heap_maybe_sampled(p)) {
        int sampled = pp_heap_freed(p);
        if (sampled > 0)
            pp_next.free(p);
        if (sampled)
            return;
    }
    void *f = lookup(&del_fns[which], del_names[which]);
    if (!f) {
        free(p);
        return;
    }
    switch (which) {
    case DEL: case DEL_ARR: ((void (*)(void *))f)(p); break;
    case DEL_S: case DEL_ARR_S: ((void (*)(void *, size_t))f)(p, size); break;
    case DEL_A: case DEL_ARR_A: ((void (*)(void *, size_t))f)(p, align); break;
    case DEL_S_A: case DEL_ARR_S_A: ((void (*)(void *, size_t, size_t))f)(p, size, align); break;
    case DEL_NT: case DEL_ARR_NT: ((void (*)(void *, const void *))f)(p, nothrow); break;
    default: ((void (*)(void *, size_t, const void *))f)(p, align, nothrow); break;
    }
}

#define NEW_OP(fn, sym, which, params, n, align, nt)                                           \
    API void *fn params __asm__(sym);                                                           \
    API void *fn params { return new_impl(which, n, align, nt, CALLER); }
#define DEL_OP(fn, sym, which, params, size, align, nt)                                        \
    API void fn params __asm__(sym);                                                            \
    API void fn params { del_impl(which, p, size, align, nt); }

/* malloc-safe, all of them */
NEW_OP(op_new, "_Znwm", NEW, (size_t n), n, 0, NULL)
NEW_OP(op_new_a, "_ZnwmSt11align_val_t", NEW_A, (size_t n, size_t a), n, a, NULL)
NEW_OP(op_new_nt, "_ZnwmRKSt9nothrow_t", NEW_NT, (size_t n, const void *t), n, 0, t)
NEW_OP(op_new_a_nt, "_ZnwmSt11align_val_tRKSt9nothrow_t", NEW_A_NT, (size_t n, size_t a, const void *t), n, a, t)
NEW_OP(op_new_arr, "_Znam", NEW_ARR, (size_t n), n, 0, NULL)
NEW_OP(op_new_arr_a, "_ZnamSt11align_val_t", NEW_ARR_A, (size_t n, size_t a), n, a, NULL)
NEW_OP(op_new_arr_nt, "_ZnamRKSt9nothrow_t", NEW_ARR_NT, (size_t n, const void *t), n, 0, t)
NEW_OP(op_new_arr_a_nt, "_ZnamSt11align_val_tRKSt9nothrow_t", NEW_ARR_A_NT, (size_t n, size_t a, const void *t), n, a, t)

DEL_OP(op_del, "_ZdlPv", DEL, (void *p), 0, 0, NULL)
DEL_OP(op_del_s, "_ZdlPvm", DEL_S, (void *p, size_t s), s, 0, NULL)
DEL_OP(op_del_a, "_ZdlPvSt11align_val_t", DEL_A, (void *p, size_t a), 0, a, NULL)
DEL_OP(op_del_s_a, "_ZdlPvmSt11align_val_t", DEL_S_A, (void *p, size_t s, size_t a), s, a, NULL)
DEL_OP(op_del_nt, "_ZdlPvRKSt9nothrow_t", DEL_NT, (void *p, const void *t), 0, 0, t)
DEL_OP(op_del_a_nt, "_ZdlPvSt11align_val_tRKSt9nothrow_t", DEL_A_NT, (void *p, size_t a, const void *t), 0, a, t)
DEL_OP(op_del_arr, "_ZdaPv", DEL_ARR, (void *p), 0, 0, NULL)
DEL_OP(op_del_arr_s, "_ZdaPvm", DEL_ARR_S, (void *p, size_t s), s, 0, NULL)
DEL_OP(op_del_arr_a, "_ZdaPvSt11align_val_t", DEL_ARR_A, (void *p, size_t a), 0, a, NULL)
DEL_OP(op_del_arr_s_a, "_ZdaPvmSt11align_val_t", DEL_ARR_S_A, (void *p, size_t s, size_t a), s, a, NULL)
DEL_OP(op_del_arr_nt, "_ZdaPvRKSt9nothrow_t", DEL_ARR_NT, (void *p, const void *t), 0, 0, t)
DEL_OP(op_del_arr_a_nt, "_ZdaPvSt11align_val_tRKSt9nothrow_t", DEL_ARR_A_NT, (void *p, size_t a, const void *t), 0, a, t)
#endif
