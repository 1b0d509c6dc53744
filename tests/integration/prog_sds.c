/* prog_sds.c: a program that sizes its strings by malloc_usable_size, as
 * the "sds" strings of several C servers do; not linked with libpprof (it
 * is profiled through LD_PRELOAD, over whatever allocator is loaded).
 *
 *   prog_sds sizes   prints "n usable [sallocx]" for a list of request
 *                    sizes: what the program sees of a fresh block
 *   prog_sds grow    makes STRINGS strings of exact size and stores them
 *                    as a server stores values: a string whose slack (by
 *                    malloc_usable_size) is over a tenth of its length is
 *                    trimmed with realloc. Frees half, keeps count of the
 *                    bytes it requested for what is still live and of
 *                    their usable sizes, prints "own_bytes=N",
 *                    "own_usable=N", the allocator's own count of its live
 *                    bytes ("allocator_bytes=N HOW"), "ready", and waits
 *                    to be killed. Over glibc, whose mallinfo2 counts
 *                    chunks (8 bytes of header each beyond the usable
 *                    size), allocator_bytes is uordblks + hblkhd less 8
 *                    bytes for each object the program holds: the bytes
 *                    the allocator gave it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STRINGS 200000

typedef struct str {
    char *p;
    size_t len, req; /* bytes held, bytes last requested */
} str;

static str *strs;
/* A new string of len bytes, allocated exactly. */
__attribute__((noinline)) static void make(str *s, size_t len)
{
    s->req = len + 1;
    s->p = malloc(s->req);
    if (!s->p)
        abort();
    memset(s->p, 'a' + (int)(len % 26), len);
    s->p[len] = 0;
    s->len = len;
}

/* Gives the slack back when it is over a tenth of the length, as servers
 * trim the strings they keep. */
__attribute__((noinline)) static void store(str *s)
{
    if (malloc_usable_size(s->p) - s->req > s->len / 10) {
        char *q = realloc(s->p, s->req);
        if (!q)
            abort();
        s->p = q;
    }
}

/* The allocator's own count of the bytes it has handed out and not had
 * back: jemalloc's stats.allocated, tcmalloc's
 * generic.current_allocated_bytes, glibc's mallinfo2 (in-use chunks, and
 * the mmapped ones). Sets *which to the allocator's name. */
static unsigned long long allocator_bytes(const char **which)
{
    int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
        (int (*)(const char *, void *, size_t *, void *, size_t))dlsym(RTLD_DEFAULT, "mallctl");
    int (*tc_prop)(const char *, size_t *) =
        (int (*)(const char *, size_t *))dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
    size_t v = 0, len = sizeof v;
    if (mallctl) {
        uint64_t epoch = 1;
        size_t elen = sizeof epoch;
        *which = "jemalloc stats.allocated";
        if (mallctl("epoch", &epoch, &elen, &epoch, elen) != 0 || mallctl("stats.allocated", &v, &len, NULL, 0) != 0)
            return 0;
        return v;
    }
    if (tc_prop) {
        *which = "tcmalloc generic.current_allocated_bytes";
        return tc_prop("generic.current_allocated_bytes", &v) ? v : 0;
    }
    struct mallinfo2 mi = mallinfo2();
    *which = "glibc mallinfo2 uordblks+hblkhd less 8 B per live object";
    return mi.uordblks + mi.hblkhd - 8 * (STRINGS / 2 + 1);
}

static int sizes(void)
{
    /* jemalloc's own query, when jemalloc is the allocator (mallctl says so:
     * libpprof defines sallocx for every allocator, but not mallctl) */
    size_t (*sallocx)(const void *, int) =
        dlsym(RTLD_DEFAULT, "mallctl") ? (size_t(*)(const void *, int))dlsym(RTLD_DEFAULT, "sallocx") : NULL;
    for (size_t n = 1; n <= 70000; n = n < 64 ? n + 1 : n * 9 / 8) {
        void *p = malloc(n);
        if (sallocx)
            printf("%zu %zu %zu\n", n, malloc_usable_size(p), sallocx(p, 0));
        else
            printf("%zu %zu\n", n, malloc_usable_size(p));
        free(p);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "sizes"))
        return sizes();
    if (argc != 2 || strcmp(argv[1], "grow")) {
        fprintf(stderr, "usage: prog_sds sizes|grow\n");
        return 2;
    }
    srandom(1);
    strs = calloc(STRINGS, sizeof *strs);
    for (int i = 0; i < STRINGS; i++) {
        make(&strs[i], 160 + (size_t)random() % 1800);
        store(&strs[i]);
    }
    /* Half of them go away. */
    uint64_t own = STRINGS * sizeof *strs, usable = malloc_usable_size(strs);
    for (int i = 0; i < STRINGS; i++) {
        if (i % 2) {
            free(strs[i].p);
            strs[i] = (str){0};
        } else {
            own += strs[i].req;
            usable += malloc_usable_size(strs[i].p);
        }
    }
    const char *which = "";
    unsigned long long a = allocator_bytes(&which);
    printf("own_bytes=%llu\nown_usable=%llu\nallocator_bytes=%llu %s\nready\n", (unsigned long long)own,
           (unsigned long long)usable, a, which);
    fflush(stdout);
    for (;;)
        pause();
}
