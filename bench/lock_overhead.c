/* lock_overhead.c: what the lock hooks cost, and how many contended
 * acquisitions their cheap contention test misses.
 *
 * The driver re-executes itself for every run, in three configurations:
 *   absent   no libpprof at all (glibc's pthread_mutex_lock)
 *   off      libpprof preloaded, mutex and block profiles off (the hooks
 *            are one load and a branch in front of the real function)
 *   on       libpprof preloaded, LIBPPROF_MUTEX_FRACTION=1 and
 *            LIBPPROF_BLOCK_RATE=1 (every contention event recorded)
 * and two workloads:
 *   uncontended  one thread, lock+unlock of a private mutex in a loop:
 *                ns per pair (target: on - absent <= 2 ns)
 *   contended    4 threads on one mutex, a short critical section and a
 *                little work outside: ns per acquisition
 * Rounds interleave the configurations; it prints every run and the
 * medians. Miss rate: in the "on" runs of the contended workload, the
 * contention events the mutex profile recorded (read through the API,
 * found with dlsym) over the acquisitions, against a trylock-first
 * reference run of the same workload (absent; an acquisition counts as
 * contended when trylock fails): 1 - (recorded share / reference share).
 *
 * Usage: lock_overhead [rounds]     (default 5)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PPROF_LIB
#error "build with -DPPROF_LIB (bench/CMakeLists.txt does)"
#endif

#define PAIRS 100000000L
#define THREADS 4
#define ACQ 1000000L

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;
static int reference;
static long contended_ref[THREADS];

static pthread_barrier_t go;

static void *contender(void *arg)
{
    long id = (long)arg, c = 0;
    pthread_barrier_wait(&go); /* all start together */
    for (long i = 0; i < ACQ; i++) {
        if (reference) {
            if (pthread_mutex_trylock(&shared) != 0) {
                c++;
                pthread_mutex_lock(&shared);
            }
        } else {
            pthread_mutex_lock(&shared);
        }
        for (int k = 0; k < 50; k++)
            sink += k;
        pthread_mutex_unlock(&shared);
        for (int k = 0; k < 100; k++)
            sink += k;
    }
    contended_ref[id] = c;
    return NULL;
}

/* Contention events the mutex profile holds, through the API (preloaded). */
static long recorded(void)
{
    typedef struct { long rate; int from_start; } cfg_t;
    int (*rnew)(const cfg_t *, void **) = (int (*)(const cfg_t *, void **))dlsym(RTLD_DEFAULT, "pprof_mutex_recorder_new");
    int (*write_to)(void *, void **) = (int (*)(void *, void **))dlsym(RTLD_DEFAULT, "pprof_recorder_write_to");
    typedef struct { size_t nvalues; const int64_t *values; } sample_head;
    const void *(*samples)(const void *, size_t *) =
        (const void *(*)(const void *, size_t *))dlsym(RTLD_DEFAULT, "pprof_profile_samples");
    size_t (*sample_size)(void) = NULL;
    (void)sample_size;
    if (!rnew || !write_to || !samples)
        return -1;
    void *r, *p;
    if (rnew(NULL, &r) || write_to(r, &p))
        return -1;
    size_t n;
    const char *s = samples(p, &n);
    /* pprof_sample: nvalues, values, nlocations, locations, nlabels, labels,
     * nnum_labels, num_labels: 8 words */
    long total = 0;
    for (size_t i = 0; i < n; i++) {
        const sample_head *h = (const sample_head *)(s + i * 8 * sizeof(void *));
        total += (long)h->values[0];
    }
    return total;
}

static int worker(const char *what)
{
    if (!strcmp(what, "recursive") || !strcmp(what, "rwlock")) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_t m;
        pthread_mutex_init(&m, &a);
        pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
        int rec = what[0] == 'r' && what[1] == 'e';
        double t0 = now();
        for (long i = 0; i < PAIRS / 2; i++) {
            if (rec) {
                pthread_mutex_lock(&m);
                pthread_mutex_unlock(&m);
            } else {
                pthread_rwlock_rdlock(&rw);
                pthread_rwlock_unlock(&rw);
            }
        }
        printf("ns_per_pair=%.3f\n", (now() - t0) * 1e9 / (PAIRS / 2));
        return 0;
    }
    if (!strcmp(what, "uncontended")) {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        double t0 = now();
        for (long i = 0; i < PAIRS; i++) {
            pthread_mutex_lock(&m);
            pthread_mutex_unlock(&m);
        }
        printf("ns_per_pair=%.3f\n", (now() - t0) * 1e9 / PAIRS);
        return 0;
    }
    reference = !strcmp(what, "reference");
    pthread_t t[THREADS];
    pthread_barrier_init(&go, NULL, THREADS);
    double t0 = now();
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, contender, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    double dt = now() - t0;
    long ref = 0;
    for (int i = 0; i < THREADS; i++)
        ref += contended_ref[i];
    printf("ns_per_acq=%.3f contended=%ld recorded=%ld\n", dt * 1e9 / (THREADS * ACQ), ref,
           reference ? -1 : recorded());
    return 0;
}

/* In the worker, before its exec: the environment of configuration arg
 * (absent, off or on). */
static void child_env(void *arg)
{
    const char *config = arg;
    unsetenv("LD_PRELOAD");
    setenv("LIBPPROF_MUTEX_FRACTION", strcmp(config, "on") ? "0" : "1", 1);
    setenv("LIBPPROF_BLOCK_RATE", strcmp(config, "on") ? "0" : "1", 1);
    unsetenv("LIBPPROF_ADDR");
    if (strcmp(config, "absent"))
        setenv("LD_PRELOAD", PPROF_LIB, 1);
}

/* Runs one worker: its first stdout line into out. 0 when it exited 0. */
static int run(const char *config, const char *what, char *out, size_t len)
{
    char *argv[] = {"lock_overhead", "worker", (char *)what, NULL};
    int rc = bench_run_self(argv, child_env, (void *)config, -1, out, len);
    out[strcspn(out, "\n")] = '\0';
    return rc;
}

static double num(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? atof(p + strlen(key)) : -1;
}

/* Runs one case in a child, prints its raw line and returns the figure
 * after `key`, or -1 (after saying why) when the child failed. */
static double measure(int round, const char *cfg, const char *what, const char *key, char *line, size_t len)
{
    if (run(cfg, what, line, len))
        return -1;
    printf("raw round %d %-6s %-11s %s\n", round, cfg, what, line);
    return num(line, key);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "worker"))
        return worker(argv[2]);
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1 || rounds > 50)
        rounds = 5;
    static const char *cfg[3] = {"absent", "off", "on"};
    double pair[3][50], rpair[3][50], wpair[3][50], acq[3][50], share_on[50], share_ref[50], diff_on[50],
        diff_off[50];
    char line[256];
    printf("# lock_overhead: %d rounds; uncontended %ld pairs; contended %d threads x %ld acquisitions\n", rounds,
           PAIRS, THREADS, ACQ);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 3; k++) {
            int c = (k + r) % 3;
            if ((pair[c][r] = measure(r + 1, cfg[c], "uncontended", "ns_per_pair=", line, sizeof line)) < 0 ||
                (rpair[c][r] = measure(r + 1, cfg[c], "recursive", "ns_per_pair=", line, sizeof line)) < 0 ||
                (wpair[c][r] = measure(r + 1, cfg[c], "rwlock", "ns_per_pair=", line, sizeof line)) < 0 ||
                (acq[c][r] = measure(r + 1, cfg[c], "contended", "ns_per_acq=", line, sizeof line)) < 0)
                return 1;
            if (c == 2)
                share_on[r] = num(line, "recorded=") / (THREADS * ACQ);
        }
        if (measure(r + 1, "absent", "reference", "contended=", line, sizeof line) < 0)
            return 1;
        share_ref[r] = num(line, "contended=") / (THREADS * ACQ);
        diff_on[r] = pair[2][r] - pair[0][r];
        diff_off[r] = pair[1][r] - pair[0][r];
    }
    double ref = bench_median(share_ref, rounds), on = bench_median(share_on, rounds);
    printf("\nuncontended lock+unlock, ns per pair (median): absent %.2f, off %.2f, on %.2f\n",
           bench_median(pair[0], rounds), bench_median(pair[1], rounds), bench_median(pair[2], rounds));
    printf("added per pair, median of per-round differences: off %+.2f ns, on %+.2f ns (target on <= 2 ns: %s)\n",
           bench_median(diff_off, rounds), bench_median(diff_on, rounds),
           bench_median(diff_on, rounds) <= 2 ? "met" : "MISSED");
    printf("contended, ns per acquisition (median): absent %.1f, off %.1f, on %.1f\n",
           bench_median(acq[0], rounds), bench_median(acq[1], rounds), bench_median(acq[2], rounds));
    printf("uncontended recursive mutex, ns per pair (median): absent %.2f, off %.2f, on %.2f\n",
           bench_median(rpair[0], rounds), bench_median(rpair[1], rounds), bench_median(rpair[2], rounds));
    printf("uncontended rwlock read, ns per pair (median): absent %.2f, off %.2f, on %.2f\n",
           bench_median(wpair[0], rounds), bench_median(wpair[1], rounds), bench_median(wpair[2], rounds));
    printf("contended share of acquisitions (median): trylock-first reference run %.4f; recorded by the hooks "
           "in the on runs %.4f (different runs; the hooks' test is the trylock itself)\n",
           ref, on);
    return 0;
}
