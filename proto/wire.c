/* wire.c: the byte level of the protobuf writers (encode.c, folded.c):
 * the staging sink that hands bytes to a writer, gzipped or not, the
 * tagged writes of one repeated element, and the Sample message written
 * straight in the wire format. See wire.h.
 */
#include "wire.h"

#include "base/base.h"

#include <stdlib.h>
#include <string.h>

static void sink_emit(pp_sink *s, const unsigned char *data, size_t len)
{
    if (s->err == 0 && len > 0 && s->w.write(s->w.ctx, data, len) < 0)
        s->err = pp_error_detail(PPROF_EIO, "the writer failed");
}

/* Passes the staged bytes on; `flush` is Z_NO_FLUSH, or Z_FINISH to end
 * the gzip stream. */
static void sink_drain(pp_sink *s, int flush)
{
    if (s->err)
        return;
    if (!s->gzip) {
        sink_emit(s, s->in, s->len);
        s->len = 0;
        return;
    }
    s->z.next_in = s->in;
    s->z.avail_in = (uInt)s->len;
    /* deflate stops when the input is used up or the output is full, so
     * output space left over means it is done (Z_STREAM_END for Z_FINISH). */
    do {
        s->z.next_out = s->out;
        s->z.avail_out = (uInt)sizeof s->out;
        if (deflate(&s->z, flush) == Z_STREAM_ERROR) {
            s->err = pp_error_detail(PPROF_EIO, "zlib deflate failed");
            return;
        }
        sink_emit(s, s->out, sizeof s->out - s->z.avail_out);
        if (s->err)
            return;
    } while (s->z.avail_out == 0);
    s->len = 0;
}

void pp_sink_put(pp_sink *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0 && s->err == 0) {
        size_t n = sizeof s->in - s->len;
        if (n > len)
            n = len;
        memcpy(s->in + s->len, p, n);
        s->len += n;
        p += n;
        len -= n;
        if (s->len == sizeof s->in)
            sink_drain(s, Z_NO_FLUSH);
    }
}

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    pp_sink_put((pp_sink *)b, data, len);
}

int pp_sink_new(pprof_writer w, bool gzip, pp_sink **out)
{
    /* Large buffers: on the heap, since callers may run on small stacks. */
    pp_sink *s = malloc(sizeof *s);
    if (!s)
        return pp_fail(PPROF_ENOMEM);
    s->base.append = sink_append;
    s->w = w;
    s->gzip = gzip;
    s->zinit = false;
    s->err = 0;
    s->len = 0;
    if (gzip) {
        memset(&s->z, 0, sizeof s->z);
        /* windowBits 15 + 16: a gzip header and trailer around deflate. */
        int rc = deflateInit2(&s->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
        if (rc != Z_OK) {
            free(s);
            return rc == Z_MEM_ERROR ? PPROF_ENOMEM
                                     : pp_error_detail(PPROF_EIO, "zlib deflateInit2 failed");
        }
        s->zinit = true;
    }
    *out = s;
    return 0;
}

/* Flushes what is staged (and ends the gzip stream) when `finish`, frees
 * the pp_sink and returns its first error. */
int pp_sink_close(pp_sink *s, bool finish)
{
    if (finish)
        sink_drain(s, Z_FINISH);
    int err = s->err;
    if (s->zinit)
        deflateEnd(&s->z);
    free(s);
    return err;
}

static void put_varint(pp_sink *s, uint64_t v)
{
    unsigned char b[10];
    pp_sink_put(s, b, (size_t)(pp_varint_to(b, v) - b));
}

/* Writes one element of a repeated message field of Profile. */
void pp_put_message(pp_sink *s, uint32_t field, const ProtobufCMessage *m)
{
    put_varint(s, (uint64_t)field << 3 | WIRE_LEN);
    put_varint(s, protobuf_c_message_get_packed_size(m));
    protobuf_c_message_pack_to_buffer(m, &s->base);
}

/* Writes one element of a repeated string field of Profile. */
void pp_put_string(pp_sink *s, uint32_t field, const char *str)
{
    size_t len = strlen(str);
    put_varint(s, (uint64_t)field << 3 | WIRE_LEN);
    put_varint(s, len);
    pp_sink_put(s, str, len);
}

/* Samples are most of a profile's bytes, so they are written directly in
 * the wire format (packed location ids and values, labels as nested
 * messages) rather than through protobuf-c's generic packer, which walks
 * the message descriptor for every field of every sample. */
/* The Label message's size: key = 1, str = 2, num = 3, num_unit = 4. */
static size_t label_size(int64_t key, int64_t str, int64_t num, int64_t unit)
{
    size_t n = 0;
    if (key)
        n += 1 + pp_varint_size((uint64_t)key);
    if (str)
        n += 1 + pp_varint_size((uint64_t)str);
    if (num)
        n += 1 + pp_varint_size((uint64_t)num);
    if (unit)
        n += 1 + pp_varint_size((uint64_t)unit);
    return n;
}

static unsigned char *label_to(unsigned char *b, int64_t key, int64_t str, int64_t num, int64_t unit)
{
    *b++ = 3 << 3 | WIRE_LEN;
    b = pp_varint_to(b, label_size(key, str, num, unit));
    if (key)
        *b++ = 1 << 3, b = pp_varint_to(b, (uint64_t)key);
    if (str)
        *b++ = 2 << 3, b = pp_varint_to(b, (uint64_t)str);
    if (num)
        *b++ = 3 << 3, b = pp_varint_to(b, (uint64_t)num);
    if (unit)
        *b++ = 4 << 3, b = pp_varint_to(b, (uint64_t)unit);
    return b;
}

/* Writes one Sample (field 2) in the wire format; PPROF_ENOMEM or 0. */
int pp_put_sample(pp_sink *s, pp_sample_buf *sb, const uint64_t *loc_ids, size_t nlocs, const int64_t *values,
                      size_t nvalues, const pp_wire_label *labels, size_t nlabels)
{
    size_t locs = 0, vals = 0, lab = 0;
    for (size_t j = 0; j < nlocs; j++)
        locs += pp_varint_size(loc_ids[j]);
    for (size_t j = 0; j < nvalues; j++)
        vals += pp_varint_size((uint64_t)values[j]);
    for (size_t j = 0; j < nlabels; j++) {
        size_t n = label_size(labels[j].key, labels[j].str, labels[j].num, labels[j].unit);
        lab += 1 + pp_varint_size(n) + n;
    }
    size_t body = (locs ? 1 + pp_varint_size(locs) + locs : 0) + (vals ? 1 + pp_varint_size(vals) + vals : 0) + lab;
    if (body + 32 > sb->cap) {
        free(sb->p);
        sb->cap = (body + 32) * 2;
        if (!(sb->p = malloc(sb->cap))) {
            sb->cap = 0;
            return PPROF_ENOMEM;
        }
    }
    unsigned char *b = sb->p;
    *b++ = F_SAMPLE << 3 | WIRE_LEN;
    b = pp_varint_to(b, body);
    if (locs) {
        *b++ = 1 << 3 | WIRE_LEN;
        b = pp_varint_to(b, locs);
        for (size_t j = 0; j < nlocs; j++)
            b = pp_varint_to(b, loc_ids[j]);
    }
    if (vals) {
        *b++ = 2 << 3 | WIRE_LEN;
        b = pp_varint_to(b, vals);
        for (size_t j = 0; j < nvalues; j++)
            b = pp_varint_to(b, (uint64_t)values[j]);
    }
    for (size_t j = 0; j < nlabels; j++)
        b = label_to(b, labels[j].key, labels[j].str, labels[j].num, labels[j].unit);
    pp_sink_put(s, sb->p, (size_t)(b - sb->p));
    return 0;
}
