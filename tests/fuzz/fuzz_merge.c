/* fuzz_merge.c: libFuzzer target for pprof_merge, which reads the profiles
 * a process tree's members send the hub (bytes from other processes).
 *
 * The first byte gives the number of inputs (1 to 4); the rest is cut into
 * that many parts at the positions its next bytes give, each part a
 * profile (gzipped or not) with a pid label. A merge must fail with
 * PPROF_EINVAL or PPROF_ENOMEM, or write a profile that protobuf-c decodes
 * and whose every sample names a location that is there. pprof_fold (a
 * tree's format=folded) reads each part and the merge: it must fail with
 * PPROF_EINVAL, PPROF_ENOMEM or PPROF_ENOTFOUND, or write text.
 */
#include "pprof.h"
#include "decode.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) (fprintf(stderr, "fuzz_merge: " __VA_ARGS__), fputc('\n', stderr), abort())

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Folds bytes with a configuration taken from them. */
static void fold(const uint8_t *data, size_t len, unsigned how)
{
    static const char *const types[] = {NULL, "0", "1", "cpu", "inuse_space"};
    pprof_folded_config cfg = {types[how % 5], (int)(how / 5 % 2)};
    pprof_buffer out = {0};
    int rc = pprof_fold(data, len, &cfg, pprof_writer_buffer(&out));
    if (rc != 0 && rc != PPROF_EINVAL && rc != PPROF_ENOMEM && rc != PPROF_ENOTFOUND)
        FAIL("pprof_fold returned %d (%s)", rc, pprof_strerror(rc));
    if (rc == 0 && out.len && out.data[out.len - 1] != '\n')
        FAIL("pprof_fold's text does not end its last line");
    pprof_buffer_free(&out);
}

static void check(const uint8_t *gz, size_t len)
{
    Perftools__Profiles__Profile *pb = decode_gz(gz, len);
    if (!pb)
        FAIL("the merge does not gunzip or decode");
    if (pb->n_string_table == 0 || pb->string_table[0][0])
        FAIL("string 0 is not empty");
    uint64_t *ids = malloc((pb->n_location + 1) * sizeof *ids);
    for (size_t i = 0; ids && i < pb->n_location; i++)
        ids[i] = pb->location[i]->id;
    if (ids)
        qsort(ids, pb->n_location, sizeof *ids, cmp_u64);
    for (size_t i = 0; ids && i < pb->n_sample; i++)
        for (size_t k = 0; k < pb->sample[i]->n_location_id; k++)
            if (!bsearch(&pb->sample[i]->location_id[k], ids, pb->n_location, sizeof *ids, cmp_u64))
                FAIL("a sample names location %llu, which is not there",
                     (unsigned long long)pb->sample[i]->location_id[k]);
    free(ids);
    perftools__profiles__profile__free_unpacked(pb, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t n = 1 + data[0] % 4;
    const uint8_t *p = data + 1, *end = data + size;
    pprof_merge_input in[4];
    pprof_num_label pid[4];
    for (size_t i = 0; i < n; i++) {
        size_t left = (size_t)(end - p), len = left;
        if (i + 1 < n && left > 0) /* cut at a fraction the next byte gives */
            len = left * (*p++) / 256, left--;
        if (len > (size_t)(end - p))
            len = (size_t)(end - p);
        pid[i] = (pprof_num_label){"pid", (int64_t)(100 + i), ""};
        in[i] = (pprof_merge_input){p, len, NULL, 0, &pid[i], 1, i == 1 ? "a member's comment" : NULL};
        p += len;
    }
    for (size_t i = 0; i < n; i++)
        fold(in[i].data, in[i].len, data[0]);
    pprof_buffer out = {0};
    int rc = pprof_merge(in, n, pprof_writer_buffer(&out));
    if (rc == 0) {
        check((const uint8_t *)out.data, out.len);
        fold((const uint8_t *)out.data, out.len, data[0] / 4);
    }
    else if (rc != PPROF_EINVAL && rc != PPROF_ENOMEM)
        FAIL("pprof_merge returned %d (%s)", rc, pprof_strerror(rc));
    pprof_buffer_free(&out);
    return 0;
}
