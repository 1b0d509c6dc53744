/* test_encode_stream.c: unit test of large encoder output and the
 * public writers.
 * test-labels: quick
 *
 * A profile big enough to span many output chunks (every chunk within
 * PP_ENCODE_CHUNK, the decoded copy whole), written to a buffer and
 * through a pipe; the buffer writer's growth and NUL termination, the fd
 * writer on a file, a bad descriptor and a socket whose peer has gone
 * (EPIPE, not SIGPIPE).
 */
#include "encode_fixture.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

/* A profile big enough to span many output chunks: many samples, each with
 * a distinct label value (a large string table), over a few hundred
 * functions. */
enum { BIG_LOCS = 3000, BIG_FUNCS = 300, BIG_SAMPLES = 20000, BIG_DEPTH = 8 };

typedef struct big {
    pprof_profile p;
    pprof_line lines[BIG_LOCS];
    char names[BIG_FUNCS][24];
    pprof_location locs[BIG_LOCS];
    const pprof_location *stacks[BIG_SAMPLES][BIG_DEPTH];
    int64_t values[BIG_SAMPLES][2];
    char reqs[BIG_SAMPLES][16];
    pprof_label labels[BIG_SAMPLES][2];
    pprof_sample samples[BIG_SAMPLES];
} big;

static big *make_big(void)
{
    big *g = calloc(1, sizeof *g);
    for (int i = 0; i < BIG_FUNCS; i++)
        snprintf(g->names[i], sizeof g->names[i], "function_%d", i);
    for (int i = 0; i < BIG_LOCS; i++) {
        g->lines[i] = (pprof_line){ g->names[i % BIG_FUNCS], g->names[i % BIG_FUNCS], "big.c",
                                    i + 1 };
        g->locs[i] = (pprof_location){ .id = (uint64_t)i + 1, .address = 0x400000 + 16 * (uint64_t)i,
                                       .mapping_id = 1, .nlines = 1, .lines = &g->lines[i] };
    }
    for (int i = 0; i < BIG_SAMPLES; i++) {
        for (int d = 0; d < BIG_DEPTH; d++)
            g->stacks[i][d] = &g->locs[(i * 7 + d * 131) % BIG_LOCS];
        g->values[i][0] = i % 5 + 1;
        g->values[i][1] = (i % 5 + 1) * 10000000;
        snprintf(g->reqs[i], sizeof g->reqs[i], "r%d", i);
        g->labels[i][0] = (pprof_label){ "req", g->reqs[i] };
        g->labels[i][1] = (pprof_label){ "kind", i % 2 ? "odd" : "even" };
        g->samples[i] = (pprof_sample){ 2, g->values[i], BIG_DEPTH, g->stacks[i], 2, g->labels[i], 0, NULL };
    }
    g->p = make_profile();
    g->p.samples = g->samples;
    g->p.nsamples = g->p.samples_cap = BIG_SAMPLES;
    g->p.locations = g->locs;
    g->p.nlocations = BIG_LOCS;
    g->p.nmappings = 1;
    CHECK(pp_model_index(&g->p) == 0);
    return g;
}

/* Reads a pipe to its end into a buffer. */
typedef struct reader {
    int fd;
    pprof_buffer *b;
} reader;

static void *pipe_reader(void *arg)
{
    reader *rd = arg;
    pprof_writer w = pprof_writer_buffer(rd->b);
    char buf[4096];
    ssize_t n;
    while ((n = read(rd->fd, buf, sizeof buf)) > 0)
        w.write(w.ctx, buf, (size_t)n);
    return NULL;
}

static void test_big(void)
{
    big *g = make_big();
    pprof_buffer gz = { 0 };
    max_chunk = 0;
    pprof_writer w = { chunk_write, &gz };
    CHECK(pprof_profile_write(&g->p, PPROF_FORMAT_PROTO_GZIP, w) == 0);
    CHECK(max_chunk > 0 && max_chunk <= 65536);

    unsigned char *raw = NULL;
    long rawlen = gunzip(gz.data, gz.len, &raw);
    CHECK(rawlen > 4 * 65536); /* many staging buffers' worth */
    Perftools__Profiles__Profile *pb =
        rawlen > 0 ? perftools__profiles__profile__unpack(NULL, (size_t)rawlen, raw) : NULL;
    CHECK(pb != NULL);
    if (pb) {
        CHECK(pb->n_sample == BIG_SAMPLES);
        CHECK(pb->n_location == BIG_LOCS);
        CHECK(pb->n_function == BIG_FUNCS);
        CHECK(pb->n_mapping == 1 && !pb->mapping[0]->has_inline_frames);
        /* "", 4 type strings, 2 comments, mapping path + build ID, 300
         * names, "big.c", "req", "kind", "odd", "even", 20000 req values */
        CHECK(pb->n_string_table == 1 + 4 + 2 + 2 + BIG_FUNCS + 1 + 4 + BIG_SAMPLES);
        int bad = 0;
        for (size_t i = 0; i < pb->n_sample && i < BIG_SAMPLES; i++) {
            const Perftools__Profiles__Sample *s = pb->sample[i];
            if (s->n_location_id != BIG_DEPTH || s->n_value != 2 || s->n_label != 2 ||
                s->value[0] != g->values[i][0] || s->value[1] != g->values[i][1] ||
                strcmp(str(pb, s->label[0]->str), g->reqs[i]) != 0 ||
                strcmp(str(pb, s->label[1]->str), i % 2 ? "odd" : "even") != 0) {
                bad++;
                continue;
            }
            for (int d = 0; d < BIG_DEPTH; d++)
                if (s->location_id[d] != g->stacks[i][d]->id)
                    bad++;
        }
        CHECK(bad == 0);
        for (size_t i = 0; i < pb->n_location; i++) {
            const Perftools__Profiles__Location *l = pb->location[i];
            if (l->id != i + 1 || l->n_line != 1 ||
                strcmp(fn_name(pb, l->line[0]->function_id), g->names[i % BIG_FUNCS]) != 0 ||
                l->line[0]->line != (int64_t)i + 1)
                bad++;
        }
        CHECK(bad == 0);
        perftools__profiles__profile__free_unpacked(pb, NULL);
    }

    /* A writer failing midway: PPROF_EIO, and it is not called again. */
    failing f = { 0, 3 };
    pprof_writer fw = { failing_write, &f };
    CHECK(pprof_profile_write(&g->p, PPROF_FORMAT_PROTO, fw) == PPROF_EIO);
    CHECK(f.calls == 3);

    /* The fd writer through a pipe, read concurrently: same bytes. */
    int fds[2];
    CHECK(pipe(fds) == 0);
    pthread_t t;
    pprof_buffer got = { 0 };
    reader rd = { fds[0], &got };
    CHECK(pthread_create(&t, NULL, pipe_reader, &rd) == 0);
    CHECK(pprof_profile_write(&g->p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_fd(fds[1])) == 0);
    close(fds[1]);
    pthread_join(t, NULL);
    close(fds[0]);
    CHECK(got.len == gz.len && memcmp(got.data, gz.data, gz.len) == 0);
    pprof_buffer_free(&got);

    /* Folded: at most a line per sample, the default type's values all there. */
    pprof_buffer fb = { 0 };
    CHECK(pprof_profile_write(&g->p, PPROF_FORMAT_FOLDED, pprof_writer_buffer(&fb)) == 0);
    size_t nl = 0;
    int64_t want = 0, got_sum = 0;
    int vi = g->p.default_type >= 0 ? g->p.default_type : (int)g->p.ntypes - 1;
    for (size_t i = 0; i < g->p.nsamples; i++)
        want += g->p.samples[i].values[vi];
    for (char *l = fb.data; l && l < fb.data + fb.len;) {
        char *end = strchr(l, '\n'), *sp = end;
        while (sp > l && sp[-1] != ' ')
            sp--;
        nl++;
        got_sum += strtoll(sp, NULL, 10);
        l = end + 1;
    }
    CHECK(nl > 0 && nl <= BIG_SAMPLES);
    CHECK(got_sum == want);
    pprof_buffer_free(&fb);

    free(raw);
    pprof_buffer_free(&gz);
    pp_model_tables_free(&g->p);
    free(g);
}

static void test_writers(void)
{
    /* buffer: growth, NUL termination, free */
    pprof_buffer b = { 0 };
    pprof_writer w = pprof_writer_buffer(&b);
    CHECK(w.write(w.ctx, "", 0) == 0);
    CHECK(b.len == 0);
    CHECK(w.write(w.ctx, "hello", 5) == 0);
    CHECK(b.len == 5 && b.cap >= 6 && strcmp(b.data, "hello") == 0);
    char filler[10000];
    memset(filler, 'x', sizeof filler);
    CHECK(w.write(w.ctx, filler, sizeof filler) == 0);
    CHECK(b.len == 10005 && b.cap >= 10006 && b.data[10005] == '\0');
    CHECK(memcmp(b.data, "hellox", 6) == 0 && b.data[10004] == 'x');
    pprof_buffer_free(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
    pprof_buffer_free(&b); /* twice is fine */
    pprof_buffer_free(NULL);

    /* fd: a temp file gets exactly the buffer's bytes */
    pprof_profile p = make_profile();
    pprof_buffer gz = { 0 };
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&gz)) == 0);
    char path[] = "/tmp/test_encode_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        unlink(path);
        CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_fd(fd)) == 0);
        CHECK(lseek(fd, 0, SEEK_SET) == 0);
        char *back = malloc(gz.len + 1);
        ssize_t n = read(fd, back, gz.len + 1);
        CHECK(n == (ssize_t)gz.len && memcmp(back, gz.data, gz.len) == 0);
        free(back);
        close(fd);
    }
    pprof_buffer_free(&gz);

    /* fd: a bad descriptor fails, giving PPROF_EIO */
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_fd(-1)) == PPROF_EIO);

    /* fd: a socket whose peer has closed fails with EPIPE, without SIGPIPE
     * (which would end this test) */
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    close(sv[1]);
    pprof_writer sw = pprof_writer_fd(sv[0]);
    errno = 0;
    CHECK(sw.write(sw.ctx, "x", 1) < 0);
    CHECK(errno == EPIPE);
    CHECK(pprof_profile_write(&p, PPROF_FORMAT_FOLDED, sw) == PPROF_EIO);
    close(sv[0]);
    pp_model_tables_free(&p);
}

int main(void)
{
    test_big();
    test_writers();
    return check_summary("test_encode_stream");
}
