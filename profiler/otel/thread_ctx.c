/* thread_ctx.c: each thread's OTEP 4947 record, and the key map.
 *
 * Every thread that sets a label set or a trace context gets one record in
 * its own TLS (28 bytes of header, PP_OTEL_ATTRS_MAX of attributes), and
 * its otel_thread_ctx_v1 points at it from its first update on. Updates
 * follow the specification's in-place protocol: valid = 0, change the
 * fields, valid = 1, with compiler fences between (a reader stops the
 * thread before reading, so the thread's own order is all that matters).
 *
 * Attributes are the thread's label pairs, each encoded as (key index,
 * value length, value bytes); the key index is the key's place in the
 * append-only key map, published as threadlocal.attribute_key_map in the
 * process context. A label set's encoding is computed once, when the set
 * is built (labels.c keeps it in the set), so changing sets only copies
 * bytes.
 */
#define _GNU_SOURCE
#include "otel_private.h"
#include "base/base.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(offsetof(struct pp_otel_record, valid) == 24 && offsetof(struct pp_otel_record, trace_flags) == 25 &&
                   offsetof(struct pp_otel_record, attrs_size) == 26 && offsetof(struct pp_otel_record, attrs) == 28,
               "OTEP 4947 record layout");

__thread struct pp_otel_record pp_otel_rec __attribute__((aligned(8)));
__thread uint8_t pp_otel_attached;

/* async-signal-safe */
void pp_otel_attach_self(void)
{
    pp_otel_tls_attach(&pp_otel_rec);
    pp_otel_attached = 1;
}

static pthread_mutex_t key_lock = PTHREAD_MUTEX_INITIALIZER;
static char *keys[PP_OTEL_MAX_KEYS];
static _Atomic size_t nkeys; /* published after its entry */
static _Atomic uint64_t keys_refused, attrs_dropped;

void pp_otel_keys_lock(void) { pthread_mutex_lock(&key_lock); }
void pp_otel_keys_unlock(void) { pthread_mutex_unlock(&key_lock); }

const char *const *pp_otel_keys_locked(size_t *n)
{
    *n = atomic_load(&nkeys);
    return (const char *const *)keys;
}

void pp_otel_keys_fork_child(void)
{
    key_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}

/* The index of key among the first n keys, or -1. Entries never change
 * once counted, so no lock is needed. */
static int key_find(const char *key, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(keys[i], key))
            return (int)i;
    return -1;
}

/* The index of key, appended if new (*added set); -1 when the map is full
 * or out of memory (key lock held). */
static int key_index_locked(const char *key, int *added)
{
    size_t n = atomic_load(&nkeys);
    int k = key_find(key, n);
    if (k >= 0)
        return k;
    if (n == PP_OTEL_MAX_KEYS)
        return -1;
    pp_own_heap_enter(); /* the profiler's, though a program's thread builds the set */
    keys[n] = strdup(key);
    pp_own_heap_leave();
    if (!keys[n])
        return -1;
    atomic_store(&nkeys, n + 1); /* after the string: a forked child sees whole entries */
    *added = 1;
    return (int)n;
}

size_t pp_otel_attrs_encode(const pprof_label *pairs, size_t n, uint8_t *buf)
{
    if (!pp_otel_on() || !n)
        return 0;
    size_t used = 0, known = atomic_load(&nkeys);
    int added = 0, locked = 0;
    for (size_t i = 0; i < n; i++) {
        int k = key_find(pairs[i].key, known);
        if (k < 0) { /* a new key: appended under the lock */
            if (!locked)
                pthread_mutex_lock(&key_lock);
            locked = 1;
            k = key_index_locked(pairs[i].key, &added);
        }
        size_t len = strlen(pairs[i].value);
        if (k < 0) {
            atomic_fetch_add(&keys_refused, 1);
            continue;
        }
        if (len > 255 || used + 2 + len > PP_OTEL_ATTRS_MAX) {
            atomic_fetch_add(&attrs_dropped, 1);
            continue;
        }
        buf[used] = (uint8_t)k;
        buf[used + 1] = (uint8_t)len;
        memcpy(buf + used + 2, pairs[i].value, len);
        used += 2 + len;
    }
    if (added)
        pp_otel_republish_locked();
    if (locked)
        pthread_mutex_unlock(&key_lock);
    return used;
}

void pp_otel_thread_stats(uint64_t *k, uint64_t *refused, uint64_t *dropped)
{
    *k = atomic_load(&nkeys);
    *refused = atomic_load(&keys_refused);
    *dropped = atomic_load(&attrs_dropped);
}
