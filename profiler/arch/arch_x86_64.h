/* arch_x86_64.h: x86-64's registers for the stack walk and the signal
 * context (included by arch.h only).
 *
 * DWARF numbers 0-15 are the general registers (rax rdx rcx rbx rsi rdi
 * rbp rsp r8-r15), 16 the return address, which is also the slot of a
 * frame's pc. A call pushes the return address: it is never left in a
 * register, so a row whose return address is "same value" ends the walk.
 * Frame records: [rbp] the caller's rbp, [rbp+8] the return address, the
 * caller's stack pointer rbp+16.
 */
#ifndef PP_ARCH_X86_64_H
#define PP_ARCH_X86_64_H
#include <stdint.h>
#include <ucontext.h>

#define PP_ARCH_NAME "x86-64"
#define PP_ARCH_GLIBC_BASE "GLIBC_2.2.5" /* the oldest symbol version of glibc here */
#define PP_CFI_REGS 17      /* DWARF x86-64: 0-15 the GPRs, 16 the return address */
#define PP_REG_FP 6         /* rbp */
#define PP_REG_SP 7         /* rsp */
#define PP_REG_RA 16        /* the return-address column of the CIEs */
#define PP_REG_PC 16        /* the slot of a frame's pc: the same column */
#define PP_ARCH_RA_IN_REG 0 /* a return address is never "same value" */
#define PP_ARCH_CFA_OP_NEGATE_RA 0 /* no architecture-specific CFA instruction */
#define PP_ARCH_BREG_MAX 16 /* DW_OP_breg0..16 */
#define PP_ARCH_SIGRETURN_LEN 9
#define PP_ARCH_SIGFRAME_UC 0 /* the trampoline's rsp: the saved ucontext (the return address popped) */

/* DWARF register numbers -> ucontext registers. async-signal-safe */
static inline void pp_arch_load_context(const ucontext_t *uc, uint64_t *regs)
{
    static const int greg_of[PP_CFI_REGS] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                             REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                             REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
    for (int i = 0; i < PP_CFI_REGS; i++)
        regs[i] = (uint64_t)uc->uc_mcontext.gregs[greg_of[i]];
}

/* The interrupted pc. async-signal-safe */
static inline uint64_t pp_arch_context_pc(const ucontext_t *uc)
{
    return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
}

/* A return address as code addresses go (no signing bits on x86-64).
 * async-signal-safe */
static inline uint64_t pp_arch_strip_ra(uint64_t ra)
{
    return ra;
}

/* The processor's time-stamp counter: a cheap stamp, which the kernel's
 * clock reads too when its clocksource is tsc. async-signal-safe */
static inline uint64_t pp_arch_counter(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
}

/* The registers of this point in this function: the pc of a label, the
 * stack and frame pointers, and the callee-saved registers a caller's
 * rules may restore. Others are left as they are (0: no rule of a call
 * site needs them). async-signal-safe */
#define PP_ARCH_CAPTURE_HERE(regs)                                                             \
    __asm__ volatile("lea 0(%%rip), %%rax\n\tmov %%rax, %c[rip](%0)\n\t"                   \
                     "mov %%rsp, %c[rsp](%0)\n\tmov %%rbp, %c[rbp](%0)\n\t"                \
                     "mov %%rbx, %c[rbx](%0)\n\tmov %%r12, %c[r12](%0)\n\t"                \
                     "mov %%r13, %c[r13](%0)\n\tmov %%r14, %c[r14](%0)\n\t"                \
                     "mov %%r15, %c[r15](%0)"                                                \
                     :                                                                       \
                     : "r"(regs), [rip] "i"(PP_REG_PC * 8), [rsp] "i"(PP_REG_SP * 8),        \
                       [rbp] "i"(PP_REG_FP * 8), [rbx] "i"(3 * 8), [r12] "i"(12 * 8),        \
                       [r13] "i"(13 * 8), [r14] "i"(14 * 8), [r15] "i"(15 * 8)               \
                     : "rax", "memory")
#endif
