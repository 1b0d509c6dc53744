/* pb_decode.h: a gzipped pprof protobuf unpacked with protobuf-c, for the
 * unit tests that read what the library wrote. */
#ifndef PP_PB_DECODE_H
#define PP_PB_DECODE_H
#include "pprof.h"
#include "proto/profile.pb-c.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The profile in gz (gzipped), or NULL; free with
 * perftools__profiles__profile__free_unpacked(p, NULL). */
static inline Perftools__Profiles__Profile *decode_gz(const pprof_buffer *gz)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    inflateInit2(&z, 15 + 16);
    size_t cap = gz->len * 16 + 65536;
    unsigned char *raw = malloc(cap);
    z.next_in = (unsigned char *)gz->data;
    z.avail_in = (uInt)gz->len;
    z.next_out = raw;
    z.avail_out = (uInt)cap;
    int rc = inflate(&z, Z_FINISH);
    size_t n = cap - z.avail_out;
    inflateEnd(&z);
    Perftools__Profiles__Profile *p = rc == Z_STREAM_END ? perftools__profiles__profile__unpack(NULL, n, raw) : NULL;
    free(raw);
    return p;
}
#endif
