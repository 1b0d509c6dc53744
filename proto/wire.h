/* wire.h: the byte level shared by the protobuf writer (encode.c) and the
 * folded-stacks writer (folded.c), defined in wire.c.
 *
 * A sink stages bytes in a 64 KiB buffer and, when it fills, deflates
 * them (gzip framing, zlib level 1 as Go uses) or hands them to the
 * writer (plain); protobuf-c packs messages straight into it through
 * `base`. The first failure is kept in `err` and stops all later writes.
 * A sink belongs to one thread.
 */
#ifndef PP_PROTO_WIRE_H
#define PP_PROTO_WIRE_H

#include "encode.h"
#include "proto/profile.pb-c.h"

#include <stdbool.h>
#include <stdint.h>
#include <zlib.h>

/* Field numbers of Profile written element by element. */
enum {
    F_SAMPLE_TYPE = 1,
    F_SAMPLE = 2,
    F_MAPPING = 3,
    F_LOCATION = 4,
    F_FUNCTION = 5,
    F_STRING_TABLE = 6,
};
#define WIRE_LEN 2 /* wire type of length-delimited fields */

typedef struct pp_sink {
    ProtobufCBuffer base; /* first: protobuf-c appends through it */
    pprof_writer w;
    bool gzip;
    bool zinit;           /* z needs deflateEnd */
    int err;              /* first failure, 0 while all is well */
    z_stream z;
    size_t len;           /* bytes staged in `in` */
    unsigned char in[PP_ENCODE_CHUNK];
    unsigned char out[PP_ENCODE_CHUNK];
} pp_sink;


/* A label by string ids (0: absent): key = 1, str = 2, num = 3, num_unit = 4. */
typedef struct pp_wire_label {
    int64_t key, str, num, unit;
} pp_wire_label;

/* A buffer reused for each sample's bytes. */
typedef struct pp_sample_buf {
    unsigned char *p;
    size_t cap;
} pp_sample_buf;

/* A sink writing to w, gzipped when `gzip`: 0, PPROF_ENOMEM or PPROF_EIO
 * (zlib would not start). */
int pp_sink_new(pprof_writer w, bool gzip, pp_sink **out);

/* Stages len bytes. */
void pp_sink_put(pp_sink *s, const void *data, size_t len);

/* Flushes what is staged (and ends the gzip stream) when `finish`, frees
 * the sink and returns its first error. */
int pp_sink_close(pp_sink *s, bool finish);

/* Writes one element of a repeated message field of Profile. */
void pp_put_message(pp_sink *s, uint32_t field, const ProtobufCMessage *m);

/* Writes one element of a repeated string field of Profile. */
void pp_put_string(pp_sink *s, uint32_t field, const char *str);

/* Writes one Sample (field 2) in the wire format through sb, a buffer
 * reused from sample to sample; PPROF_ENOMEM or 0. */
int pp_put_sample(pp_sink *s, pp_sample_buf *sb, const uint64_t *loc_ids, size_t nlocs, const int64_t *values,
                  size_t nvalues, const pp_wire_label *labels, size_t nlabels);

#endif
