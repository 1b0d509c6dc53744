/* regions.c: the anonymous mappings the hooks saw, and who made them.
 *
 * A sorted array of disjoint regions [lo, hi), each with its class and,
 * for the program's, the record of the stack and labels that mapped it
 * (a record store keyed by stack and labels, as the heap's). A mapping
 * enters the table; an unmapping or a new mapping over part of a region
 * cuts it (splitting it when the cut is inside); a moved mapping keeps its
 * record. Mappings made in ways the hooks do not see (the C library's own
 * mmap inside malloc and pthread_create, a raw system call) are not here:
 * the memory profile shares those out by other means, and a region left
 * stale by an unseen unmapping is harmless there (it is intersected with
 * the mappings that exist).
 *
 * Everything here is reached from inside mmap, which allocators call from
 * inside malloc: no malloc, memory from pp_map only, the store's futex
 * lock taken as hooks take it (never waiting for a fork). Inserting moves
 * the regions above the new one: mappings are rare next to allocations,
 * and a process with 10,000 of them moves 240 KB at worst per mapping.
 */
#define _GNU_SOURCE
#include "memory.h"
#include "base/base.h"
#include "heap/heap.h"
#include "labels/labels.h"
#include "model/model.h"
#include "store/store.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_REGIONS (1u << 20)

static pp_store stacks = PP_STORE_INIT(64ull << 20, 1u << 12);
static pp_region *regions; /* pp_map'd, MAX_REGIONS; stacks.lock */
static size_t nregions;
static _Atomic uint64_t lost;

/* The first region whose hi is above a (lock held). malloc-safe */
static size_t first_above(uintptr_t a)
{
    size_t lo = 0, hi = nregions;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (regions[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Opens room for one region at i (lock held); 0, or -1 when full.
 * malloc-safe */
static int open_at(size_t i)
{
    if (!regions && !(regions = pp_map((size_t)MAX_REGIONS * sizeof *regions, PROT_READ | PROT_WRITE, MAP_NORESERVE,
                                       "table of mmap regions")))
        return -1;
    if (nregions == MAX_REGIONS)
        return -1;
    memmove(&regions[i + 1], &regions[i], (nregions - i) * sizeof *regions);
    nregions++;
    return 0;
}

/* Takes [a, b) out of every region (lock held). malloc-safe */
static void cut(uintptr_t a, uintptr_t b)
{
    size_t i = first_above(a);
    while (i < nregions && regions[i].lo < b) {
        pp_region *r = &regions[i];
        if (r->lo < a && r->hi > b) { /* a hole inside: split in two */
            if (open_at(i + 1) != 0) {
                atomic_fetch_add(&lost, 1);
                regions[i].hi = a;
                return;
            }
            regions[i + 1] = regions[i];
            regions[i].hi = a;
            regions[i + 1].lo = b;
            return;
        }
        if (r->lo < a) {
            r->hi = a;
            i++;
        } else if (r->hi > b) {
            r->lo = b;
            return;
        } else {
            memmove(r, r + 1, (nregions - i - 1) * sizeof *r);
            nregions--;
        }
    }
}

/* Enters [a, b) as `cls` with record `rec` (lock held). malloc-safe */
static void enter(uintptr_t a, uintptr_t b, uint32_t cls, uint32_t rec)
{
    cut(a, b);
    size_t i = first_above(a);
    if (open_at(i) != 0) {
        atomic_fetch_add(&lost, 1);
        return;
    }
    regions[i] = (pp_region){a, b, rec, cls};
}

/* The class of a mapping made from `caller`. malloc-safe */
static uint32_t class_of(uint64_t caller)
{
    uintptr_t lo, hi;
    int glibc;
    if (pp_own_depth > 0)
        return PP_REGION_OWN;
    pp_next_object(&lo, &hi, &glibc);
    return caller >= lo && caller < hi ? PP_REGION_ALLOCATOR : PP_REGION_PROGRAM;
}

static __thread int busy; /* this thread is inside a hook's work */

/* The end of the page that holds the byte before end: the kernel maps and
 * unmaps whole pages. malloc-safe */
static uintptr_t page_end(uintptr_t end)
{
    static uintptr_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (uintptr_t)p : 4096;
    }
    return (end + page - 1) & ~(page - 1);
}

/* malloc-safe */
void pp_memory_mapped(void *p, size_t len, int flags, uint64_t caller)
{
    if (busy || !len)
        return;
    busy = 1;
    int e = errno;
    uintptr_t a = (uintptr_t)p, b = page_end(a + len);
    uint32_t cls = PP_REGION_PROGRAM, rec = 0;
    int anon = (flags & MAP_ANONYMOUS) && !(flags & MAP_SHARED);
    uint64_t pcs[PPROF_DEFAULT_MAX_FRAMES + 1];
    int n = 0;
    if (anon && (cls = class_of(caller)) == PP_REGION_PROGRAM) {
        int64_t saved[2];
        pp_heap_guard_enter(saved);
        int end;
        n = pp_unwind_here(caller, pcs, PPROF_DEFAULT_MAX_FRAMES, &end);
        if (end)
            pcs[n++] = pp_pc_stack_end(end);
        pp_heap_guard_leave(saved);
    }
    const pprof_labels *labels = n ? pp_labels_cumulative(pp_labels_current_peek()) : NULL;
    if (pp_mutex_lock_hook(&stacks.lock)) {
        if (n)
            rec = pp_store_find_locked(&stacks, pcs, (size_t)n, labels, 0);
        if (!anon)
            cut(a, b); /* a file or shared mapping over part of a region */
        else if (cls != PP_REGION_PROGRAM || rec)
            enter(a, b, cls, rec);
        else
            atomic_fetch_add(&lost, 1);
        pp_mutex_unlock(&stacks.lock);
    } else if (anon) {
        atomic_fetch_add(&lost, 1);
    }
    errno = e;
    busy = 0;
}

/* malloc-safe */
void pp_memory_unmapped(void *p, size_t len)
{
    if (busy || !len || !nregions)
        return;
    if (pp_mutex_lock_hook(&stacks.lock)) {
        cut((uintptr_t)p, page_end((uintptr_t)p + len));
        pp_mutex_unlock(&stacks.lock);
    }
}

/* malloc-safe */
void pp_memory_remapped(void *old, size_t old_len, void *p, size_t len)
{
    if (busy || !pp_mutex_lock_hook(&stacks.lock))
        return;
    uintptr_t a = (uintptr_t)old;
    size_t i = first_above(a);
    int had = i < nregions && regions[i].lo <= a;
    pp_region r = had ? regions[i] : (pp_region){0};
    if (p != old || len < old_len)
        cut(a, page_end(a + old_len));
    if (had)
        enter((uintptr_t)p, page_end((uintptr_t)p + len), r.cls, r.rec);
    else
        cut((uintptr_t)p, page_end((uintptr_t)p + len)); /* moved over a region, or grown into one */
    pp_mutex_unlock(&stacks.lock);
}

size_t pp_regions_copy(pp_region *out, size_t max)
{
    pp_mutex_lock(&stacks.lock);
    size_t n = nregions;
    if (out && n && max)
        memcpy(out, regions, (n < max ? n : max) * sizeof *out);
    pp_mutex_unlock(&stacks.lock);
    return n;
}

const uint64_t *pp_regions_stack(uint32_t rec, size_t *n, const pprof_labels **labels)
{
    const pp_rec *r = pp_store_rec(&stacks, rec);
    *n = r->nframes;
    *labels = r->labels;
    return r->pcs;
}

uint64_t pp_regions_lost(void)
{
    return atomic_load(&lost);
}

void pp_memory_fork_prepare(void)
{
    pp_mutex_lock(&stacks.lock);
}

void pp_memory_fork_parent(void)
{
    pp_mutex_unlock(&stacks.lock);
}

void pp_memory_fork_child(void)
{
    pp_store_fork_child(&stacks);
}
