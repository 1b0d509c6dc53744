/* claims.c: what holds which addresses, and its share of the resident
 * bytes of each mapping.
 *
 * A mapping's Rss (smaps) is whole: the kernel merges neighbouring
 * anonymous mappings of the same protection into one, so a glibc arena, a
 * thread's stack and a program's own mmap may share it. Claims are the
 * address ranges each holder is known to own; mincore says which pages of
 * the mapping are resident, each resident page goes to the first claim
 * (by priority) that covers it, and the mapping's Rss is shared out in
 * proportion (the two differ only where the kernel maps its zero page for
 * a read of untouched memory, which mincore counts and Rss does not).
 *
 * Memory the hooks never saw mapped is found here too, for the
 * allocator: a range that holds a live sampled object is the allocator's,
 * and over glibc its arenas' heaps (64 MiB-aligned, headed by their
 * heap_info) and the chunks it mapped for large blocks (headed by a size
 * word with IS_MMAPPED) are recognised by reading their headers.
 */
#define _GNU_SOURCE
#include "claims.h"
#include "base/base.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* The page size (sysconf's; set by pp_claims_sort, before any count). */
static size_t pp_claims_page = 4096;

#define PAGE ((uintptr_t)pp_claims_page)
#define GLIBC_HEAP_MAX (64u << 20) /* HEAP_MAX_SIZE on 64-bit */
#define IS_MMAPPED 2u
#define NON_MAIN_ARENA 4u

int pp_claims_add(pp_claims *cs, uintptr_t lo, uintptr_t hi, int prio, int root, uint64_t leaf, uint32_t rec)
{
    if (hi <= lo)
        return 0;
    if (pp_reserve(&cs->c, &cs->cap, cs->n, sizeof *cs->c) != 0)
        return -1;
    cs->c[cs->n++] = (pp_claim){lo, hi, prio, root, leaf, rec, 0, 0};
    return 0;
}

static int by_lo(const void *a, const void *b)
{
    const pp_claim *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : x->prio - y->prio;
}

void pp_claims_sort(pp_claims *cs)
{
    long page = sysconf(_SC_PAGESIZE);
    pp_claims_page = page > 0 ? (size_t)page : 4096;
    if (cs->n)
        qsort(cs->c, cs->n, sizeof *cs->c, by_lo);
    uintptr_t top = 0;
    for (size_t i = 0; i < cs->n; i++) { /* the highest end so far: nondecreasing, for first_near */
        top = cs->c[i].hi > top ? cs->c[i].hi : top;
        cs->c[i].top = top;
    }
    cs->sorted = cs->n;
}

/* The first of the sorted claims that may cover a or lie above it: the
 * first whose highest end so far (top, nondecreasing) is above a; every
 * claim before it ends at or below a. */
static size_t first_near(const pp_claims *cs, uintptr_t a)
{
    size_t lo = 0, hi = cs->sorted;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cs->c[mid].top <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether a live sampled object starts in [a, b). */
static int holds_live(const uintptr_t *live, size_t n, uintptr_t a, uintptr_t b)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (live[mid] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && live[lo] < b;
}

/* Reads n words at addr through the kernel (0, or -1 when they are not
 * readable now: the program may have unmapped or protected them since
 * smaps was read, and glibc unmaps large blocks where no hook sees it). */
static int peek(uintptr_t addr, size_t *out, size_t n)
{
    struct iovec local = {out, n * sizeof *out}, remote = {(void *)addr, n * sizeof *out};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)(n * sizeof *out) ? 0 : -1;
}

/* Over glibc: how much of the gap [a, b) from a on is an arena's heap or
 * chunks glibc mapped (0: none). */
static uintptr_t glibc_extent(uintptr_t a, uintptr_t b)
{
    size_t h[4]; /* heap_info: ar_ptr, prev, size, mprotect_size */
    if (a % GLIBC_HEAP_MAX == 0 && b - a >= sizeof h && peek(a, h, 4) == 0 && h[0] &&
        (h[1] == 0 || h[1] % GLIBC_HEAP_MAX == 0) && h[2] >= PAGE && h[2] <= GLIBC_HEAP_MAX && h[3] >= h[2] &&
        h[3] <= GLIBC_HEAP_MAX)
        return a + h[3] < b ? h[3] : b - a;
    uintptr_t p = a;
    size_t c[2];
    while (b - p >= PAGE && peek(p, c, 2) == 0) { /* mapped chunks: prev_size 0, size | IS_MMAPPED */
        size_t size = c[1] & ~(size_t)7;
        if (c[0] != 0 || (c[1] & (IS_MMAPPED | NON_MAIN_ARENA)) != IS_MMAPPED || size % PAGE || !size ||
            size > b - p)
            break;
        p += size;
    }
    return p - a;
}

int pp_claims_find_allocator(pp_claims *cs, const pp_vma *v, const uintptr_t *live, size_t nlive, int glibc,
                             int prio, int root, uint64_t leaf)
{
    size_t n = cs->n; /* the claims added here are not looked at */
    int readable = v->perms[0] == 'r';
    uintptr_t at = v->lo;
    size_t i = first_near(cs, v->lo); /* among the sorted claims, all below n */
    while (at < v->hi) {
        uintptr_t next = i < n && cs->c[i].lo < v->hi ? cs->c[i].lo : v->hi;
        if (next <= at) { /* inside claim i */
            at = cs->c[i].hi > at ? cs->c[i].hi : at;
            i++;
            continue;
        }
        while (at < next) { /* the gap [at, next) */
            uintptr_t len = readable && glibc ? glibc_extent(at, next) : 0;
            if (!len && holds_live(live, nlive, at, next))
                len = next - at;
            if (!len)
                break;
            if (pp_claims_add(cs, at, at + len, prio, root, leaf, 0) != 0)
                return -1;
            at += len;
        }
        at = next;
    }
    return 0;
}

static int by_prio(const void *a, const void *b)
{
    return (*(pp_claim *const *)a)->prio - (*(pp_claim *const *)b)->prio;
}

/* Resident pages of [a, b) in vec (v's pages from base), cleared as they
 * are counted. */
static size_t take_pages(unsigned char *vec, uintptr_t base, uintptr_t a, uintptr_t b)
{
    size_t n = 0;
    for (size_t i = (a - base) / PAGE, end = (b - base + PAGE - 1) / PAGE; i < end; i++) {
        n += vec[i] & 1;
        vec[i] = 0;
    }
    return n;
}

double pp_claims_count(pp_claims *cs, const pp_vma *v)
{
    if (!v->rss)
        return 0;
    size_t k = 0, first = first_near(cs, v->lo);
    for (size_t i = first; i < cs->sorted && cs->c[i].lo < v->hi; i++)
        k += cs->c[i].hi > v->lo;
    if (k == 0)
        return (double)v->rss;
    pp_claim **over = malloc(k * sizeof *over);
    if (!over)
        return (double)v->rss;
    k = 0;
    for (size_t i = first; i < cs->sorted && cs->c[i].lo < v->hi; i++)
        if (cs->c[i].hi > v->lo)
            over[k++] = &cs->c[i];
    if (k == 1 && over[0]->lo <= v->lo && over[0]->hi >= v->hi) {
        over[0]->bytes += (double)v->rss;
        free(over);
        return 0;
    }
    qsort(over, k, sizeof *over, by_prio);
    size_t pages = (v->hi - v->lo) / PAGE, total = 0;
    unsigned char *vec = malloc(pages);
    if (!vec || mincore((void *)v->lo, v->hi - v->lo, vec) != 0) {
        free(vec); /* cannot tell: by address, as if every page were resident */
        for (size_t i = 0; i < k; i++) {
            uintptr_t a = over[i]->lo > v->lo ? over[i]->lo : v->lo, b = over[i]->hi < v->hi ? over[i]->hi : v->hi;
            over[i]->bytes += (double)v->rss * (double)(b - a) / (double)(v->hi - v->lo);
        }
        free(over);
        return 0;
    }
    for (size_t i = 0; i < pages; i++)
        total += vec[i] & 1;
    double scale = total ? (double)v->rss / (double)(total * PAGE) : 0;
    double claimed = 0;
    for (size_t i = 0; i < k; i++) {
        uintptr_t a = over[i]->lo > v->lo ? over[i]->lo : v->lo, b = over[i]->hi < v->hi ? over[i]->hi : v->hi;
        double bytes = (double)take_pages(vec, v->lo, a, b) * PAGE * scale;
        over[i]->bytes += bytes;
        claimed += bytes;
    }
    free(vec);
    free(over);
    return total ? (double)v->rss - claimed : (double)v->rss;
}

void pp_claims_free(pp_claims *cs)
{
    free(cs->c);
    memset(cs, 0, sizeof *cs);
}
