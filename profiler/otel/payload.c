/* payload.c: the process context's payload, a protobuf ProcessContext
 * (the schema is proto/otel_context.proto), written by hand.
 *
 * Resource attributes go into ProcessContext.resource; the thread-record
 * schema (threadlocal.schema_version, a string) and the key map
 * (threadlocal.attribute_key_map, an array of strings whose positions are
 * the key indexes of thread records) into ProcessContext.attributes, where
 * OTEP 4947 readers look for them. The message is small and flat enough to
 * write with a few helpers, which keeps protobuf-c (and proto/) out of the
 * core: every length is computed before its message is written, nothing is
 * allocated (a forked child publishes from its fork handler), and the
 * encoding is what protobuf-c writes for the same message (oneof members
 * always, an empty key not at all).
 */
#include "otel.h"

#include "base/base.h"

#include <string.h>

#define WIRE_VARINT 0
#define WIRE_LEN 2

typedef struct out {
    uint8_t *buf; /* NULL: only count */
    size_t cap, n;
} out;

static void put_byte(out *o, uint8_t b)
{
    if (o->buf && o->n < o->cap)
        o->buf[o->n] = b;
    o->n++;
}

static void put_varint(out *o, uint64_t v)
{
    unsigned char b[10];
    size_t n = (size_t)(pp_varint_to(b, v) - b);
    for (size_t i = 0; i < n; i++)
        put_byte(o, b[i]);
}

/* A field's key and, for a length-delimited one, its length. */
static void put_key(out *o, unsigned field, unsigned wire, size_t len)
{
    put_varint(o, (uint64_t)field << 3 | wire);
    if (wire == WIRE_LEN)
        put_varint(o, len);
}

static void put_bytes(out *o, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        put_byte(o, (uint8_t)s[i]);
}

/* The size of a length-delimited field of `len` bytes (fields below 16). */
static size_t field_size(size_t len)
{
    return 1 + pp_varint_size(len) + len;
}

/* AnyValue { string_value = 1 } or { int_value = 3 } */
static size_t value_size(const pp_otel_attr *a)
{
    return a->is_int ? 1 + pp_varint_size((uint64_t)a->int_value) : field_size(strlen(a->value));
}

static void put_value(out *o, const pp_otel_attr *a)
{
    if (a->is_int) {
        put_key(o, 3, WIRE_VARINT, 0);
        put_varint(o, (uint64_t)a->int_value);
    } else {
        size_t n = strlen(a->value);
        put_key(o, 1, WIRE_LEN, n);
        put_bytes(o, a->value, n);
    }
}

/* KeyValue { key = 1; value = 2 } around a value of vsize bytes. */
static size_t kv_size(const char *key, size_t vsize)
{
    size_t k = strlen(key);
    return (k ? field_size(k) : 0) + field_size(vsize);
}

static void put_kv_head(out *o, const char *key, size_t vsize)
{
    size_t k = strlen(key);
    if (k) {
        put_key(o, 1, WIRE_LEN, k);
        put_bytes(o, key, k);
    }
    put_key(o, 2, WIRE_LEN, vsize);
}

/* ArrayValue { repeated AnyValue values = 1 } of the key names. */
static size_t array_size(const char *const *keys, size_t n)
{
    size_t s = 0;
    for (size_t k = 0; k < n; k++)
        s += field_size(field_size(strlen(keys[k])));
    return s;
}

/* Never allocates. */
size_t pp_otel_payload_pack(const pp_otel_payload *p, uint8_t *buf, size_t cap)
{
    size_t nres = p->nresource < 70 ? p->nresource : 70; /* 64 of the user's, the pid and more */
    size_t nkeys = p->nkeys < PP_OTEL_MAX_KEYS ? p->nkeys : PP_OTEL_MAX_KEYS;
    size_t resource = 0;
    for (size_t i = 0; i < nres; i++)
        resource += field_size(kv_size(p->resource[i].key, value_size(&p->resource[i])));
    pp_otel_attr schema = {.key = "threadlocal.schema_version", .value = p->schema};
    size_t schema_value = value_size(&schema);
    size_t array = array_size(p->keys, nkeys), map_value = field_size(array);
    size_t total = field_size(resource) + field_size(kv_size(schema.key, schema_value)) +
                   field_size(kv_size("threadlocal.attribute_key_map", map_value));
    if (!buf || cap < total)
        return total;
    out o = {buf, cap, 0};
    put_key(&o, 1, WIRE_LEN, resource); /* ProcessContext.resource */
    for (size_t i = 0; i < nres; i++) {
        const pp_otel_attr *a = &p->resource[i];
        size_t v = value_size(a);
        put_key(&o, 1, WIRE_LEN, kv_size(a->key, v)); /* Resource.attributes */
        put_kv_head(&o, a->key, v);
        put_value(&o, a);
    }
    put_key(&o, 2, WIRE_LEN, kv_size(schema.key, schema_value)); /* ProcessContext.attributes */
    put_kv_head(&o, schema.key, schema_value);
    put_value(&o, &schema);
    put_key(&o, 2, WIRE_LEN, kv_size("threadlocal.attribute_key_map", map_value));
    put_kv_head(&o, "threadlocal.attribute_key_map", map_value);
    put_key(&o, 5, WIRE_LEN, array); /* AnyValue.array_value */
    for (size_t k = 0; k < nkeys; k++) {
        size_t n = strlen(p->keys[k]);
        put_key(&o, 1, WIRE_LEN, field_size(n)); /* ArrayValue.values */
        put_key(&o, 1, WIRE_LEN, n);             /* AnyValue.string_value */
        put_bytes(&o, p->keys[k], n);
    }
    return o.n;
}
