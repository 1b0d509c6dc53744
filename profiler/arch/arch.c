/* arch.c: what the profiler reads from machine code, per architecture:
 * whether a return address follows a call instruction, the kernel's
 * signal-return trampoline, a PLT stub that has no CFI, and a system call
 * that a signal broke with EINTR (its number, and on arm64 its first
 * argument, which the return value overwrote in x0). See arch.h.
 */
#include "arch.h"

#include <errno.h>
#include <string.h>

#if PP_REG_PC == 32 /* arm64 */

/* async-signal-safe */
int pp_arch_after_call(const uint8_t before[8])
{
    uint32_t in;
    memcpy(&in, before + 4, 4);
    return (in & 0xfc000000u) == 0x94000000u ||  /* bl */
           (in & 0xfffffc1fu) == 0xd63f0000u ||  /* blr xn */
           (in & 0xfffff800u) == 0xd63f0800u ||  /* blraaz, blrabz */
           (in & 0xfffff800u) == 0xd73f0800u;    /* blraa, blrab */
}

/* mov x8, #139 (rt_sigreturn); svc #0: the vDSO's __kernel_rt_sigreturn
 * and the emulator's. async-signal-safe */
int pp_arch_is_sigreturn(uintptr_t pc)
{
    static const uint32_t code[] = {0xd2801168u, 0xd4000001u};
    return memcmp((const void *)pc, code, sizeof code) == 0;
}

/* The linker's PLT stub (bfd, gold, lld): adrp x16, page; ldr x17,
 * [x16, #off]; add x16, x16, #off; br x17 (autia1716 before the br where
 * return addresses are signed, bti c before the adrp with branch
 * protection). The lazy-binding header, which starts by pushing x16 and
 * x30, is not one. async-signal-safe */
static int plt_stub_at(const uint32_t *c, uintptr_t pc)
{
    if ((c[0] & 0x9f00001fu) != 0x90000010u || (c[1] & 0xffc003ffu) != 0xf9400211u ||
        (c[2] & 0xffc003ffu) != 0x91000210u || c[-1] == 0xa9bf7bf0u /* stp x16, x30, [sp, #-16]! */)
        return 0;
    int br = c[3] == 0xd61f0220u ? 3 : c[3] == 0xd503219fu && c[4] == 0xd61f0220u ? 4 : 0;
    uintptr_t first = (uintptr_t)(c[-1] == 0xd503245fu /* bti c */ ? c - 1 : c);
    return br && pc >= first && pc <= (uintptr_t)(c + br);
}

/* async-signal-safe */
int pp_arch_in_plt_stub(uintptr_t pc, uintptr_t lo, uintptr_t hi)
{
    if ((pc & 3) || pc < lo + 24 || pc + 24 > hi) /* the words read, around pc, in [lo, hi) */
        return 0;
    const uint32_t *at = (const uint32_t *)pc;
    for (int k = -1; k <= 4; k++) /* pc at the bti, or at any of the stub's words */
        if (plt_stub_at(at - k, pc))
            return 1;
    return 0;
}

#define SVC0 0xd4000001u

/* The system call's first argument, from the moves that set up its
 * registers just before the svc: glibc's wrappers copy the arguments
 * from callee-saved registers (mov x0, x19; ...; mov x8, #nr; svc #0),
 * and the kernel preserves every register but x0. Scanning back from the
 * svc over that run of moves, the last write of x0 must be a move from a
 * register no later move changed, or of a constant; anything else (a
 * load, arithmetic, the start of the run) leaves the argument unknown.
 * async-signal-safe */
static int first_argument(const uint32_t *svc, uintptr_t room, const uint64_t *x, uint64_t *arg0)
{
    uint32_t written = 0; /* registers set by moves between this one and the svc */
    for (uintptr_t i = 1; i <= 8 && 4 * i <= room; i++) {
        uint32_t in = svc[-(intptr_t)i];
        unsigned rd = in & 31, rm = (in >> 16) & 31;
        int wide = in >> 31;
        if ((in & 0x7fe0ffe0u) == 0x2a0003e0u) {        /* mov xd/wd, xm/wm (orr with xzr) */
            if (rd == 0) {
                if (rm == 0 || (rm != 31 && (written >> rm) & 1))
                    return 0;
                uint64_t v = rm == 31 ? 0 : x[rm];
                *arg0 = wide ? v : (uint32_t)v;
                return 1;
            }
        } else if ((in & 0x7fe00000u) == 0x52800000u) { /* movz xd/wd, #imm16 */
            if (rd == 0) {
                *arg0 = (in >> 5) & 0xffff;
                return 1;
            }
        } else {
            return 0;
        }
        if (rd != 31)
            written |= 1u << rd;
    }
    return 0;
}

/* async-signal-safe */
int pp_arch_eintr_syscall(const ucontext_t *uc, pp_arch_syscall *sc)
{
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
    const uint64_t *x = (const uint64_t *)uc->uc_mcontext.regs;
    if ((int64_t)x[0] != -EINTR || (pc & 3) || (pc & 4095) < 8) /* the svc and a move on pc's page */
        return 0;
    const uint32_t *svc = (const uint32_t *)pc - 1;
    if (*svc != SVC0)
        return 0;
    if (!first_argument(svc, (pc & 4095) - 4, x, &sc->arg0))
        return 0;
    sc->nr = (long)x[8];
    sc->arg2 = x[2];
    return 1;
}

/* async-signal-safe */
int pp_arch_after_syscall(const ucontext_t *uc)
{
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
    return !(pc & 3) && (pc & 4095) >= 4 && ((const uint32_t *)pc)[-1] == SVC0;
}

/* async-signal-safe */
int pp_arch_after_eintr(const ucontext_t *uc)
{
    return (int64_t)uc->uc_mcontext.regs[0] == -EINTR && pp_arch_after_syscall(uc);
}

/* async-signal-safe */
void pp_arch_syscall_rewind(ucontext_t *uc, const pp_arch_syscall *sc)
{
    uc->uc_mcontext.pc -= 4;
    uc->uc_mcontext.regs[0] = sc->arg0;
    uc->uc_mcontext.regs[2] = sc->arg2;
    uc->uc_mcontext.regs[8] = (uint64_t)sc->nr;
}

#else /* x86-64 */

/* async-signal-safe */
int pp_arch_after_call(const uint8_t before[8])
{
    const uint8_t *c = before + 8;
    if (c[-5] == 0xe8)                                   /* call rel32 */
        return 1;
    if (c[-2] == 0xff && (c[-1] & 0x38) == 0x10)         /* call *%reg, *(%reg) */
        return 1;
    if (c[-3] == 0xff && (c[-2] & 0x38) == 0x10)         /* call *disp8(%reg) */
        return 1;
    if (c[-6] == 0xff && (c[-5] & 0x38) == 0x10)         /* call *disp32(%rip or %reg) */
        return 1;
    if (c[-7] == 0xff && (c[-6] & 0x38) == 0x10)         /* with a SIB byte */
        return 1;
    return 0;
}

/* x86-64's PLT stubs have CFI (the linker writes it). async-signal-safe */
int pp_arch_in_plt_stub(uintptr_t pc, uintptr_t lo, uintptr_t hi)
{
    (void)pc;
    (void)lo;
    (void)hi;
    return 0;
}

/* glibc's signal return trampoline: mov $15,%rax; syscall. async-signal-safe */
int pp_arch_is_sigreturn(uintptr_t pc)
{
    static const uint8_t code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    return memcmp((const void *)pc, code, sizeof code) == 0;
}

/* glibc's `mov $nr,%eax; syscall`, with -EINTR in rax; the arguments are
 * still in their registers. async-signal-safe */
int pp_arch_eintr_syscall(const ucontext_t *uc, pp_arch_syscall *sc)
{
    const greg_t *g = uc->uc_mcontext.gregs;
    uintptr_t ip = (uintptr_t)g[REG_RIP];
    if (g[REG_RAX] != -EINTR || (ip & 4095) < 7) /* the 7 bytes before ip on its page */
        return 0;
    const unsigned char *c = (const unsigned char *)ip;
    uint32_t nr;
    memcpy(&nr, c - 6, sizeof nr);
    if (c[-7] != 0xb8 || c[-2] != 0x0f || c[-1] != 0x05)
        return 0;
    sc->nr = (long)nr;
    sc->arg0 = (uint64_t)g[REG_RDI];
    sc->arg2 = (uint64_t)g[REG_RDX];
    return 1;
}

/* async-signal-safe */
int pp_arch_after_syscall(const ucontext_t *uc)
{
    uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    const unsigned char *c = (const unsigned char *)ip;
    return (ip & 4095) >= 2 && c[-2] == 0x0f && c[-1] == 0x05;
}

/* async-signal-safe */
int pp_arch_after_eintr(const ucontext_t *uc)
{
    return uc->uc_mcontext.gregs[REG_RAX] == -EINTR && pp_arch_after_syscall(uc);
}

/* async-signal-safe */
void pp_arch_syscall_rewind(ucontext_t *uc, const pp_arch_syscall *sc)
{
    greg_t *g = uc->uc_mcontext.gregs;
    g[REG_RIP] -= 2;
    g[REG_RAX] = (greg_t)sc->nr;
    g[REG_RDX] = (greg_t)sc->arg2;
}
#endif
