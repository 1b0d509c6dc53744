/* failalloc.c: an allocator shim for the fault-injection test, preloaded
 * after libpprof so that it is the allocator libpprof forwards to.
 *
 * Past the first 20,000 allocations (start-up), or once the file
 * FAIL_ON_FILE exists when that is set, about one allocation in FAIL_EVERY
 * fails with ENOMEM, spread by a multiplicative hash of the call count.
 * Once the file FAIL_OFF_FILE exists, nothing fails any more: memory has
 * come back. (Files are looked for at most every 10 ms.) Everything else
 * goes to glibc's own entry points.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t),
    *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic unsigned long calls;
static _Atomic int on, off;

/* Whether `file` exists, looked for at most every 10 ms (*next: when next). */
static int appeared(const char *file, _Atomic long *next)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    long now_ms = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    if (now_ms < atomic_load(next))
        return 0;
    atomic_store(next, now_ms + 10);
    return access(file, F_OK) == 0;
}

static int fail(void)
{
    static unsigned long every = 0;
    static const char *on_file, *off_file;
    static _Atomic long next_on, next_off;
    if (!every) {
        const char *e = getenv("FAIL_EVERY");
        on_file = getenv("FAIL_ON_FILE");
        off_file = getenv("FAIL_OFF_FILE");
        every = e && atol(e) > 0 ? (unsigned long)atol(e) : ~0ul;
    }
    unsigned long n = atomic_fetch_add(&calls, 1);
    if (atomic_load(&off) || every == ~0ul || (!on_file && n < 20000))
        return 0;
    if (on_file && !atomic_load(&on)) {
        if (!appeared(on_file, &next_on))
            return 0;
        atomic_store(&on, 1);
    }
    if (off_file && appeared(off_file, &next_off)) {
        atomic_store(&off, 1);
        return 0;
    }
    if ((n * 2654435761ul >> 7) % every)
        return 0;
    errno = ENOMEM;
    return 1;
}

void *malloc(size_t n) { return fail() ? NULL : __libc_malloc(n); }
void *calloc(size_t a, size_t b) { return fail() ? NULL : __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { return n && fail() ? NULL : __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) { return fail() ? NULL : __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }

int posix_memalign(void **out, size_t a, size_t n)
{
    void *p = memalign(a, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}
