/* otel.h: the interface of otel/, the process's context for outside
 * readers.
 *
 * Out-of-process profilers (the OpenTelemetry eBPF profiler and others)
 * read two things from a running process while a thread is stopped:
 *  - the process context (OTEP 4719, process_ctx.c): a small mapping named
 *    OTEL_CTX with a 32-byte header pointing at a protobuf ProcessContext,
 *    the resource attributes and the threadlocal.* attributes that say how
 *    to decode thread records;
 *  - the thread context (OTEP 4947, thread_ctx.c): the exported TLS
 *    pointer otel_thread_ctx_v1 (tls_symbol.c), pointing at the thread's
 *    record: trace ID, span ID, trace flags, and the thread's labels as
 *    attributes whose keys are indexes into threadlocal.attribute_key_map.
 * labels/ keeps each thread's record current on every label-set and
 * trace-context change. LIBPPROF_OTEL_CONTEXT=0 turns both off.
 *
 * Invariants: record writes are async-signal-safe and never allocate;
 * only the owning thread writes its record (readers stop the thread).
 */
#ifndef PP_OTEL_H
#define PP_OTEL_H
#include <stddef.h>
#include <stdint.h>
#include "pprof.h"

/* Reads LIBPPROF_OTEL_CONTEXT and publishes the process context
 * (start-up). */
void pp_otel_init(void);
/* 1 while publication is on (set once, at start-up). */
extern int pp_otel_enabled;
/* async-signal-safe */
static inline int pp_otel_on(void) { return __atomic_load_n(&pp_otel_enabled, __ATOMIC_RELAXED); }
/* fork: the mapping is not inherited (MADV_DONTFORK); the child publishes
 * its own. */
void pp_otel_fork_child(void);

/* ------------------------------------------------------- thread records */

/* Bytes of attributes a thread record holds (28 + this = 256 bytes, within
 * OTEP 4947's advice of 640). */
#define PP_OTEL_ATTRS_MAX 228
#define PP_OTEL_MAX_KEYS 256
/* Encodes label pairs as record attributes (key index, length, value) into
 * buf (PP_OTEL_ATTRS_MAX bytes); returns the bytes used. A pair whose key
 * has no index (past PP_OTEL_MAX_KEYS keys) or that does not fit is left
 * out and counted. New keys are appended to the key map, which
 * republishes the process context. Takes a lock and may allocate: for
 * label sets being built, never in hooks or handlers. 0 when off. */
size_t pp_otel_attrs_encode(const pprof_label *pairs, size_t n, uint8_t *buf);
/* The calling thread's record (OTEP 4947's layout), and whether its
 * otel_thread_ctx_v1 points at it yet. Written only through the two
 * functions below, inline because they run on every label-set and
 * trace-context change. */
struct pp_otel_record {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t valid;
    uint8_t trace_flags;
    uint16_t attrs_size;
    uint8_t attrs[PP_OTEL_ATTRS_MAX];
};
extern __thread struct pp_otel_record pp_otel_rec;
extern __thread uint8_t pp_otel_attached;
/* Points otel_thread_ctx_v1 at the calling thread's record, now whole.
 * async-signal-safe */
void pp_otel_attach_self(void);

/* An update of the record follows OTEP 4947's in-place protocol: valid =
 * 0, change, valid = 1, with compiler fences between (readers stop the
 * thread first). async-signal-safe */
static inline void pp_otel_update_begin(void)
{
    pp_otel_rec.valid = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline void pp_otel_update_end(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pp_otel_rec.valid = 1;
    if (!pp_otel_attached)
        pp_otel_attach_self();
}

/* Makes `attrs` (len bytes, from pp_otel_attrs_encode) the calling
 * thread's record's attributes. async-signal-safe */
static inline void pp_otel_thread_attrs(const uint8_t *attrs, size_t len)
{
    if (!pp_otel_on() || (!pp_otel_attached && !len))
        return;
    pp_otel_update_begin();
    for (size_t i = 0; i < len; i++)
        pp_otel_rec.attrs[i] = attrs[i];
    pp_otel_rec.attrs_size = (uint16_t)len;
    pp_otel_update_end();
}

/* Makes the trace context (NULL: none) the calling thread's record's.
 * async-signal-safe */
static inline void pp_otel_thread_trace(const pprof_trace_context *ctx)
{
    if (!pp_otel_on() || (!pp_otel_attached && !ctx))
        return;
    static const pprof_trace_context none;
    if (!ctx)
        ctx = &none;
    pp_otel_update_begin();
    __builtin_memcpy(pp_otel_rec.trace_id, ctx->trace_id, sizeof pp_otel_rec.trace_id);
    __builtin_memcpy(pp_otel_rec.span_id, ctx->span_id, sizeof pp_otel_rec.span_id);
    pp_otel_rec.trace_flags = ctx->trace_flags;
    pp_otel_update_end();
}

/* ------------------------------------------------------ process context */

/* One attribute of the payload: a string, or an integer when is_int. */
typedef struct pp_otel_attr {
    const char *key;
    const char *value;
    int64_t int_value;
    int is_int;
} pp_otel_attr;

typedef struct pp_otel_payload {
    const pp_otel_attr *resource;   /* Resource.attributes */
    size_t nresource;
    const char *schema;             /* threadlocal.schema_version */
    const char *const *keys;        /* threadlocal.attribute_key_map */
    size_t nkeys;
} pp_otel_payload;

/* Encodes p as a ProcessContext message into buf when it holds cap bytes
 * or more, and returns the encoded size either way (proto/otel_payload.c).
 * Never allocates. */
size_t pp_otel_payload_pack(const pp_otel_payload *p, uint8_t *buf, size_t cap);

/* Counters for pprof_otel_stats_get (thread_ctx.c). */
void pp_otel_thread_stats(uint64_t *keys, uint64_t *keys_refused, uint64_t *attrs_dropped);
#endif
