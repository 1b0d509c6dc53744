/* alloc_stats.c: the next allocator's own statistics.
 *
 * Each allocator is asked in its own terms, through functions looked up
 * at run time (never linked): glibc's mallinfo2 (arena bytes, mapped
 * chunks, bytes in use), jemalloc's mallctl (after "epoch", which
 * refreshes them: stats.allocated, active, resident, mapped, retained),
 * tcmalloc's MallocExtension_GetNumericProperty (current allocated bytes,
 * heap size, page-heap free and unmapped bytes). The memory profile
 * prints them in a comment, beside its own figures, so a reader can check
 * one against the other.
 */
#define _GNU_SOURCE
#include "alloc_stats.h"
#include "heap/heap.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef int (*tc_prop_fn)(const char *, size_t *);

/* The file name of the object at `addr`, or "?". */
static const char *object_name(uintptr_t addr)
{
    Dl_info info;
    if (!addr || !dladdr((void *)addr, &info) || !info.dli_fname)
        return "?";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

static uint64_t je(mallctl_fn f, const char *name)
{
    size_t v = 0, len = sizeof v;
    return f(name, &v, &len, NULL, 0) == 0 ? v : 0;
}

static uint64_t tc(tc_prop_fn f, const char *name)
{
    size_t v = 0;
    return f(name, &v) ? v : 0;
}

void pp_alloc_stats_read(pp_alloc_stats *s)
{
    memset(s, 0, sizeof *s);
    uintptr_t lo, hi;
    int glibc;
    pp_next_object(&lo, &hi, &glibc);
    s->name = "?";
    if (glibc) {
        s->name = "glibc malloc";
        struct mallinfo2 mi = mallinfo2();
        s->known = 1;
        s->allocated = mi.uordblks + mi.hblkhd;
        s->mapped = mi.arena + mi.hblkhd;
        snprintf(s->text, sizeof s->text,
                 "glibc malloc (mallinfo2): arena %zu, mapped chunks %zu, in use %zu, free chunks %zu, releasable %zu",
                 mi.arena, mi.hblkhd, mi.uordblks + mi.hblkhd, mi.fordblks, mi.keepcost);
        return;
    }
    mallctl_fn mallctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
    if (mallctl && (uintptr_t)mallctl >= lo && (uintptr_t)mallctl < hi) {
        uint64_t epoch = 1;
        size_t len = sizeof epoch;
        mallctl("epoch", &epoch, &len, &epoch, len);
        s->name = "jemalloc";
        s->known = 1;
        s->allocated = je(mallctl, "stats.allocated");
        s->resident = je(mallctl, "stats.resident");
        s->mapped = je(mallctl, "stats.mapped");
        snprintf(s->text, sizeof s->text,
                 "jemalloc (mallctl stats.*): allocated %llu, active %llu, resident %llu, mapped %llu, retained %llu",
                 (unsigned long long)s->allocated, (unsigned long long)je(mallctl, "stats.active"),
                 (unsigned long long)s->resident, (unsigned long long)s->mapped,
                 (unsigned long long)je(mallctl, "stats.retained"));
        return;
    }
    tc_prop_fn prop = (tc_prop_fn)dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
    if (prop && (uintptr_t)prop >= lo && (uintptr_t)prop < hi) {
        s->name = "tcmalloc";
        s->known = 1;
        s->allocated = tc(prop, "generic.current_allocated_bytes");
        uint64_t heap = tc(prop, "generic.heap_size"), unmapped = tc(prop, "tcmalloc.pageheap_unmapped_bytes");
        s->mapped = heap;
        s->resident = heap > unmapped ? heap - unmapped : 0;
        snprintf(s->text, sizeof s->text,
                 "tcmalloc (MallocExtension): allocated %llu, heap size %llu, page heap free %llu, unmapped %llu",
                 (unsigned long long)s->allocated, (unsigned long long)heap,
                 (unsigned long long)tc(prop, "tcmalloc.pageheap_free_bytes"), (unsigned long long)unmapped);
        return;
    }
    s->name = object_name(lo);
}
