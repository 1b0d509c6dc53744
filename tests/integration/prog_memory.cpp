// prog_memory.cpp: a program whose memory is known, for test_memory.
//
// It holds, and prints its own count of:
//   arena_bytes     pages it touched in its own mmap arena (arena_grow)
//   live_usable     the usable bytes of the heap objects it keeps (1 KiB
//                   strings, 3 of every 4 then freed: glibc keeps the holes)
//   stack_lo/hi     the stack of each of its 4 threads "worker-N", which
//                   touch 1 MiB of their stack each and wait
// then, on each line "grow" read from the FIFO named by its argument,
// touches 16 MiB more of its arena
// and prints "grown". Run under LD_PRELOAD=libpprof.so.
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <string>
#include <vector>

static char *arena;
static size_t arena_used;

__attribute__((noinline)) static char *arena_map(size_t bytes)
{
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char *>(p);
}

__attribute__((noinline)) static void arena_grow(size_t bytes)
{
    memset(arena + arena_used, 1, bytes);
    arena_used += bytes;
}

static pthread_barrier_t ready;

static void *worker(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "worker-%d", (int)(intptr_t)arg); /* its own name, before it reads it */
    pthread_setname_np(pthread_self(), name);
    volatile char buf[1 << 20];
    memset(const_cast<char *>(buf), 2, sizeof buf);
    pthread_attr_t a;
    void *lo;
    size_t size;
    pthread_getattr_np(pthread_self(), &a);
    pthread_attr_getstack(&a, &lo, &size);
    pthread_attr_destroy(&a);
    printf("stack %s %lx %lx\n", name, (unsigned long)lo, (unsigned long)lo + size);
    fflush(stdout);
    pthread_barrier_wait(&ready);
    pause();
    return buf[0] == 2 ? nullptr : arena;
}

__attribute__((noinline)) static std::vector<std::string *> *keep_strings(size_t n)
{
    auto *v = new std::vector<std::string *>();
    for (size_t i = 0; i < n; i++)
        v->push_back(new std::string(1000, 'x'));
    return v;
}

int main(int argc, char **argv)
{
    FILE *in = argc > 1 ? fopen(argv[1], "r") : stdin;
    arena = arena_map(256u << 20);
    arena_grow(40u << 20);
    std::vector<std::string *> *all = keep_strings(200000);
    size_t live = 0;
    for (size_t i = 0; i < all->size(); i++) {
        if (i % 4) {
            delete (*all)[i];
            (*all)[i] = nullptr;
        } else {
            live += malloc_usable_size(&(*(*all)[i])[0]) + malloc_usable_size((*all)[i]);
        }
    }
    pthread_barrier_init(&ready, nullptr, 5);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 4u << 20);
        pthread_create(&t[i], &a, worker, (void *)(intptr_t)i);
        pthread_attr_destroy(&a);
    }
    pthread_barrier_wait(&ready);
    struct mallinfo2 mi = mallinfo2();
    printf("arena_bytes=%zu\nlive_usable=%zu\nmallinfo_inuse=%zu\nmallinfo_free=%zu\nready\n", arena_used, live,
           mi.uordblks + mi.hblkhd, mi.fordblks);
    fflush(stdout);
    char line[64];
    while (in && fgets(line, sizeof line, in)) {
        if (!strncmp(line, "grow", 4)) {
            arena_grow(16u << 20);
            printf("grown\n");
            fflush(stdout);
        }
    }
    return 0;
}
