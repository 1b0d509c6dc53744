/* arch.h: the interface of arch/, what the profiler knows about the
 * processor it runs on.
 *
 * One header per architecture (arch_x86_64.h, arch_aarch64.h) gives, as
 * macros and inline functions: the DWARF register numbering and the
 * return-address column of the call-frame information, the registers of a
 * signal's context (pc, stack pointer, frame pointer, link register), the
 * capture of the current function's registers, the frame-pointer record's
 * layout, the stripping of pointer-authentication bits from return
 * addresses, and the processor's counter (a cheap stamp). arch.c holds
 * what reads instructions: whether a return address follows a call, the
 * kernel's signal-return trampoline, and a system call that a signal
 * broke and that can be entered again.
 *
 * Invariants: everything here is async-signal-safe and malloc-safe (no
 * lock, no allocation, no system call); instruction reads go only where
 * the caller says code is mapped. Other architectures stop the build.
 */
#ifndef PP_ARCH_H
#define PP_ARCH_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <ucontext.h>

/* PP_ARCH_FORCE_AARCH64: arm64's numbering on another machine (the fuzz
 * target's second copy of cfi.c), without the code that needs arm64. */
#if defined(__aarch64__) || defined(PP_ARCH_FORCE_AARCH64)
#include "arch_aarch64.h"
#elif defined(__x86_64__)
#include "arch_x86_64.h"
#else
#error "libpprof supports x86-64 and arm64 (aarch64) only"
#endif

/* 1 if the 8 code bytes before a return address end in a call
 * instruction. async-signal-safe */
int pp_arch_after_call(const uint8_t before[8]);

/* 1 if the code at pc (at least PP_ARCH_SIGRETURN_LEN readable bytes) is
 * the signal-return trampoline. async-signal-safe */
int pp_arch_is_sigreturn(uintptr_t pc);

/* 1 if pc is inside a PLT stub that has no CFI and leaves the return
 * address in the link register (arm64: the linkers write no CFI for the
 * PLT; x86-64: always 0, its stubs have CFI). Reads only code in
 * [lo, hi), which must be mapped. async-signal-safe */
int pp_arch_in_plt_stub(uintptr_t pc, uintptr_t lo, uintptr_t hi);

/* A system call that a signal broke with EINTR, as the handler's context
 * shows it: its number, and what to put back to enter it again. */
typedef struct pp_arch_syscall {
    long nr;
    uint64_t arg0;           /* the first argument (arm64: lost in x0, recovered) */
    uint64_t arg2;           /* the third (poll's timeout) */
} pp_arch_syscall;

/* 1 if uc was interrupted right after a system call instruction that
 * returned -EINTR, and the call's number and arguments are known for
 * certain (fills *sc). async-signal-safe */
int pp_arch_eintr_syscall(const ucontext_t *uc, pp_arch_syscall *sc);
/* 1 if uc was interrupted right after a system call instruction (the
 * thread was in the kernel in that call as the signal came: woken and not
 * yet back, or broken by the signal). async-signal-safe */
int pp_arch_after_syscall(const ucontext_t *uc);
/* 1 if uc was interrupted right after a system call instruction whose
 * call failed with EINTR (whatever the call). async-signal-safe */
int pp_arch_after_eintr(const ucontext_t *uc);
/* Points uc back at the system call instruction with the call's number
 * and arguments, as the kernel does for the calls it restarts itself.
 * async-signal-safe */
void pp_arch_syscall_rewind(ucontext_t *uc, const pp_arch_syscall *sc);
#endif
