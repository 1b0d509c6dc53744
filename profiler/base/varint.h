/* varint.h: protobuf's base-128 varints, for the two hand-written
 * encoders (proto/wire.c, otel/payload.c). Async-signal-safe: they only
 * compute (a forked child writes the OpenTelemetry payload from its fork
 * handler). */
#ifndef PP_BASE_VARINT_H
#define PP_BASE_VARINT_H
#include <stddef.h>
#include <stdint.h>

/* How many bytes v takes as a varint (1 to 10). Async-signal-safe. */
static inline size_t pp_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Writes v as a varint at b, which has room for pp_varint_size(v) bytes;
 * returns the end. Async-signal-safe. */
static inline unsigned char *pp_varint_to(unsigned char *b, uint64_t v)
{
    while (v >= 0x80) {
        *b++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *b++ = (unsigned char)v;
    return b;
}
#endif
