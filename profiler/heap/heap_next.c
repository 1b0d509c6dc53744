/* heap_next.c: finding the allocator the hooks forward to.
 *
 * The hooks forward to whatever allocator comes next in the symbol search
 * order (glibc, or jemalloc/tcmalloc/mimalloc when the program uses one),
 * found once with pp_next_symbol (base/next.h). Forwarding to glibc's __libc_* names
 * instead would send a jemalloc program's allocations to glibc. dlsym
 * itself may allocate, and the loader calls free before any constructor:
 * while the lookup runs (and on other threads that arrive meanwhile),
 * allocations come from a static bootstrap buffer; its blocks are never
 * released, and frees of them are ignored. Functions an allocator lacks
 * (Debian's jemalloc has no pvalloc) are built on its memalign, so memory
 * is never freed by an allocator that did not hand it out.
 *
 * The five core functions (malloc, free, calloc, realloc, memalign) are
 * each the next definition, wherever it is: what the program would call
 * without libpprof. A wrapper library that defines malloc but not free, or
 * no memalign, gets glibc's for those, as it would anyway. Sampled objects
 * come from malloc, calloc or memalign and go back through free, so
 * sampling needs free and memalign from the object that defines malloc;
 * when they are not, heap sampling steps aside (one line on stderr) and
 * every allocation goes where it would without libpprof.
 *
 * pp_next_block_size gives the bytes the allocator counts for a block of a
 * given size: the unit of the heap profiles' values.
 */
#define _GNU_SOURCE
#include "heap.h"

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

pp_next_alloc pp_next;
pp_next_ext pp_next_x;
_Atomic int pp_next_state; /* 0 unresolved, 1 resolving, 2 ready */
#define state pp_next_state

#define BOOT_SIZE PP_BOOT_SIZE
#define boot pp_boot
char pp_boot[BOOT_SIZE] __attribute__((aligned(4096)));
static _Atomic size_t boot_used;

/* malloc-safe */
void *pp_boot_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    if (size > BOOT_SIZE || (align & (align - 1)))
        return NULL;
    for (;;) {
        size_t used = atomic_load(&boot_used);
        uintptr_t base = (uintptr_t)boot; /* align the address, not the offset */
        size_t start = (size_t)(((base + used + 16 + align - 1) & ~(uintptr_t)(align - 1)) - base);
        if (start + size > BOOT_SIZE) {
            errno = ENOMEM;
            return NULL;
        }
        if (atomic_compare_exchange_weak(&boot_used, &used, start + size)) {
            memcpy(boot + start - 16, &size, sizeof size);
            return boot + start;
        }
    }
}

/* malloc-safe */
size_t pp_boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const char *)p - 16, sizeof n);
    return n;
}

/* --- fallbacks built on the next allocator's memalign --- */

static size_t page_size(void) { return 4096; }

static void *valloc_fallback(size_t n) /* malloc-safe */
{
    return pp_next.memalign(page_size(), n);
}

static void *pvalloc_fallback(size_t n) /* malloc-safe */
{
    size_t ps = page_size(), r = (n + ps - 1) & ~(ps - 1);
    if (r < n) {
        errno = ENOMEM;
        return NULL;
    }
    return pp_next.memalign(ps, r ? r : ps);
}

static void *aligned_alloc_fallback(size_t align, size_t n) /* malloc-safe */
{
    return pp_next.memalign(align, n);
}

static int posix_memalign_fallback(void **out, size_t align, size_t n) /* malloc-safe */
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = pp_next.memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

static size_t usable_fallback(void *p) /* malloc-safe */
{
    (void)p;
    return 0;
}

/* The address range of the object that defines the next malloc (its
 * loaded segments, lowest to highest): one walk of the loaded objects,
 * where a dladdr per function searched the object's symbols (8 of them
 * were a tenth of a millisecond of every exec). */
static uintptr_t malloc_lo, malloc_hi;

static int find_malloc_object(struct dl_phdr_info *o, size_t size, void *arg)
{
    (void)size;
    uintptr_t f = (uintptr_t)arg, lo = UINTPTR_MAX, hi = 0;
    int in = 0;
    for (int i = 0; i < o->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &o->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = o->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
        in |= f >= a && f < b;
    }
    if (!in)
        return 0;
    malloc_lo = lo;
    malloc_hi = hi;
    return 1;
}

/* The next definition of `name`, if it is in the same object as the next
 * malloc (else the object lacks it and a later one, glibc, would answer).
 * malloc-safe only as pp_next_resolve uses it: allocations meanwhile are
 * served from the bootstrap buffer. */
static void *next(const char *name)
{
    void *f = pp_next_symbol(name, NULL);
    if (!f || !malloc_hi)
        return f;
    return (uintptr_t)f >= malloc_lo && (uintptr_t)f < malloc_hi ? f : NULL;
}

/* The next malloc is glibc's (the object that defines it is libc.so):
 * set once by pp_next_resolve. */
static int next_glibc;

/* malloc-safe */
void pp_next_object(uintptr_t *lo, uintptr_t *hi, int *glibc)
{
    int ready = pp_next_ready();
    *lo = ready ? malloc_lo : 0;
    *hi = ready ? malloc_hi : 0;
    *glibc = ready && next_glibc;
}

static _Atomic int unpaired; /* the next allocator cannot take sampled objects */

/* malloc-safe (one write to stderr) */
void pp_heap_unpaired(const char *object)
{
    static const char a[] = "libpprof: heap profiling is off: ", b[] = " defines malloc without its own free or memalign\n";
    atomic_store(&unpaired, 1);
    struct iovec v[3] = {{(void *)a, sizeof a - 1}, {(void *)object, strlen(object)}, {(void *)b, sizeof b - 1}};
    ssize_t w = writev(2, v, 3);
    (void)w;
}

/* malloc-safe */
int pp_heap_is_unpaired(void)
{
    return atomic_load_explicit(&unpaired, memory_order_relaxed);
}

/* malloc-safe: the caller's allocations are served from the bootstrap
 * buffer while this runs. */
int pp_next_resolve(void)
{
    int s = 0;
    if (!atomic_compare_exchange_strong(&state, &s, 1))
        return s == 2;
    pp_next_alloc n;
    n.malloc = (void *(*)(size_t))pp_next_symbol("malloc", NULL);
    Dl_info info = {0};
    if (n.malloc && dladdr((void *)n.malloc, &info)) {
        dl_iterate_phdr(find_malloc_object, (void *)n.malloc);
        next_glibc = info.dli_fname && strstr(info.dli_fname, "/libc.so") != NULL;
    }
    n.free = (void (*)(void *))pp_next_symbol("free", NULL);
    n.calloc = (void *(*)(size_t, size_t))pp_next_symbol("calloc", NULL);
    n.realloc = (void *(*)(void *, size_t))pp_next_symbol("realloc", NULL);
    n.memalign = (void *(*)(size_t, size_t))pp_next_symbol("memalign", NULL);
    n.posix_memalign = (int (*)(void **, size_t, size_t))next("posix_memalign");
    n.aligned_alloc = (void *(*)(size_t, size_t))next("aligned_alloc");
    n.valloc = (void *(*)(size_t))next("valloc");
    n.pvalloc = (void *(*)(size_t))next("pvalloc");
    n.usable_size = (size_t(*)(void *))next("malloc_usable_size");
    if (!n.malloc || !n.free || !n.calloc || !n.realloc || !n.memalign) {
        atomic_store(&state, 0); /* cannot happen with any libc; keep bootstrapping */
        return 0;
    }
    if (next("free") != (void *)n.free || next("memalign") != (void *)n.memalign) {
        pp_heap_unpaired(info.dli_fname ? info.dli_fname : "?");
    }
    if (!n.posix_memalign)
        n.posix_memalign = posix_memalign_fallback;
    if (!n.aligned_alloc)
        n.aligned_alloc = aligned_alloc_fallback;
    if (!n.valloc)
        n.valloc = valloc_fallback;
    if (!n.pvalloc)
        n.pvalloc = pvalloc_fallback;
    if (!n.usable_size)
        n.usable_size = usable_fallback;
    pp_next_ext x;
    x.sallocx = (size_t(*)(const void *, int))next("sallocx");
    x.sdallocx = (void (*)(void *, size_t, int))next("sdallocx");
    x.dallocx = (void (*)(void *, int))next("dallocx");
    x.mallocx = (void *(*)(size_t, int))next("mallocx");
    x.rallocx = (void *(*)(void *, size_t, int))next("rallocx");
    x.xallocx = (size_t(*)(void *, size_t, size_t, int))next("xallocx");
    x.malloc_size = (size_t(*)(void *))next("malloc_size");
    x.tc_malloc_size = (size_t(*)(void *))next("tc_malloc_size");
    x.tc_free = (void (*)(void *))next("tc_free");
    x.tc_free_sized = (void (*)(void *, size_t))next("tc_free_sized");
    pp_next_x = x;
    /* free's and realloc's fast paths open when they read a non-NULL
     * function (with acquire): the bootstrap buffer is marked before. */
    pp_heap_map_own((uintptr_t)boot, BOOT_SIZE);
    void (*fr)(void *) = n.free;
    void *(*re)(void *, size_t) = n.realloc;
    n.free = NULL;
    n.realloc = NULL;
    pp_next = n;
    __atomic_store_n(&pp_next.free, fr, __ATOMIC_RELEASE);
    __atomic_store_n(&pp_next.realloc, re, __ATOMIC_RELEASE);
    atomic_store(&state, 2);
    return 1;
}

/* The last size asked about and its answer, per thread. */
static __thread size_t usable_n, usable_u;

/* Requests below this never get a mapped chunk from glibc (its mmap
 * threshold starts there and only grows). */
#define GLIBC_HEAP_MAX (128 * 1024)

/* Blocks up to this size are probed once per size and thread; glibc's
 * larger ones are computed. */
#define PROBE_CACHED (256 * 1024)

/* For glibc the size is computed, as glibc lays out a chunk: a request
 * served from its heap is a chunk of n plus its 8-byte size field, 16-byte
 * aligned, at least 32 bytes, less that field (a probe could meet a bigger
 * free chunk whose remainder was too small to split, which no other block
 * of that size gets); a block over PROBE_CACHED is a mapped chunk (not
 * probed: freeing one would raise glibc's mmap threshold for the program),
 * the request plus an 8-byte header, 16-byte aligned, plus the next
 * chunk's 8-byte size field, rounded to pages, less 16 bytes of header.
 * Other allocators are probed, past the hooks. */
size_t pp_next_block_size(size_t n)
{
    if (next_glibc && n < GLIBC_HEAP_MAX) {
        size_t chunk = (n + 8 + 15) & ~(size_t)15;
        return (chunk < 32 ? 32 : chunk) - 8;
    }
    if (next_glibc && n > PROBE_CACHED) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t chunk = (((n + 8 + 15) & ~(size_t)15) + 8 + page - 1) & ~(page - 1);
        return chunk - 16 < n ? n : chunk - 16;
    }
    if (n <= PROBE_CACHED && n == usable_n && usable_u)
        return usable_u;
    void *q = pp_next.malloc(n);
    if (!q)
        return n;
    size_t u = pp_next.usable_size(q);
    pp_next.free(q);
    if (u < n)
        u = n;
    if (n <= PROBE_CACHED) {
        usable_n = n;
        usable_u = u;
    }
    return u;
}
