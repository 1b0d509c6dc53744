/* tree_merge.c: the cost of answering for a process tree.
 *
 * Builds a profile of 10,000 distinct stacks (a custom profile whose
 * entries are added from the leaves of a binary call tree 17 levels deep),
 * encodes it (gzipped protobuf, as a process answers), then merges 10
 * copies of the encoding with pid and process labels (pprof_merge, as the
 * hub answers for 10 processes). For scale, it also encodes one profile
 * of 100,000 distinct stacks, the merge's size. Prints the median of each
 * over ROUNDS rounds, every round's raw figures, and the ratios of the
 * merge to encoding one process's profile and to encoding one of the
 * merge's size.
 *
 *   ./build/bench/tree_merge [ROUNDS [SAVE]]   (SAVE: where to write the
 *                                              encoded profile, to study it)
 */
#define _GNU_SOURCE
#include "bench.h"
#include "pprof.h"
#include "stacks.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STACKS 10000
#define PROCS 10

static pprof_profile *stacks_profile(const char *name, int n)
{
    pprof_custom *c;
    pprof_recorder *r;
    pprof_profile *p = NULL;
    if (bench_stacks_custom(name, n, &c) != 0 || pprof_custom_recorder_new(c, &r) != 0)
        return NULL;
    if (pprof_recorder_write_to(r, &p) != 0)
        p = NULL;
    pprof_recorder_free(r);
    return p;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1 || rounds > 50)
        rounds = 5;
    pprof_profile *p = stacks_profile("tree_merge_stacks", STACKS);
    pprof_profile *big = stacks_profile("tree_merge_big", STACKS * PROCS);
    if (!p || !big)
        return 1;
    size_t n;
    pprof_profile_samples(p, &n);
    printf("# tree_merge: %d rounds; a profile of %zu stacks, encoded once per round and merged %d times over\n",
           rounds, n, PROCS);
    double enc[50], mrg[50], ratio[50], encbig[50], ratiobig[50];
    size_t enc_bytes = 0, out_bytes = 0;
    for (int k = 0; k < rounds; k++) {
        pprof_buffer one = {0}, out = {0};
        double t0 = now_ms();
        if (pprof_profile_write(p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&one)) != 0)
            return 1;
        double t1 = now_ms();
        pprof_merge_input in[PROCS];
        pprof_label labels[PROCS];
        pprof_num_label pids[PROCS];
        for (int i = 0; i < PROCS; i++) {
            pids[i] = (pprof_num_label){"pid", 1000 + i, NULL};
            labels[i] = (pprof_label){"process", "worker"};
            in[i] = (pprof_merge_input){one.data, one.len, &labels[i], 1, &pids[i], 1, NULL};
        }
        double t2 = now_ms();
        if (pprof_merge(in, PROCS, pprof_writer_buffer(&out)) != 0)
            return 1;
        double t3 = now_ms();
        pprof_buffer b = {0};
        if (pprof_profile_write(big, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&b)) != 0)
            return 1;
        double t4 = now_ms();
        enc[k] = t1 - t0;
        mrg[k] = t3 - t2;
        encbig[k] = t4 - t3;
        ratio[k] = mrg[k] / enc[k];
        ratiobig[k] = mrg[k] / encbig[k];
        pprof_buffer_free(&b);
        enc_bytes = one.len;
        if (argc > 2 && k == 0) {
            FILE *f = fopen(argv[2], "wb");
            if (f) {
                fwrite(one.data, 1, one.len, f);
                fclose(f);
            }
        }
        out_bytes = out.len;
        printf("raw round %d: encode %.2f ms (%zu bytes), merge of %d %.2f ms (%zu bytes), encode of the merge's "
               "size %.2f ms; ratios %.2f and %.2f\n",
               k + 1, enc[k], one.len, PROCS, mrg[k], out.len, encbig[k], ratio[k], ratiobig[k]);
        pprof_buffer_free(&one);
        pprof_buffer_free(&out);
    }
    printf("median: encode one %.2f ms (%zu bytes), merge %d %.2f ms (%zu bytes), encode of the merge's size "
           "%.2f ms; merge / encode one %.2f, merge / encode of its size %.2f\n",
           bench_median(enc, rounds), enc_bytes, PROCS, bench_median(mrg, rounds), out_bytes,
           bench_median(encbig, rounds), bench_median(ratio, rounds), bench_median(ratiobig, rounds));
    pprof_profile_free(p);
    pprof_profile_free(big);
    return 0;
}
