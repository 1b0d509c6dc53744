/* prog_labels_linked.c: labeled CPU work for test_labels_tags.sh.
 *
 * Records a CPU profile at 100 Hz while two threads run: one alternates
 * between label values work=heavy and work=light in a 3:1 ratio of CPU
 * time, in chunks of random length (50-150 ms, so they do not lock in phase
 * with the timer tick), until it has used argv[2] seconds of CPU; the other
 * burns CPU in unlabeled_work, with no labels, until the first is done.
 * Then writes the profile (gzipped protobuf) to argv[1].
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "../burn.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <time.h>

static double seconds;
static _Atomic int done;

__attribute__((noinline)) static void burn(double s)
{
    burn_cpu(s, 1.0000001);
}

static void run_chunk(void *arg) { burn(*(double *)arg); }

static void *labeled(void *arg)
{
    (void)arg;
    pprof_label h[] = {{"work", "heavy"}}, l[] = {{"work", "light"}};
    pprof_labels *heavy, *light;
    pprof_labels_new(h, 1, &heavy);
    pprof_labels_new(l, 1, &light);
    unsigned seed = 12345;
    while (burn_thread_cpu_s() < seconds) {
        double chunk = 0.050 + (rand_r(&seed) % 1000) / 10000.0, three = 3 * chunk;
        pprof_do(heavy, run_chunk, &three);
        pprof_do(light, run_chunk, &chunk);
    }
    pprof_labels_unref(heavy);
    pprof_labels_unref(light);
    atomic_store(&done, 1);
    return NULL;
}

__attribute__((noinline)) static void unlabeled_work(double s)
{
    burn(s);
    __asm__ volatile("" ::: "memory"); /* stays on the stack: no tail call */
}

static void *unlabeled(void *arg)
{
    (void)arg;
    while (!atomic_load(&done))
        unlabeled_work(0.05);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    seconds = atof(argv[2]);
    pprof_recorder *r;
    if (pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 100}, &r) || pprof_recorder_start(r))
        return 1;
    pthread_t a, b;
    pthread_create(&a, NULL, labeled, NULL);
    pthread_create(&b, NULL, unlabeled, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pprof_profile *p;
    if (pprof_recorder_stop(r, &p))
        return 1;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = fd >= 0 ? pprof_profile_write(p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_fd(fd)) : -1;
    if (fd >= 0)
        close(fd);
    pprof_profile_free(p);
    pprof_recorder_free(r);
    return rc ? 1 : 0;
}
