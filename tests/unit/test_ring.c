/* test_ring.c: the lock-free sample ring under concurrent producers.
 * test-labels: concurrency quick
 * Four producer threads push numbered records while one consumer drains;
 * every record must arrive exactly once, intact, and a full ring must
 * refuse reservations instead of overwriting. A consumer that waits is
 * woken when the ring fills to a quarter, and not before. A reset in a
 * forked child (cells wiped by the kernel) and one without wiping each
 * leave a ring that takes two whole laps.
 */
#include "ring.h"
#include "check.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PRODUCERS 4
#define PER_PRODUCER 200000

static pp_ring ring;

/* Resets the ring, then fills and drains it twice; whether each lap took
 * exactly its 1024 cells (wiped: the cells are the kernel's zeroes). */
static int reset_laps(int wiped)
{
    int failed = check_failed;
    size_t tk;
    pp_ring_reset(&ring);
    CHECK(pp_ring_peek(&ring) == NULL);
    for (int lap = 0; lap < 2; lap++) {
        int n = 0;
        while (pp_ring_reserve(&ring, &tk)) {
            pp_ring_publish(&ring, tk);
            n++;
        }
        CHECKF(n == 1024, "wiped %d, lap %d after reset took %d", wiped, lap, n);
        for (int i = 0; i < n; i++) {
            CHECK(pp_ring_peek(&ring) != NULL);
            pp_ring_pop(&ring);
        }
    }
    return check_failed == failed;
}

static void *producer(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < PER_PRODUCER;) {
        size_t t;
        pp_record *r = pp_ring_reserve(&ring, &t);
        if (!r)
            continue; /* full: the consumer will catch up */
        r->tid = id;
        r->npcs = 3;
        r->weight = (uint64_t)i;
        r->pcs[0] = (uint64_t)i * 7 + (uint64_t)id;
        r->pcs[2] = ~r->pcs[0];
        pp_ring_publish(&ring, t);
        i++;
    }
    return NULL;
}

/* Fills the ring to one record short of a quarter, rests 0.3 s, and adds
 * the quarter's record. */
static void *fill_quarter(void *arg)
{
    (void)arg;
    size_t t;
    for (int i = 0; i < 256; i++) {
        if (i == 255) {
            struct timespec rest = {0, 300000000};
            nanosleep(&rest, NULL);
        }
        if (pp_ring_reserve(&ring, &t))
            pp_ring_publish(&ring, t);
    }
    return NULL;
}

int main(void)
{
    CHECK(pp_ring_init(&ring, 1024) == 0);
    pthread_t t[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++)
        pthread_create(&t[i], NULL, producer, (void *)(intptr_t)i);
    uint64_t next[PRODUCERS] = {0};
    long got = 0, bad = 0;
    while (got < (long)PRODUCERS * PER_PRODUCER) {
        pp_record *r = pp_ring_peek(&ring);
        if (!r)
            continue;
        int id = r->tid;
        if (id < 0 || id >= PRODUCERS || r->npcs != 3 || r->weight != next[id] ||
            r->pcs[0] != r->weight * 7 + (uint64_t)id || r->pcs[2] != ~r->pcs[0])
            bad++;
        else
            next[id]++;
        pp_ring_pop(&ring);
        got++;
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(t[i], NULL);
    CHECK(bad == 0);
    CHECK(pp_ring_peek(&ring) == NULL);

    /* A full ring refuses and keeps what it has. */
    size_t tk;
    int n = 0;
    while (pp_ring_reserve(&ring, &tk)) {
        pp_ring_publish(&ring, tk);
        n++;
    }
    CHECK(n == 1024);
    CHECK(pp_ring_peek(&ring) != NULL);

    /* Reset (a forked child) drops what was not consumed, a reserved but
     * unpublished cell too, and the ring then takes a full lap again: in a
     * real child, whose cells the kernel wiped (MADV_WIPEONFORK, Linux >=
     * 4.14: zeroes, never written), and as a child without it would (the
     * cells as they were). */
    CHECK(ring.wiped_on_fork);
    while (pp_ring_reserve(&ring, &tk))
        pp_ring_publish(&ring, tk);
    pp_ring_pop(&ring);
    CHECK(pp_ring_reserve(&ring, &tk) != NULL); /* reserved, never published */
    pid_t child = fork();
    if (child == 0)
        _exit(reset_laps(1) ? 0 : 1);
    int status = -1;
    waitpid(child, &status, 0);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child's laps: status %#x", status);
    ring.wiped_on_fork = 0;
    CHECK(reset_laps(0));

    /* The quarter's producer wakes a consumer that waits 60 s; one record
     * short of it, a wait of 0.2 s runs its course. */
    CHECK(pp_ring_peek(&ring) == NULL);
    pp_ring_wait(&ring, 1); /* takes the posts of the laps above */
    pthread_t q;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pp_ring_wait(&ring, 200);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double idle = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECKF(idle >= 0.19, "an empty ring's wait of 0.2 s ended after %.3f s", idle);
    pthread_create(&q, NULL, fill_quarter, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pp_ring_wait(&ring, 60000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(q, NULL);
    double woke = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECKF(woke < 30, "a quarter full woke the wait of 60 s after %.3f s", woke);
    n = 0;
    while (pp_ring_peek(&ring)) {
        pp_ring_pop(&ring);
        n++;
    }
    CHECK(n == 256);
    return check_summary("test_ring");
}
