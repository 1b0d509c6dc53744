// prog_heap.cpp: a program with a known heap, not linked with libpprof (it
// is profiled through LD_PRELOAD, over whatever allocator is loaded).
//
//   keep_new      64 MiB live in 4 KiB arrays from operator new[]
//   keep_malloc   32 MiB live in 1 KiB blocks from malloc
//   churn        256 MiB of 256-byte objects from operator new, all freed
//
// Then it prints the allocator loaded (by its API) and the bytes that
// allocator reports in use (jemalloc's stats.allocated, tcmalloc's
// generic.current_allocated_bytes), "ready", and waits to be killed.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vector>

static std::vector<char *> kept_new;
static std::vector<void *> kept_malloc;

__attribute__((noinline)) static void keep_new()
{
    for (int i = 0; i < 64 * 256; i++) {
        char *p = new char[4096];
        p[0] = 1;
        kept_new.push_back(p);
    }
}

__attribute__((noinline)) static void keep_malloc()
{
    for (int i = 0; i < 32 * 1024; i++) {
        void *p = malloc(1024);
        memset(p, 1, 16);
        kept_malloc.push_back(p);
    }
}

struct item { char data[256]; };

__attribute__((noinline)) static void churn()
{
    for (int i = 0; i < 1024 * 1024; i++) {
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
    kept_new.reserve(64 * 256);
    kept_malloc.reserve(32 * 1024);
    keep_new();
    keep_malloc();
    churn();
    printf("allocator=%s\nallocator_bytes=%ld\nready\n", allocator(), allocator_bytes());
    fflush(stdout);
    for (;;)
        pause();
}
