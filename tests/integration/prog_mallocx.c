/* prog_mallocx.c: a program that allocates through jemalloc's own entry
 * points, as BIND 9's isc_mem does (test_mallocx). Run with jemalloc
 * preloaded after libpprof.
 *
 * from_mallocx() keeps 3,000 of 4,000 blocks of 1,000 bytes from
 * mallocx(MALLOCX_ZERO | MALLOCX_ALIGN(64)), the other 1,000 freed with
 * sdallocx; from_rallocx() keeps 2,000 blocks of 100 bytes moved to
 * 3,000 bytes with rallocx. Prints "ready BAD" (BAD: the blocks that were
 * not zeroed or not aligned, or could not be made) and sleeps SECONDS
 * (argv[1]) for the profile to be read; "nojemalloc" when mallocx is not
 * there.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MALLOCX_ZERO 0x40
#define MALLOCX_ALIGN(a) (__builtin_ctz(a))

static void *(*mallocx_fn)(size_t, int);
static void *(*rallocx_fn)(void *, size_t, int);
static void (*sdallocx_fn)(void *, size_t, int);
static void *kept[6000];

__attribute__((noinline)) static int from_mallocx(void)
{
    int bad = 0;
    void *p[4000];
    for (int i = 0; i < 4000; i++) {
        unsigned char *b = p[i] = mallocx_fn(1000, MALLOCX_ZERO | MALLOCX_ALIGN(64));
        if (!b || (uintptr_t)b % 64) {
            bad++;
            continue;
        }
        for (int k = 0; k < 1000; k++)
            if (b[k]) {
                bad++;
                break;
            }
        b[0] = 1;
    }
    for (int i = 0; i < 4000; i++) {
        if (i % 4 == 3 && p[i])
            sdallocx_fn(p[i], 1000, 0);
        else
            kept[i] = p[i];
    }
    return bad;
}

__attribute__((noinline)) static int from_rallocx(void)
{
    int bad = 0;
    for (int i = 0; i < 2000; i++) {
        char *b = malloc(100);
        if (b)
            b[0] = 7;
        char *q = b ? rallocx_fn(b, 3000, 0) : NULL;
        if (!q || q[0] != 7)
            bad++;
        kept[4000 + i] = q;
    }
    return bad;
}

int main(int argc, char **argv)
{
    mallocx_fn = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "mallocx");
    rallocx_fn = (void *(*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "rallocx");
    sdallocx_fn = (void (*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "sdallocx");
    if (!mallocx_fn || !rallocx_fn || !sdallocx_fn) {
        puts("nojemalloc");
        return 0;
    }
    int bad = from_mallocx() + from_rallocx();
    printf("ready %d\n", bad);
    fflush(stdout);
    sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 0);
    return kept[0] == NULL;
}
