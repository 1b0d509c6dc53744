/* test_fork_locks.c: fork never waits on a thread that waits for the profiler.
 * test-labels: plain-only quick
 *
 * A library's pthread_atfork prepare handler takes a mutex of its own, and
 * it was registered before libpprof's (constructor priority 100 < 101), so
 * it runs after libpprof's prepare handler, while the profiler holds its
 * tables. Two worker threads hold that mutex most of the time and, while
 * holding it, contend for a second mutex (recorded in the mutex and block
 * profiles) and allocate and free objects that are nearly all sampled
 * (LIBPPROF_HEAP_RATE=64, set by re-executing itself): each of these would
 * wait for a profiler table held by the fork. The main thread forks 300
 * times; an alarm fails the test if any fork hangs.
 *
 * Afterwards the heap tables must still balance exactly: every object the
 * workers allocated is freed, so their call site shows no sampled object
 * in use, whether its free was counted at once or deferred while a fork
 * held the table.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 300
#define SLOTS 64

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fought = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int running = 1;
static _Atomic long rounds;

static void take_held(void) { pthread_mutex_lock(&held); }
static void give_held(void) { pthread_mutex_unlock(&held); }
#ifndef __clang__
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wprio-ctor-dtor" /* 100: before libpprof's 101, on purpose */
#endif
__attribute__((constructor(100))) static void early_atfork(void)
{
    pthread_atfork(take_held, give_held, give_held);
}
#ifndef __clang__
#pragma GCC diagnostic pop
#endif

static void spin_us(long us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

__attribute__((noinline)) static void *fork_churn(size_t n)
{
    void *p = (n & 1) ? malloc(n) : realloc(NULL, n);
    __asm__ volatile("" ::: "memory"); /* no tail call: this frame is the call site */
    return p;
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg + 1;
    void *slots[SLOTS] = {0};
    while (atomic_load(&running)) {
        pthread_mutex_lock(&held);
        for (int i = 0; i < 20; i++) {
            pthread_mutex_lock(&fought); /* contended: the other worker holds it for a while */
            spin_us(5);
            pthread_mutex_unlock(&fought);
            unsigned r = (unsigned)rand_r(&seed);
            int k = (int)(r % SLOTS);
            if (slots[k] && r % 3 == 0) {
                void *q = realloc(slots[k], 16 + r % 3000);
                if (q)
                    slots[k] = q;
            } else {
                free(slots[k]);
                slots[k] = fork_churn(16 + r % 3000);
            }
        }
        pthread_mutex_unlock(&held);
        atomic_fetch_add(&rounds, 1);
    }
    for (int k = 0; k < SLOTS; k++)
        free(slots[k]);
    return NULL;
}

int main(int argc, char **argv)
{
    (void)argc;
    rerun_with_heap_rate("64", argv);
    CHECK(pprof_mutex_set_fraction(1) == 0);
    CHECK(pprof_block_set_rate(1) == 0);
    pthread_t w[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&w[i], NULL, worker, (void *)i);
    while (atomic_load(&rounds) < 10)
        spin_us(100);

    alarm(60); /* a hung fork ends the test here */
    int forks = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        int st;
        forks += pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
        spin_us(200);
    }
    alarm(0);
    atomic_store(&running, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i], NULL);
    CHECKF(forks == FORKS, "%d of %d forks", forks, FORKS);

    pprof_recorder *h;
    pprof_heap_config raw = {.raw = 1};
    pprof_profile *p = NULL;
    CHECK(pprof_heap_recorder_new(&raw, &h) == 0 && pprof_recorder_write_to(h, &p) == 0);
    int64_t a1 = p ? sum_of(p, "fork_churn", 0) : 0, u1 = p ? sum_of(p, "fork_churn", 2) : -1;
    pprof_heap_stats hs;
    pprof_heap_stats_get(&hs);
    pprof_contention_stats cs;
    pprof_contention_stats_get(&cs);
    printf("%d forks during %ld rounds; fork_churn: %lld sampled, %lld left in use; heap unrecorded %llu, "
           "frees unseen %llu; contention records %llu + %llu, lost %llu\n",
           forks, atomic_load(&rounds), (long long)a1, (long long)u1, (unsigned long long)hs.unrecorded,
           (unsigned long long)hs.frees_unseen, (unsigned long long)cs.mutex_records,
           (unsigned long long)cs.block_records, (unsigned long long)cs.lost);
    CHECK(a1 > 1000);
    CHECK(u1 == 0);
    CHECK(hs.frees_unseen == 0);
    CHECK(cs.mutex_records > 0 && cs.block_records > 0);
    pprof_profile_free(p);
    pprof_recorder_free(h);
    return check_summary("test_fork_locks");
}
