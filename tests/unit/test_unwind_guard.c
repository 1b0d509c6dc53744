/* test_unwind_guard.c: the stack walk never faults on a stack it does not
 * know.
 * test-labels: plain-only timing
 *
 * A thread the pthread_create hook never sees (created through libc's own
 * entry point, so its stack bounds are unknown) runs on a 64 KiB stack
 * with an inaccessible page right above it, in generated code that has no
 * unwind information and uses the frame pointer (RBP; x29 on arm64) as a
 * scratch register pointing into that page. Profiling it at 1000 Hz makes
 * the walker fall back to frame pointers through a bogus one: every such
 * read must be refused (the walk
 * checks reads through the kernel when it does not know the bounds), not
 * fault. The test passes when the process survives and the generated
 * code's samples were taken.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static char *guard_above;
static void *code;

/* Runs the generated code for 1 s of CPU: the thread gets its timer at the
 * collector's next rescan (within 250 ms), so most of that is sampled. */
static void *body(void *arg)
{
    (void)arg;
    struct timespec ts;
    do {
        ((void (*)(long))code)(1000000);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    } while (ts.tv_sec < 1);
    return NULL;
}

int main(void)
{
#ifdef __aarch64__
    /* stp x29, x30, [sp, #-16]!; movz/movk x29 = X; 1: subs x0, x0, #1;
     * b.ne 1b; ldp x29, x30, [sp], #16; ret */
    uint32_t insns[] = {0xa9bf7bfdu, 0xd280001du, 0xf2a0001du, 0xf2c0001du, 0xf2e0001du,
                        0xf1000400u, 0x54ffffe1u, 0xa8c17bfdu, 0xd65f03c0u};
#else
    /* push %rbp; movabs $X,%rbp; 1: dec %rdi; jnz 1b; pop %rbp; ret */
    unsigned char insns[] = {0x55, 0x48, 0xbd, 0, 0, 0, 0, 0, 0, 0, 0, 0x48, 0xff, 0xcf, 0x75, 0xfb, 0x5d, 0xc3};
#endif
    size_t size = 64 * 1024;
    char *block = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(block != MAP_FAILED);
    guard_above = block + size;
    CHECK(mprotect(guard_above, 4096, PROT_NONE) == 0);
    uint64_t bogus = (uint64_t)(uintptr_t)(guard_above + 64);
#ifdef __aarch64__
    for (int k = 0; k < 4; k++) /* the 16-bit pieces of X into movz, movk, movk, movk */
        insns[1 + k] |= (uint32_t)((bogus >> (16 * k)) & 0xffff) << 5;
#else
    memcpy(insns + 3, &bogus, 8);
#endif
    code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(code != MAP_FAILED);
    memcpy(code, insns, sizeof insns);
    __builtin___clear_cache((char *)code, (char *)code + sizeof insns);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, block, size);
    create_fn libc_create = (create_fn)dlsym(dlopen("libc.so.6", RTLD_NOLOAD | RTLD_NOW), "pthread_create");
    CHECK(libc_create != NULL);

    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &r) == 0);
    CHECK(pprof_recorder_start(r) == 0);
    pthread_t t;
    CHECK(libc_create(&t, &attr, body, NULL) == 0);
    pthread_join(t, NULL);
    pprof_profile *p;
    CHECK(pprof_recorder_stop(r, &p) == 0);
    size_t n;
    int64_t in_code = 0;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    for (size_t i = 0; i < n; i++)
        if (s[i].nlocations && s[i].locations[0]->address - (uint64_t)(uintptr_t)code < sizeof insns)
            in_code += s[i].values[0];
    CHECKF(in_code > 300, "%lld samples in the generated code", (long long)in_code);
    pprof_profile_free(p);
    pprof_recorder_free(r);
    return check_summary("test_unwind_guard");
}
