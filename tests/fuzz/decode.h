/* decode.h: a gzipped pprof protobuf decoded with protobuf-c, for the fuzz
 * targets that check what the library wrote. */
#ifndef FUZZ_DECODE_H
#define FUZZ_DECODE_H
#include "proto/profile.pb-c.h"

#include <stdlib.h>
#include <zlib.h>

/* The profile in gz[0, len), or NULL when it does not gunzip (to at most
 * 64 MiB) or decode. Free with perftools__profiles__profile__free_unpacked. */
static inline Perftools__Profiles__Profile *decode_gz(const void *gz, size_t len)
{
    size_t cap = 64 << 20;
    uint8_t *raw = malloc(cap);
    z_stream z = {0};
    z.next_in = (Bytef *)gz;
    z.avail_in = (uInt)len;
    z.next_out = raw;
    z.avail_out = (uInt)cap;
    Perftools__Profiles__Profile *p = NULL;
    if (raw && inflateInit2(&z, 16 + MAX_WBITS) == Z_OK) {
        if (inflate(&z, Z_FINISH) == Z_STREAM_END)
            p = perftools__profiles__profile__unpack(NULL, z.total_out, raw);
        inflateEnd(&z);
    }
    free(raw);
    return p;
}
#endif
