/* arch_aarch64.h: arm64's registers for the stack walk and the signal
 * context (included by arch.h only).
 *
 * DWARF numbers (AADWARF64): 0-30 are x0-x30 (x29 the frame pointer, x30
 * the link register), 31 sp; the CIEs name 30 as the return-address
 * column. A call (bl, blr) leaves the return address in x30, so in a leaf
 * function, or before a prologue has saved it, the column's rule is "same
 * value": the caller's pc is in x30. Slot 32 holds a frame's pc (the
 * interrupted pc of a signal's context, otherwise the return address the
 * step found). Frame records (AAPCS64): [x29] the caller's x29, [x29+8]
 * the return address; the record sits at the bottom of its frame, so
 * x29+16 is only a lower bound of the caller's stack pointer.
 *
 * Where pointer authentication signs return addresses (paciasp in the
 * prologue; DW_CFA_AARCH64_negate_ra_state in the CFI), the saved x30 has
 * a signature in its upper bits: xpaclri (a hint, a no-op on processors
 * without pointer authentication) strips it before the address is used.
 */
#ifndef PP_ARCH_AARCH64_H
#define PP_ARCH_AARCH64_H
#include <stdint.h>
#include <ucontext.h>

#define PP_ARCH_NAME "arm64"
#define PP_ARCH_GLIBC_BASE "GLIBC_2.17" /* the oldest symbol version of glibc here */
#define PP_CFI_REGS 33      /* DWARF 0-30 x0-x30, 31 sp; 32 the frame's pc */
#define PP_REG_FP 29
#define PP_REG_SP 31
#define PP_REG_RA 30        /* the return-address column of the CIEs: x30 */
#define PP_REG_PC 32
#define PP_ARCH_RA_IN_REG 1 /* "same value": the return address is still in x30 */
#define PP_ARCH_CFA_OP_NEGATE_RA 0x2d /* DW_CFA_AARCH64_negate_ra_state: no operands */
#define PP_ARCH_BREG_MAX 31 /* DW_OP_breg0..31 */
#define PP_ARCH_SIGRETURN_LEN 8
#define PP_ARCH_SIGFRAME_UC 128 /* the trampoline's sp: the kernel's rt_sigframe, siginfo then ucontext */

/* The rest is arm64 code; only the numbering above is used elsewhere (the
 * fuzz target checks arm64's CFI rules on any machine). */
#ifdef __aarch64__
/* The signal context's registers in DWARF order. async-signal-safe */
static inline void pp_arch_load_context(const ucontext_t *uc, uint64_t *regs)
{
    for (int i = 0; i < 31; i++)
        regs[i] = (uint64_t)uc->uc_mcontext.regs[i];
    regs[31] = (uint64_t)uc->uc_mcontext.sp;
    regs[32] = (uint64_t)uc->uc_mcontext.pc;
}

/* The interrupted pc. async-signal-safe */
static inline uint64_t pp_arch_context_pc(const ucontext_t *uc)
{
    return (uint64_t)uc->uc_mcontext.pc;
}

/* A return address without its pointer-authentication signature (xpaclri
 * on x30; the hint space executes as a no-op where there is none).
 * async-signal-safe */
static inline uint64_t pp_arch_strip_ra(uint64_t ra)
{
    register uint64_t x30 __asm__("x30") = ra;
    __asm__("hint #7" : "+r"(x30)); /* xpaclri */
    return x30;
}

/* The virtual counter (cntvct_el0), which the kernel's clock reads too: a
 * cheap stamp. async-signal-safe */
static inline uint64_t pp_arch_counter(void)
{
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v));
    return v;
}

/* The registers of this point in this function: the pc of a label, sp,
 * x29, x30 and the callee-saved x19-x28 a caller's rules may restore.
 * Others are left as they are (0: no rule of a call site needs them).
 * async-signal-safe */
#define PP_ARCH_CAPTURE_HERE(regs)                                                   \
    __asm__ volatile("adr x9, .\n\tstr x9, [%0, #256]\n\t"                          \
                     "mov x9, sp\n\tstr x9, [%0, #248]\n\t"                         \
                     "stp x29, x30, [%0, #232]\n\t"                                 \
                     "stp x19, x20, [%0, #152]\n\tstp x21, x22, [%0, #168]\n\t"     \
                     "stp x23, x24, [%0, #184]\n\tstp x25, x26, [%0, #200]\n\t"     \
                     "stp x27, x28, [%0, #216]"                                     \
                     :                                                              \
                     : "r"(regs)                                                    \
                     : "x9", "memory")
#endif /* __aarch64__ */
#endif
