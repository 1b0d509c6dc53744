// prog_heap.cpp: a program with a known heap, not linked with libpprof (it
// is profiled through LD_PRELOAD, over whatever allocator is loaded).
//
//   keep_new      about 64 MiB live in 3,000-byte arrays from operator new[]
//   keep_malloc   about 32 MiB live in 900-byte blocks from malloc
//   churn         a million 256-byte objects from operator new, all freed
//
// The sizes are none of the allocators' size classes, so the allocators'
// bytes differ from the requested ones (900 bytes are a 1,024-byte block
// in jemalloc and tcmalloc). Then it prints each function's bytes as the
// allocator counts them (keep_new_bytes=, keep_malloc_bytes=: the sum of
// malloc_usable_size over its live blocks; churn_bytes=: the count times
// the usable size of one such block), the allocator loaded (by its API)
// and the bytes that allocator reports in use (jemalloc's
// stats.allocated, tcmalloc's generic.current_allocated_bytes), "ready",
// and waits to be killed.
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vector>

static std::vector<char *> kept_new;
static std::vector<void *> kept_malloc;

enum { NEW_SIZE = 3000, NEW_COUNT = 64 * 1048576 / NEW_SIZE };
enum { MALLOC_SIZE = 900, MALLOC_COUNT = 32 * 1048576 / MALLOC_SIZE };
enum { CHURN_COUNT = 1024 * 1024 };

__attribute__((noinline)) static void keep_new()
{
    for (int i = 0; i < NEW_COUNT; i++) {
        char *p = new char[NEW_SIZE];
        p[0] = 1;
        kept_new.push_back(p);
    }
}

__attribute__((noinline)) static void keep_malloc()
{
    for (int i = 0; i < MALLOC_COUNT; i++) {
        void *p = malloc(MALLOC_SIZE);
        memset(p, 1, 16);
        kept_malloc.push_back(p);
    }
}

struct item { char data[256]; };

__attribute__((noinline)) static void churn()
{
    for (int i = 0; i < CHURN_COUNT; i++) {
        item *volatile x = new item;
        x->data[0] = 1;
        delete x;
    }
}

static const char *allocator()
{
    if (dlsym(RTLD_DEFAULT, "mallctl"))
        return "jemalloc";
    if (dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"))
        return "tcmalloc";
    return "glibc";
}

// Bytes in use as the allocator itself counts them, or -1.
static long allocator_bytes()
{
    typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
    typedef int (*tc_fn)(const char *, size_t *);
    if (mallctl_fn mallctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl")) {
        uint64_t epoch = 1;
        size_t sz = sizeof epoch;
        mallctl("epoch", &epoch, &sz, &epoch, sz);
        size_t allocated = 0;
        sz = sizeof allocated;
        if (mallctl("stats.allocated", &allocated, &sz, NULL, 0) == 0)
            return (long)allocated;
    }
    if (tc_fn get = (tc_fn)dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty")) {
        size_t v = 0;
        if (get("generic.current_allocated_bytes", &v))
            return (long)v;
    }
    return -1;
}

int main()
{
    kept_new.reserve(NEW_COUNT);
    kept_malloc.reserve(MALLOC_COUNT);
    keep_new();
    keep_malloc();
    churn();
    size_t new_bytes = 0, malloc_bytes = 0;
    for (char *p : kept_new)
        new_bytes += malloc_usable_size(p);
    for (void *p : kept_malloc)
        malloc_bytes += malloc_usable_size(p);
    item *one = new item;
    size_t churn_bytes = CHURN_COUNT * malloc_usable_size(one);
    delete one;
    printf("keep_new_bytes=%zu\nkeep_malloc_bytes=%zu\nchurn_bytes=%zu\n", new_bytes, malloc_bytes, churn_bytes);
    printf("allocator=%s\nallocator_bytes=%ld\nready\n", allocator(), allocator_bytes());
    fflush(stdout);
    for (;;)
        pause();
}
