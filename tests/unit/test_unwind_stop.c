/* test_unwind_stop.c: a stack the walk cannot follow ends with a frame
 * that says so; a normal stack does not.
 * test-labels: plain-only quick
 *
 * Runs natively on x86-64 and under qemu-aarch64-static on arm64
 * (scripts/test-arm64.sh):
 * - hand-built signal contexts the walk cannot follow, walked without a
 *   fault: a pc with no CFI whose frame pointer points above the stack,
 *   below the stack pointer, at a misaligned address or (through a frame
 *   record in a stack the walk does not know) into an inaccessible page
 *   ("no unwind info"); a pc with CFI on a stack that is an inaccessible
 *   mapping ("a read outside the stack"); a frame whose caller's stack
 *   pointer would be below its own ("the stack pointer did not grow");
 * - what is not a stop: a frame pointer of 0 where there is no CFI (the
 *   chain's end), and a stack deeper than the room, which is truncated;
 * - the frame each stop appends is named "[unwinding stopped: ...]" in a
 *   finished profile;
 * - real stacks are whole: pp_unwind_here and a signal's walk, on the
 *   main thread (out to main and _start) and on a pthread (out to
 *   start_thread and clone3), end at the outermost frame;
 * - a CPU profile of busy work on two threads: no sample of that work
 *   ends in a stop (the profiler's own threads' samples are not counted).
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "arch/arch.h"
#include "model/model.h"
#include "unwind/unwind.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>

#define MAXF 64

static const char *const end_names[] = {"whole", "truncated", "no unwind info", "sp did not grow",
                                        "read outside the stack", "unloading"};

static const char *end_name(int end)
{
    return end >= 0 && end <= PP_UNWIND_UNLOADING ? end_names[end] : "?";
}

/* Not code (.bss): an address no loaded object's CFI covers. */
static _Alignas(4096) uint8_t nocode[4096];
/* Mapped for the fake stacks: page 0 readable, the NONE_PAGES after it not. */
#define NONE_PAGES 16
static uint8_t *pages;

static void set_context(ucontext_t *uc, uint64_t pc, uint64_t sp, uint64_t fp, uint64_t lr)
{
    memset(uc, 0, sizeof *uc);
#ifdef __aarch64__
    uc->uc_mcontext.pc = pc;
    uc->uc_mcontext.sp = sp;
    uc->uc_mcontext.regs[29] = fp;
    uc->uc_mcontext.regs[30] = lr;
#else
    (void)lr;
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
    uc->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
    uc->uc_mcontext.gregs[REG_RBP] = (greg_t)fp;
#endif
}

/* Walks the context with room for max frames; checks the end and the
 * count (-1: any). */
static void expect_walk(const char *what, const ucontext_t *uc, int max, int want_end, int want_n)
{
    uint64_t pcs[MAXF + 1];
    int end = -1;
    int n = pp_unwind_signal((void *)uc, pcs, max, &end);
    CHECKF(end == want_end, "%s: the walk ended \"%s\", not \"%s\"", what, end_name(end), end_name(want_end));
    CHECKF(n >= 1 && n <= max, "%s: %d frames (room for %d)", what, n, max);
    if (want_n >= 0)
        CHECKF(n == want_n, "%s: %d frames, not %d", what, n, want_n);
}

/* This function's return address: a call site in its caller, whose CFI
 * is that of a frame in the middle of its body. */
__attribute__((noinline)) static uint64_t return_address(void)
{
    uint64_t ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return ra;
}

/* 1 if process_vm_readv reads this process's memory (not under qemu-user). */
static int kernel_reads(void)
{
    uint64_t here = 42, got = 0;
    struct iovec local = {&got, 8}, remote = {&here, 8};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 8 && got == 42;
}

__attribute__((noinline)) static void entry_target(void)
{
    __asm__ volatile("" ::: "memory");
}

static void test_stops(void)
{
    check_case_begin();
    /* A stack pointer inside this thread's known stack, with room below
     * it that is mapped (pad). */
    volatile uint8_t pad[2048];
    memset((void *)pad, 0, sizeof pad);
    uint64_t sp = ((uint64_t)(uintptr_t)&pad[1536]) & ~15ull;
    uint64_t low = ((uint64_t)(uintptr_t)&pad[64]) & ~15ull;
    uint64_t pc = (uint64_t)(uintptr_t)(nocode + 64);
    ucontext_t uc;

    set_context(&uc, pc, sp, sp + (64ull << 20), 0);
    expect_walk("no CFI, the frame pointer above the stack", &uc, MAXF, PP_UNWIND_NO_INFO, 1);
    set_context(&uc, pc, sp, low, 0);
    expect_walk("no CFI, the frame pointer below the stack pointer", &uc, MAXF, PP_UNWIND_NO_INFO, 1);
    set_context(&uc, pc, sp, sp + 3, 0);
    expect_walk("no CFI, a misaligned frame pointer", &uc, MAXF, PP_UNWIND_NO_INFO, 1);
    set_context(&uc, pc, sp, 0, 0);
    expect_walk("no CFI, a frame pointer of 0 (the chain's end)", &uc, MAXF, PP_UNWIND_WHOLE, 1);

    /* One frame record whose saved frame pointer points into a page no
     * read may touch, and whose return address has no CFI either: on this
     * thread's stack (reads checked against its bounds), and on a stack
     * the walk does not know (read through the kernel, where the kernel
     * reads this process's memory: not under qemu-user). */
    uint64_t *rec = (uint64_t *)(uintptr_t)((sp + 256) & ~15ull);
    rec[0] = (uint64_t)(uintptr_t)(pages + 4096 + 64);
    rec[1] = (uint64_t)(uintptr_t)(nocode + 128);
    set_context(&uc, pc, sp, (uint64_t)(uintptr_t)rec, 0);
    expect_walk("a frame record, then a frame pointer outside the stack", &uc, MAXF, PP_UNWIND_NO_INFO, 2);
    expect_walk("the same with room for one frame: truncated", &uc, 1, PP_UNWIND_TRUNCATED, 1);
    memcpy(pages + 512, rec, 16);
    set_context(&uc, pc, (uint64_t)(uintptr_t)(pages + 256), (uint64_t)(uintptr_t)(pages + 512), 0);
    if (kernel_reads()) {
        expect_walk("on an unknown stack, a frame record, then a frame pointer into an inaccessible page", &uc,
                    MAXF, PP_UNWIND_NO_INFO, 2);
    } else {
        printf("test_unwind_stop: process_vm_readv does not read this process (an emulator?): "
               "the unknown stack's frame record is not checked\n");
        expect_walk("on an unknown stack the kernel does not read", &uc, MAXF, PP_UNWIND_NO_INFO, 1);
    }

    /* A pc with CFI (a call site in this function) on a stack that is an
     * inaccessible mapping. */
    uint64_t site = return_address() - 1;
    uint64_t none = (uint64_t)(uintptr_t)(pages + 4096 + 1024);
    set_context(&uc, site, none, none + 256, 0);
    expect_walk("CFI whose reads fall in an inaccessible page", &uc, MAXF, PP_UNWIND_OFF_STACK, 1);

#ifdef __aarch64__
    /* Interrupted at a function's first instruction, "returning" to its
     * second: there the return address is still in x30 and the CFA is the
     * stack pointer, which a frame that is not the interrupted one must
     * move. */
    uint64_t entry = (uint64_t)(uintptr_t)entry_target;
    set_context(&uc, entry, sp, 0, entry + 4);
    expect_walk("a caller whose stack pointer does not grow", &uc, MAXF, PP_UNWIND_SP_STUCK, 2);
#else
    /* The call site's CFA is rbp + 16 (frame pointers): an rbp below the
     * stack pointer gives a caller below its callee. */
    (void)entry_target;
    set_context(&uc, site, sp, low, 0);
    expect_walk("a caller whose stack pointer does not grow", &uc, MAXF, PP_UNWIND_SP_STUCK, 1);
#endif
    check_case_end("stacks the walk cannot follow end with the reason, never a fault");
}

/* A finished profile names each stop's frame. */
static void test_names(void)
{
    check_case_begin();
    static const struct {
        int end;
        const char *name;
    } want[] = {
        {PP_UNWIND_NO_INFO, "[unwinding stopped: no unwind info]"},
        {PP_UNWIND_SP_STUCK, "[unwinding stopped: the stack pointer did not grow]"},
        {PP_UNWIND_OFF_STACK, "[unwinding stopped: a read outside the stack]"},
        {PP_UNWIND_UNLOADING, "[unwinding stopped: objects being loaded or unloaded]"},
        {PP_UNWIND_TRUNCATED, "[truncated]"},
    };
    size_t k = sizeof want / sizeof want[0];
    CHECK(pp_pc_stack_end(PP_UNWIND_WHOLE) == 0);
    pprof_value_type types[1] = {{"samples", "count"}};
    pprof_profile *p = pp_profile_new(types, 1, types[0], 1);
    CHECK(p != NULL);
    for (size_t i = 0; p && i < k; i++) {
        uint64_t pcs[2] = {(uint64_t)(uintptr_t)(nocode + 16 * (i + 1)), pp_pc_stack_end(want[i].end)};
        int64_t v = (int64_t)i + 1;
        CHECKF(pcs[1] != 0 && pcs[1] <= PP_PC_PSEUDO_MAX, "a pseudo-frame for \"%s\"", end_name(want[i].end));
        CHECK(pp_profile_add(p, pcs, 2, &v, NULL, 0) == 0);
    }
    CHECK(p && pp_profile_finish(p, PPROF_SYMBOLIZE_DEFAULT, NULL) == 0);
    size_t n = 0;
    const pprof_sample *s = p ? pprof_profile_samples(p, &n) : NULL;
    CHECKF(n == k, "%zu samples", n);
    for (size_t i = 0; i < n; i++) {
        int64_t v = s[i].values[0];
        const pprof_location *last = s[i].nlocations == 2 ? s[i].locations[1] : NULL;
        const char *fn = last && last->nlines ? last->lines[0].function : "";
        CHECKF(v >= 1 && (size_t)v <= k && !strcmp(fn, want[v - 1].name), "sample %lld ends in \"%s\"",
               (long long)v, fn);
    }
    pprof_profile_free(p);
    check_case_end("each stop's frame is named in a finished profile");
}

/* --- real stacks --- */

typedef struct taken {
    uint64_t pcs[MAXF + 1];
    int n, end;
} taken;

static taken here_main, here_thread, sig_main, sig_thread;
static taken *volatile sig_into;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    taken *t = sig_into;
    if (t)
        t->n = pp_unwind_signal(uc, t->pcs, MAXF, &t->end);
}

__attribute__((noinline)) static void stop_hooked(taken *t)
{
    t->n = pp_unwind_here((uint64_t)(uintptr_t)__builtin_return_address(0), t->pcs, MAXF, &t->end);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void stop_chain_inner(taken *here, taken *sig)
{
    stop_hooked(here);
    sig_into = sig;
    raise(SIGUSR1);
    sig_into = NULL;
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void stop_chain_outer(taken *here, taken *sig)
{
    stop_chain_inner(here, sig);
    __asm__ volatile("" ::: "memory");
}

static void *chain_thread(void *arg)
{
    (void)arg;
    pp_unwind_thread_prepare();
    stop_chain_outer(&here_thread, &sig_thread);
    return NULL;
}

static int named(uint64_t pc, const char *fn)
{
    char buf[128];
    return pprof_symbol_name(pc, buf, sizeof buf) == 0 && strcmp(buf, fn) == 0;
}

/* Checks that a real stack is whole and passes through `through`. */
static void expect_whole(const char *what, const taken *t, const char *through)
{
    int seen = 0;
    for (int i = 0; i < t->n; i++)
        seen |= named(t->pcs[i], through);
    if (t->end != PP_UNWIND_WHOLE || !seen) {
        fprintf(stderr, "%s (%s):", what, end_name(t->end));
        for (int i = 0; i < t->n; i++) {
            char buf[128];
            fprintf(stderr, " %s", pprof_symbol_name(t->pcs[i], buf, sizeof buf) == 0 ? buf : "?");
        }
        fprintf(stderr, "\n");
    }
    CHECKF(t->end == PP_UNWIND_WHOLE, "%s: the walk ended \"%s\"", what, end_name(t->end));
    CHECKF(seen, "%s: %s is on the stack", what, through);
}

static void test_real(void)
{
    check_case_begin();
    check_handle(SIGUSR1, on_usr1);
    stop_chain_outer(&here_main, &sig_main);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, chain_thread, NULL) == 0);
    pthread_join(th, NULL);
    expect_whole("pp_unwind_here on the main thread", &here_main, "main");
    expect_whole("a signal on the main thread", &sig_main, "main");
    expect_whole("pp_unwind_here on a pthread", &here_thread, "chain_thread");
    expect_whole("a signal on a pthread", &sig_thread, "chain_thread");
    check_case_end("real stacks, from a function and from a signal, on two threads, are whole");
}

/* --- a CPU profile --- */

static volatile int spinning;

__attribute__((noinline)) static unsigned spin_leaf(unsigned x)
{
    for (int i = 0; i < 20000; i++)
        x = x * 1103515245u + 12345u;
    return x;
}

__attribute__((noinline)) static unsigned spin_mid(unsigned x)
{
    return spin_leaf(x) + 1;
}

/* Busy for `ms` of this thread's CPU time. */
static unsigned spin_for(int ms)
{
    unsigned x = 1;
    struct timespec ts;
    do {
        x = spin_mid(x);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    } while (ts.tv_sec * 1000 + ts.tv_nsec / 1000000 < ms);
    return x;
}

static void spin_labeled(void *arg)
{
    *(unsigned *)arg = spin_for(600);
}

/* The busy work, under the label work=spin: the samples the check counts
 * (the profiler's own threads take CPU samples too). */
static pprof_labels *spin_set;

static void *spin_thread(void *arg)
{
    (void)arg;
    unsigned x = 0;
    pprof_do(spin_set, spin_labeled, &x);
    return (void *)(uintptr_t)x;
}

/* 1 when sample s carries work=spin. */
static int is_spin(const pprof_sample *s)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].key, "work") && !strcmp(s->labels[i].value, "spin"))
            return 1;
    return 0;
}

static void test_cpu_profile(void)
{
    check_case_begin();
    CHECK(pprof_labels_new(&(pprof_label){"work", "spin"}, 1, &spin_set) == 0);
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 500}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, spin_thread, NULL) == 0);
    unsigned x = 0;
    CHECK(pprof_do(spin_set, spin_labeled, &x) == 0);
    spinning = (int)x;
    pthread_join(th, NULL);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    size_t n;
    int64_t all = 0, stopped = 0;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    for (size_t i = 0; i < n; i++) {
        if (!is_spin(&s[i]))
            continue;
        const pprof_location *last = s[i].nlocations ? s[i].locations[s[i].nlocations - 1] : NULL;
        const char *fn = last && last->nlines ? last->lines[last->nlines - 1].function : "";
        all += s[i].values[0];
        if (!strncmp(fn, "[unwinding stopped", 18)) {
            stopped += s[i].values[0];
            fprintf(stderr, "a CPU sample ends in %s:", fn);
            for (size_t k = 0; k < s[i].nlocations; k++) {
                const pprof_location *l = s[i].locations[k];
                fprintf(stderr, " %s@%#llx", l->nlines ? l->lines[l->nlines - 1].function : "?",
                        (unsigned long long)l->address);
            }
            fprintf(stderr, "\n");
        }
    }
    printf("test_unwind_stop: %lld of %lld CPU samples of the work end in a stop\n", (long long)stopped,
           (long long)all);
    CHECKF(all > 0, "%lld samples", (long long)all);
    CHECKF(stopped == 0, "%lld of %lld samples end in a stop", (long long)stopped, (long long)all);
    pprof_profile_free(p);
    pprof_recorder_free(r);
    pprof_labels_unref(spin_set);
    check_case_end("no sample of a CPU profile of ordinary code ends in a stop");
}

int main(void)
{
    pp_unwind_init();
    pages = mmap(NULL, (1 + NONE_PAGES) * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(pages != MAP_FAILED && mprotect(pages + 4096, NONE_PAGES * 4096, PROT_NONE) == 0);
    test_stops();
    test_names();
    test_real();
    test_cpu_profile();
    return check_summary("test_unwind_stop (" PP_ARCH_NAME ")");
}
