/* test_arch.c: the architecture seam (profiler/arch/) on the machine it runs on.
 * test-labels: plain-only quick
 *
 * Runs natively on x86-64 and under qemu-aarch64-static on arm64
 * (scripts/test-arm64.sh):
 * - the call instructions before a return address, and what is not one;
 * - a system call broken by EINTR, read from hand-made code: its number,
 *   and on arm64 its first argument, recovered from the moves before the
 *   svc only where nothing changed their source afterwards;
 * - a PLT stub, where an arm64 walk takes the caller's pc from x30 (the
 *   linkers write no CFI for it), and not the lazy-binding header;
 * - real stacks: a signal that lands in a leaf function (on arm64 its
 *   return address is still in x30) walks out through its callers to
 *   main, and a walk from inside a function (pp_unwind_here) starts at
 *   its caller's call site;
 * - a poll that a signal breaks is entered again (pp_signal_restart_wait)
 *   and ends by its timeout, where without the restart it fails with EINTR;
 *   told that the wait had ended (a thread signalled while not on a CPU),
 *   it does not wait a whole timeout again.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "arch/arch.h"
#include "base/base.h"
#include "signals/signals.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void test_after_call(void)
{
    check_case_begin();
    uint8_t b[8];
#ifdef __aarch64__
    static const uint32_t calls[] = {0x94000010u /* bl */, 0x97fffff0u /* bl back */, 0xd63f0060u /* blr x3 */,
                                     0xd63f081fu /* blraaz x0 */, 0xd73f0861u /* blraa x3, x1 */};
    static const uint32_t others[] = {0xd65f03c0u /* ret */, 0x14000010u /* b */, 0xd61f0060u /* br x3 */,
                                      0x8b020020u /* add */, 0xd503201fu /* nop */};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        memset(b, 0, 4);
        memcpy(b + 4, &calls[i], 4);
        CHECKF(pp_arch_after_call(b), "%#x is a call", calls[i]);
    }
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        memset(b, 0, 4);
        memcpy(b + 4, &others[i], 4);
        CHECKF(!pp_arch_after_call(b), "%#x is not a call", others[i]);
    }
#else
    static const uint8_t rel32[8] = {0x90, 0x90, 0x90, 0xe8, 1, 2, 3, 4};
    static const uint8_t reg[8] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xd0}; /* call *%rax */
    static const uint8_t nops[8] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};
    memcpy(b, rel32, 8);
    CHECK(pp_arch_after_call(b));
    memcpy(b, reg, 8);
    CHECK(pp_arch_after_call(b));
    memcpy(b, nops, 8);
    CHECK(!pp_arch_after_call(b));
#endif
    check_case_end("call instructions before a return address");
}

/* One page of code, the system call at its end of `n` instructions. */
static _Alignas(4096) uint8_t page[4096];

#ifdef __aarch64__
/* Lays out insns (then svc #0) at offset 64 and points uc after the svc. */
static void code(ucontext_t *uc, const uint32_t *insns, size_t n)
{
    uint32_t *at = (uint32_t *)(void *)(page + 64);
    memcpy(at, insns, n * 4);
    at[n] = 0xd4000001u;
    memset(uc, 0, sizeof *uc);
    uc->uc_mcontext.pc = (uint64_t)(uintptr_t)(at + n + 1);
    uc->uc_mcontext.regs[0] = (uint64_t)-EINTR;
    uc->uc_mcontext.regs[8] = 73; /* ppoll */
    for (int r = 1; r < 31; r++)
        if (r != 8)
            uc->uc_mcontext.regs[r] = 0x1000 + (uint64_t)r;
}
#endif

static void test_eintr_decode(void)
{
    check_case_begin();
    ucontext_t uc;
    pp_arch_syscall sc;
#ifdef __aarch64__
    /* glibc's poll: mov x0, x20; mov x1, x19; mov x2, x21; mov x3, #0; mov x8, #73; svc */
    static const uint32_t poll_like[] = {0xaa1403e0u, 0xaa1303e1u, 0xaa1503e2u, 0xd2800003u, 0xd2800928u};
    code(&uc, poll_like, 5);
    CHECK(pp_arch_eintr_syscall(&uc, &sc) && sc.nr == 73 && sc.arg0 == 0x1000 + 20 && sc.arg2 == 0x1000 + 2);
    uint64_t pc = uc.uc_mcontext.pc;
    sc.arg2 = 0;
    pp_arch_syscall_rewind(&uc, &sc);
    CHECK(uc.uc_mcontext.pc == pc - 4 && uc.uc_mcontext.regs[0] == 0x1000 + 20 && uc.uc_mcontext.regs[8] == 73 &&
          uc.uc_mcontext.regs[2] == 0);
    /* mov w0, w20: the low half */
    static const uint32_t wide_w[] = {0x2a1403e0u, 0xd2800928u};
    code(&uc, wide_w, 2);
    uc.uc_mcontext.regs[20] = 0xffffffff00000007ull;
    CHECK(pp_arch_eintr_syscall(&uc, &sc) && sc.arg0 == 7);
    /* movz x0, #5 */
    static const uint32_t constant[] = {0xd28000a0u, 0xd2800928u};
    code(&uc, constant, 2);
    CHECK(pp_arch_eintr_syscall(&uc, &sc) && sc.arg0 == 5);
    /* syscall(): mov x0, x1 then mov x1, x2: x1 changed after, unknown */
    static const uint32_t shifted[] = {0xaa0103e0u, 0xaa0203e1u};
    code(&uc, shifted, 2);
    CHECK(!pp_arch_eintr_syscall(&uc, &sc));
    /* a load into x0 (ldr x0, [x1]): unknown */
    static const uint32_t loaded[] = {0xf9400020u, 0xd2800928u};
    code(&uc, loaded, 2);
    CHECK(!pp_arch_eintr_syscall(&uc, &sc));
    /* another result than EINTR, or not after an svc */
    code(&uc, poll_like, 5);
    uc.uc_mcontext.regs[0] = (uint64_t)-EAGAIN;
    CHECK(!pp_arch_eintr_syscall(&uc, &sc));
    code(&uc, poll_like, 5);
    uc.uc_mcontext.pc -= 4;
    CHECK(!pp_arch_eintr_syscall(&uc, &sc));
    /* right after the svc whatever its result (the wall sampler's "in a
     * system call"), not one instruction before it */
    CHECK(!pp_arch_after_syscall(&uc));
    code(&uc, poll_like, 5);
    uc.uc_mcontext.regs[0] = 3;
    CHECK(pp_arch_after_syscall(&uc));
#else
    /* mov $7,%eax; syscall */
    static const uint8_t poll_like[] = {0xb8, 7, 0, 0, 0, 0x0f, 0x05};
    memcpy(page + 64, poll_like, sizeof poll_like);
    memset(&uc, 0, sizeof uc);
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)(page + 64 + sizeof poll_like);
    uc.uc_mcontext.gregs[REG_RAX] = -EINTR;
    uc.uc_mcontext.gregs[REG_RDI] = 42;
    uc.uc_mcontext.gregs[REG_RDX] = 600;
    CHECK(pp_arch_eintr_syscall(&uc, &sc) && sc.nr == 7 && sc.arg0 == 42 && sc.arg2 == 600);
    sc.arg2 = 0;
    pp_arch_syscall_rewind(&uc, &sc);
    CHECK(uc.uc_mcontext.gregs[REG_RIP] == (greg_t)(uintptr_t)(page + 64 + 5) && uc.uc_mcontext.gregs[REG_RAX] == 7 &&
          uc.uc_mcontext.gregs[REG_RDX] == 0);
    uc.uc_mcontext.gregs[REG_RAX] = -EAGAIN;
    CHECK(!pp_arch_eintr_syscall(&uc, &sc));
    /* right after the syscall whatever its result (the wall sampler's "in
     * a system call"), not at it nor inside the mov before it */
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)(page + 64 + sizeof poll_like);
    uc.uc_mcontext.gregs[REG_RAX] = 3;
    CHECK(pp_arch_after_syscall(&uc));
    uc.uc_mcontext.gregs[REG_RIP] -= 2;
    CHECK(!pp_arch_after_syscall(&uc));
    uc.uc_mcontext.gregs[REG_RIP] -= 1;
    CHECK(!pp_arch_after_syscall(&uc));
#endif
    check_case_end("a system call broken by EINTR, and a pc right after one");
}

/* A PLT stub, which has no CFI on arm64: its return address is in x30. */
static void test_plt_stub(void)
{
    check_case_begin();
    uintptr_t lo = (uintptr_t)page, hi = lo + sizeof page, at = lo + 256;
#ifdef __aarch64__
    /* adrp x16; ldr x17, [x16, #8]; add x16, x16, #8; br x17; then the
     * same after the lazy-binding header's stp x16, x30, [sp, #-16]!, and
     * with bti c and autia1716 */
    static const uint32_t stub[] = {0x90000090u, 0xf9400611u, 0x91002210u, 0xd61f0220u};
    static const uint32_t header[] = {0xa9bf7bf0u, 0x90000090u, 0xf9400611u, 0x91002210u, 0xd61f0220u};
    static const uint32_t signed_stub[] = {0xd503245fu, 0x90000090u, 0xf9400611u, 0x91002210u, 0xd503219fu,
                                           0xd61f0220u};
    memset(page, 0, sizeof page);
    memcpy((void *)at, stub, sizeof stub);
    for (int i = 0; i < 4; i++)
        CHECKF(pp_arch_in_plt_stub(at + 4 * (uintptr_t)i, lo, hi), "a stub's word %d", i);
    CHECK(!pp_arch_in_plt_stub(at - 4, lo, hi) && !pp_arch_in_plt_stub(at + 16, lo, hi));
    CHECK(!pp_arch_in_plt_stub(at + 2, lo, hi));
    CHECK(!pp_arch_in_plt_stub(at, at - 8, at + 16)); /* reads beyond the bounds refused */
    memset(page, 0, sizeof page);
    memcpy((void *)at, header, sizeof header);
    for (int i = 0; i < 5; i++)
        CHECKF(!pp_arch_in_plt_stub(at + 4 * (uintptr_t)i, lo, hi), "the lazy-binding header's word %d", i);
    memset(page, 0, sizeof page);
    memcpy((void *)at, signed_stub, sizeof signed_stub);
    for (int i = 0; i < 6; i++)
        CHECKF(pp_arch_in_plt_stub(at + 4 * (uintptr_t)i, lo, hi), "a signed stub's word %d", i);
#else
    /* x86-64's stubs have CFI: never. */
    static const uint8_t stub[] = {0xff, 0x25, 0, 0, 0, 0, 0x68, 0, 0, 0, 0, 0xe9, 0, 0, 0, 0};
    memcpy((void *)at, stub, sizeof stub);
    CHECK(!pp_arch_in_plt_stub(at, lo, hi) && !pp_arch_in_plt_stub(at + 6, lo, hi));
#endif
    check_case_end("a PLT stub without CFI");
}

/* --- real stacks --- */

#define MAXF 64
static volatile sig_atomic_t in_leaf;
static uint64_t leaf_pcs[MAXF];
static volatile int leaf_n;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    int t;
    if (in_leaf && !leaf_n) {
        uint64_t pcs[MAXF];
        int n = pp_unwind_signal(uc, pcs, MAXF, &t);
        memcpy(leaf_pcs, pcs, sizeof pcs);
        leaf_n = n;
    }
}

/* A leaf: no call, so on arm64 its return address stays in x30. It
 * raises in_leaf itself, so a signal that sees the flag is inside it (one
 * raised by the caller let a signal land in main between the store and
 * the call: 1 run in 10 under qemu). */
__attribute__((noinline)) unsigned arch_leaf(unsigned n)
{
    volatile unsigned x = n;
    in_leaf = 1;
    for (unsigned i = 0; i < 4000000; i++)
        x = x * 1103515245u + 12345u;
    in_leaf = 0;
    return x;
}

__attribute__((noinline)) unsigned arch_mid(unsigned n)
{
    return arch_leaf(n) + 1; /* not a tail call */
}

__attribute__((noinline)) unsigned arch_outer(unsigned n)
{
    return arch_mid(n) + 2;
}

static int named(uint64_t pc, const char *fn)
{
    char buf[128];
    return pprof_symbol_name(pc, buf, sizeof buf) == 0 && strcmp(buf, fn) == 0;
}

static void print_stack(const char *what, const uint64_t *pcs, int n)
{
    fprintf(stderr, "%s:", what);
    for (int i = 0; i < n; i++) {
        char buf[128];
        fprintf(stderr, " %s", pprof_symbol_name(pcs[i], buf, sizeof buf) == 0 ? buf : "?");
    }
    fprintf(stderr, "\n");
}

/* Checks that pcs[0..n) start with the functions `want` (NULL-ended) and
 * reach main after them; prints the stack when not. */
static void check_stack(const char *what, const uint64_t *pcs, int n, const char *const *want)
{
    int k = 0, ok = 1, has_main = 0;
    for (; want[k]; k++)
        ok &= k < n && named(pcs[k], want[k]);
    for (int i = k; i < n; i++)
        has_main |= named(pcs[i], "main");
    if (!ok || !has_main)
        print_stack(what, pcs, n);
    CHECKF(ok, "%s: the first frames", what);
    CHECKF(has_main, "%s: main is reached", what);
}

static void test_signal_stack(void)
{
    check_case_begin();
    check_handle(SIGPROF, on_prof);
    struct itimerval it = {{0, 2000}, {0, 2000}};
    setitimer(ITIMER_PROF, &it, NULL);
    unsigned sink = 0;
    time_t until = time(NULL) + 20;
    while (!leaf_n && time(NULL) < until)
        sink += arch_outer(sink);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    int n = leaf_n;
    CHECKF(n >= 4, "a stack of %d frames from a signal in arch_leaf", n);
    check_stack("signal in the leaf", leaf_pcs, n, (const char *const[]){"arch_leaf", "arch_mid", "arch_outer", NULL});
    CHECK(sink != 1);
    check_case_end("a signal in a leaf function walks out to main");
}

static uint64_t here_pcs[MAXF];
static int here_n;

__attribute__((noinline)) void arch_hooked(void)
{
    int t;
    here_n = pp_unwind_here((uint64_t)(uintptr_t)__builtin_return_address(0), here_pcs, MAXF, &t);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void arch_here_mid(void)
{
    arch_hooked();
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) void arch_here_outer(void)
{
    arch_here_mid();
    __asm__ volatile("" ::: "memory");
}

static void test_here_stack(void)
{
    check_case_begin();
    arch_here_outer();
    check_stack("pp_unwind_here", here_pcs, here_n, (const char *const[]){"arch_here_mid", "arch_here_outer", NULL});
    check_case_end("a walk from inside a function starts at its caller's call site");
}

/* --- a poll broken by a signal --- */

static volatile sig_atomic_t restart_on, handled;

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    handled++;
    if (restart_on)
        pp_signal_restart_wait(uc, sig);
}

static int fds[2];
static int poll_rc, poll_errno;

static void *poller(void *arg)
{
    (void)arg;
    struct pollfd p = {fds[0], POLLIN, 0};
    poll_rc = poll(&p, 1, 600);
    poll_errno = errno;
    return NULL;
}

/* A thread's 600 ms poll, signalled after 150 ms: its result, and in *ms
 * how long it took in all. */
static int broken_poll(int restart, int *err, int64_t *ms)
{
    restart_on = restart;
    handled = 0;
    int64_t t0 = pp_now_ns(CLOCK_MONOTONIC);
    pthread_t t;
    pthread_create(&t, NULL, poller, NULL);
    struct timespec ts = {0, 150 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pthread_kill(t, SIGUSR2);
    pthread_join(t, NULL);
    *err = poll_errno;
    *ms = (pp_now_ns(CLOCK_MONOTONIC) - t0) / 1000000;
    return poll_rc;
}

static void test_restart(void)
{
    check_case_begin();
    struct sigaction sa = {0};
    sa.sa_sigaction = on_usr2;
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: poll fails with EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    CHECK(pipe(fds) == 0);
    int64_t ms;
    int err, plain = broken_poll(0, &err, &ms);
    if (plain != -1 || err != EINTR) {
        printf("test_arch: poll not broken by the signal (rc %d, errno %d, handled %d): restart check skipped\n",
               plain, err, (int)handled);
    } else {
        /* poll is wrapped (interpose/wait_hooks.c): entered again with the
         * time left, it ends at its deadline, not a whole timeout later
         * (750 ms) */
        int rc = broken_poll(1, &err, &ms);
        CHECKF(rc == 0 && handled == 1 && ms >= 599 && ms < 650,
               "the restarted poll returned %d (errno %d) after %lld ms, handled %d", rc, err, (long long)ms,
               (int)handled);
    }
    check_case_end("a poll broken by the signal is entered again and ends at its deadline");
}

int main(void)
{
    pp_unwind_init();
    test_after_call();
    test_eintr_decode();
    test_plt_stub();
    test_signal_stack();
    test_here_stack();
    test_restart();
    return check_summary("test_arch (" PP_ARCH_NAME ")");
}
