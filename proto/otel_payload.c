/* otel_payload.c: the process context's payload, a protobuf ProcessContext
 * (proto/otel_context.proto), written with protobuf-c.
 *
 * Resource attributes go into ProcessContext.resource; the thread-record
 * schema (threadlocal.schema_version, a string) and the key map
 * (threadlocal.attribute_key_map, an array of strings whose positions are
 * the key indexes of thread records) into ProcessContext.attributes, where
 * OTEP 4947 readers look for them. The message is built in static storage,
 * so nothing is allocated (a forked child publishes from its fork
 * handler); callers serialize (otel/'s key lock).
 */
#include "otel/otel.h"
#include "proto/otel_context.pb-c.h"

#define MAX_ATTRS 72 /* resource attributes (64 + pid) and the two threadlocal.* */

static Otel__KeyValue kv[MAX_ATTRS];
static Otel__KeyValue *resource_kv[MAX_ATTRS], *extra_kv[2];
static Otel__AnyValue values[MAX_ATTRS];
static Otel__AnyValue key_values[PP_OTEL_MAX_KEYS], *key_ptrs[PP_OTEL_MAX_KEYS];
static Otel__ArrayValue key_array;

/* Fills kv[i] and values[i] with key = value. */
static Otel__KeyValue *string_attr(size_t i, const char *key, const char *value)
{
    otel__any_value__init(&values[i]);
    values[i].value_case = OTEL__ANY_VALUE__VALUE_STRING_VALUE;
    values[i].string_value = (char *)value;
    otel__key_value__init(&kv[i]);
    kv[i].key = (char *)key;
    kv[i].value = &values[i];
    return &kv[i];
}

size_t pp_otel_payload_pack(const pp_otel_payload *p, uint8_t *buf, size_t cap)
{
    size_t nres = p->nresource < MAX_ATTRS - 2 ? p->nresource : MAX_ATTRS - 2;
    size_t nkeys = p->nkeys < PP_OTEL_MAX_KEYS ? p->nkeys : PP_OTEL_MAX_KEYS;
    size_t i = 0;
    for (; i < nres; i++) {
        const pp_otel_attr *a = &p->resource[i];
        resource_kv[i] = string_attr(i, a->key, a->value);
        if (a->is_int) {
            values[i].value_case = OTEL__ANY_VALUE__VALUE_INT_VALUE;
            values[i].int_value = a->int_value;
        }
    }
    Otel__Resource resource = OTEL__RESOURCE__INIT;
    resource.n_attributes = nres;
    resource.attributes = resource_kv;

    extra_kv[0] = string_attr(i++, "threadlocal.schema_version", p->schema);
    for (size_t k = 0; k < nkeys; k++) {
        otel__any_value__init(&key_values[k]);
        key_values[k].value_case = OTEL__ANY_VALUE__VALUE_STRING_VALUE;
        key_values[k].string_value = (char *)p->keys[k];
        key_ptrs[k] = &key_values[k];
    }
    otel__array_value__init(&key_array);
    key_array.n_values = nkeys;
    key_array.values = key_ptrs;
    extra_kv[1] = string_attr(i, "threadlocal.attribute_key_map", "");
    values[i].value_case = OTEL__ANY_VALUE__VALUE_ARRAY_VALUE;
    values[i].array_value = &key_array;

    Otel__ProcessContext ctx = OTEL__PROCESS_CONTEXT__INIT;
    ctx.resource = &resource;
    ctx.n_attributes = 2;
    ctx.attributes = extra_kv;
    size_t size = otel__process_context__get_packed_size(&ctx);
    if (buf && cap >= size)
        otel__process_context__pack(&ctx, buf);
    return size;
}
