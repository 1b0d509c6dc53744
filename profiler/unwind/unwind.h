/* unwind.h: the interface of unwind/, stack capture.
 *
 * Stacks are walked with the objects' DWARF call-frame information
 * (.eh_frame_hdr, cfi.c) and fall back to frame pointers where there is
 * none; a walk starts from a signal's ucontext (CPU samples, thread dumps)
 * or from a hooked function's caller (malloc, locks). The loaded objects
 * are kept in two sets that the collector refreshes; interpose/ wraps
 * dlclose in pp_unwind_loader_enter/exit so no handler walks code being unmapped.
 *
 * Invariants: the walk is async-signal-safe and malloc-safe (no lock, no
 * allocation, no TLS through __tls_get_addr), bounded in depth, and reads
 * memory only inside known stacks or through the kernel. x86-64 and
 * arm64: the registers and their rules come from arch/arch.h.
 *
 * Every walk says how it ended (enum pp_unwind_end): at the thread's
 * outermost frame, deeper than the caller's room, or at a frame it could
 * not step out of, and why. Only these are a normal end: a pc of 0, a CFI
 * row whose return address is undefined (the outermost frames glibc
 * marks so on both processors: _start, and clone3's and clone's child
 * before start_thread), and a frame-pointer chain that reaches a frame
 * pointer of 0 (the chain's end by the ABI, where there is no CFI). A
 * stack that ends any other way is cut, and its callers end it with a
 * pseudo-frame that says so (model.h's pp_pc_stack_end), never silently.
 */
#ifndef PP_UNWIND_H
#define PP_UNWIND_H
#include <stdint.h>

/* Records the loaded objects' unwind tables and the main thread's stack.
 * Call once, outside any signal handler. */
void pp_unwind_init(void);
/* Records the calling thread's stack bounds for the walk; call on each new
 * thread, outside any handler. */
void pp_unwind_thread_prepare(void);
/* The calling thread's stack bounds as recorded (0, 0 when unknown). */
void pp_unwind_thread_stack(uintptr_t *lo, uintptr_t *hi);
/* Re-reads the object list if objects were loaded or unloaded (force:
 * always). Not async-signal-safe; takes the loader's lock. */
void pp_unwind_refresh(int force);
/* fork handlers (lifecycle.c) */
void pp_unwind_fork_child(void);
/* Brackets an unmapping of objects (see unwind.c): interpose/'s dlclose
 * wrapper. dlopen is not wrapped (a wrapper would change the caller that
 * the loader uses for RPATH and namespaces); new objects are registered by
 * the collector's periodic refresh. */
void pp_unwind_loader_enter(void);
void pp_unwind_loader_exit(void);

/* How a walk ended (the *end of the functions below). */
enum pp_unwind_end {
    PP_UNWIND_WHOLE = 0,    /* at the outermost frame: the stack is whole */
    PP_UNWIND_TRUNCATED,    /* the stack goes deeper than `max` frames */
    /* The walk stopped at its last frame: */
    PP_UNWIND_NO_INFO,      /* no usable CFI for its pc, and no frame-pointer record */
    PP_UNWIND_SP_STUCK,     /* the caller's stack pointer would not be above it */
    PP_UNWIND_OFF_STACK,    /* a CFI rule or a signal frame points outside the stack */
    PP_UNWIND_UNLOADING,    /* objects were being (un)loaded: only the first pc taken */
};

/* Writes up to `max` addresses, leaf (the interrupted PC) first, then call
 * sites (return address - 1). Sets *end (enum pp_unwind_end): not
 * PP_UNWIND_WHOLE when the stack goes on beyond the last address written,
 * for which callers keep room for one pseudo-frame more. Returns the count
 * (>= 1). async-signal-safe: no locks, no allocation, never enters the
 * dynamic loader. */
int pp_unwind_signal(void *ucontext, uint64_t *pcs, int max, int *end);

/* The deepest walk pp_unwind_here makes, the profiler's frames included. */
#define PP_MAX_WALK 272
/* The calling thread's stack from the call site of `caller` (the return
 * address of the hooked function, __builtin_return_address(0)) outward,
 * every frame a call site (return address - 1). Same contract as
 * pp_unwind_signal; a walk that stops before it reaches that call site
 * gives the call site alone and the reason. Safe inside malloc (no lock,
 * no allocation). async-signal-safe */
int pp_unwind_here(uint64_t caller, uint64_t *pcs, int max, int *end);
/* Another thread's stack, from the pc and stack pointer the kernel shows
 * for it while it waits in a system call, and a guess at its frame
 * pointer (0: none). Reads go through process_vm_readv: the thread may
 * wake and change its stack meanwhile, which gives a wrong stack, never a
 * fault. Not for signal handlers. */
int pp_unwind_remote(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t *pcs, int max, int *end);
/* Functions of the profiler that stand between a program's frames (the
 * thread-start prologue that calls the thread's function) are placed in
 * one section, and the walks leave their frames out. */
#define PP_HIDDEN_FRAME __attribute__((section("pp_hidden_text"), noinline))

/* 1 if `ra` is in loaded code right after a call instruction. */
int pp_unwind_after_call(uint64_t ra);
#endif
