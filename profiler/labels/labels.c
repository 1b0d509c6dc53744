/* labels.c: immutable label sets and each thread's current set.
 *
 * A set is one allocation: a reference count, the pairs sorted by key, and
 * the strings they point to. Sets never change after they are built, so
 * any thread may read one while it holds a reference.
 *
 * Each thread's current set lives in an initial-exec TLS pointer that owns
 * one reference. The profiling signal handler reads it on the same thread
 * and takes a reference with one atomic increment (no lock, no allocation);
 * the thread itself only ever replaces the pointer before dropping the old
 * set's reference, so the handler never sees a set that is being freed.
 * Sets referenced by samples still in the ring are freed by the collector
 * when it drops the sample's reference.
 *
 * pprof_do with no current set uses the given set as it is (no
 * allocation); nested calls merge into a new set.
 *
 * After the pairs, a set keeps its pairs encoded as the attributes of an
 * OpenTelemetry thread record (otel/, computed once when it is built), so
 * making it current only copies them into the thread's record.
 */
#include "labels.h"
#include "base/base.h"
#include "otel/otel.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct pprof_labels {
    _Atomic uint32_t refs;
    uint32_t n;
    pprof_label pairs[];
};

_Static_assert(offsetof(struct pprof_labels, n) == PP_LABELS_N_OFFSET, "label set layout (labels.h)");
_Static_assert(offsetof(struct pprof_labels, pairs) == PP_LABELS_PAIRS_OFFSET, "label set layout (labels.h)");

static __thread pprof_labels *current;
static _Atomic uint64_t n_created, n_freed;

static int valid_pairs(const pprof_label *pairs, size_t n)
{
    if (n && !pairs)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!pairs[i].key || !pairs[i].key[0] || !pairs[i].value)
            return 0;
    return 1;
}

/* Inserts p into the sorted array a of *n pairs, replacing an equal key. */
static void put(pprof_label *a, size_t *n, pprof_label p)
{
    size_t lo = 0, hi = *n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(a[mid].key, p.key);
        if (c == 0) {
            a[mid] = p;
            return;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(a + lo + 1, a + lo, (*n - lo) * sizeof *a);
    a[lo] = p;
    (*n)++;
}

/* Builds a set of base's pairs overridden by extra's. */
static int build(const pprof_label *base, size_t nbase, const pprof_label *extra, size_t nextra,
                 pprof_labels **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    if (!valid_pairs(extra, nextra) || nbase + nextra > 1u << 20)
        return pp_fail(PPROF_EINVAL);
    pprof_label stack[16] = {{0}}, *tmp = stack; /* zeroed: gcc -O3 sees it unset when n is 0 */
    if (nbase + nextra > 16 && !(tmp = malloc((nbase + nextra) * sizeof *tmp)))
        return pp_fail(PPROF_ENOMEM);
    size_t n = 0;
    for (size_t i = 0; i < nbase; i++)
        put(tmp, &n, base[i]);
    for (size_t i = 0; i < nextra; i++)
        put(tmp, &n, extra[i]);
    uint8_t attrs[PP_OTEL_ATTRS_MAX];
    uint16_t nattrs = (uint16_t)pp_otel_attrs_encode(tmp, n, attrs);
    size_t bytes = sizeof(pprof_labels) + n * sizeof(pprof_label) + sizeof nattrs + nattrs;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(tmp[i].key) + strlen(tmp[i].value) + 2;
    pprof_labels *s = malloc(bytes);
    if (!s) {
        if (tmp != stack)
            free(tmp);
        return pp_fail(PPROF_ENOMEM);
    }
    atomic_init(&s->refs, 1);
    s->n = (uint32_t)n;
    uint8_t *tail = (uint8_t *)(s->pairs + n);
    memcpy(tail, &nattrs, sizeof nattrs);
    memcpy(tail + sizeof nattrs, attrs, nattrs);
    char *str = (char *)(tail + sizeof nattrs + nattrs);
    for (size_t i = 0; i < n; i++) {
        size_t kl = strlen(tmp[i].key) + 1, vl = strlen(tmp[i].value) + 1;
        s->pairs[i].key = memcpy(str, tmp[i].key, kl);
        s->pairs[i].value = memcpy(str + kl, tmp[i].value, vl);
        str += kl + vl;
    }
    if (tmp != stack)
        free(tmp);
    atomic_fetch_add_explicit(&n_created, 1, memory_order_relaxed);
    *out = s;
    return 0;
}

int pprof_labels_new(const pprof_label *pairs, size_t n, pprof_labels **out)
{
    return build(NULL, 0, pairs, n, out);
}

int pprof_labels_with(const pprof_labels *base, const pprof_label *pairs, size_t n, pprof_labels **out)
{
    return build(base ? base->pairs : NULL, base ? base->n : 0, pairs, n, out);
}

pprof_labels *pprof_labels_ref(pprof_labels *set)
{
    if (set)
        atomic_fetch_add_explicit(&set->refs, 1, memory_order_relaxed);
    return set;
}

void pprof_labels_unref(pprof_labels *set)
{
    if (set && atomic_fetch_sub_explicit(&set->refs, 1, memory_order_acq_rel) == 1) {
        free(set);
        atomic_fetch_add_explicit(&n_freed, 1, memory_order_relaxed);
    }
}

const pprof_label *pprof_labels_pairs(const pprof_labels *set, size_t *n)
{
    if (n)
        *n = set ? set->n : 0;
    return set ? set->pairs : NULL;
}

/* Replaces the thread's set; the TLS slot takes over `set`'s reference and
 * the previous set's reference goes to the caller. The thread's
 * OpenTelemetry record gets the set's attributes. */
static pprof_labels *swap_current(pprof_labels *set)
{
    pprof_labels *prev = current;
    atomic_signal_fence(memory_order_seq_cst);
    current = set;
    atomic_signal_fence(memory_order_seq_cst);
    if (pp_otel_on()) {
        uint16_t n = 0;
        const uint8_t *tail = set ? (const uint8_t *)(set->pairs + set->n) : NULL;
        if (tail)
            memcpy(&n, tail, sizeof n);
        pp_otel_thread_attrs(tail ? tail + sizeof n : NULL, n);
    }
    return prev;
}

int pprof_do(const pprof_labels *add, void (*fn)(void *), void *arg)
{
    if (!fn)
        return pp_fail(PPROF_EINVAL);
    pprof_labels *cur = current, *set;
    if (!cur || !add) {
        set = pprof_labels_ref((pprof_labels *)(cur ? cur : add));
    } else {
        int rc = build(cur->pairs, cur->n, add->pairs, add->n, &set);
        if (rc)
            return rc;
    }
    pprof_labels *prev = swap_current(set);
    int64_t t0 = 0;
    uint64_t unit = pp_unit_begin(&t0); /* timed for the history's min_span (span_times.c) */
    fn(arg);
    pp_unit_end(unit, t0);
    pprof_labels_unref(swap_current(prev));
    return 0;
}

pprof_labels *pprof_labels_current(void)
{
    return pprof_labels_ref(current);
}

pprof_labels *pprof_labels_enter(pprof_labels *set)
{
    return swap_current(pprof_labels_ref(set));
}

void pprof_labels_leave(pprof_labels *previous)
{
    pprof_labels_unref(swap_current(previous));
}

void pprof_labels_stats_get(pprof_labels_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out); /* reserved included */
    out->created = atomic_load(&n_created);
    out->freed = atomic_load(&n_freed);
    out->live = out->created - out->freed;
    pp_labels_cap_stats(&out->kept, &out->dropped);
}

/* async-signal-safe */
const void *pp_labels_current_ref(void)
{
    pprof_labels *c = current;
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void *const *pp_labels_slot(void)
{
    return (void *const *)&current;
}

/* async-signal-safe */
const pprof_labels *pp_labels_current_peek(void)
{
    return current;
}

void pp_labels_unref(const void *set)
{
    pprof_labels_unref((pprof_labels *)set);
}

size_t pp_labels_pairs(const void *set, const pprof_label **out)
{
    size_t n;
    *out = pprof_labels_pairs(set, &n);
    return n;
}

void pp_labels_adopt(pprof_labels *set)
{
    pprof_labels_unref(swap_current(set));
}

static pprof_labels *own_set;

pprof_labels *pp_own_begin(void)
{
    pprof_labels *set = __atomic_load_n(&own_set, __ATOMIC_ACQUIRE);
    if (!set) {
        pprof_label own = {PP_OWN_KEY, PP_OWN_VALUE};
        pp_own_heap_enter(); /* the profiler's, whichever thread makes it */
        int rc = pprof_labels_new(&own, 1, &set);
        pp_own_heap_leave();
        if (rc == 0) {
            pprof_labels *none = NULL;
            if (!__atomic_compare_exchange_n(&own_set, &none, set, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                pprof_labels_unref(set);
                set = none;
            }
        }
    }
    return pprof_labels_enter(set);
}

void pp_own_end(pprof_labels *prev)
{
    pprof_labels_leave(prev);
}

/* The server may not include labels.h: it reaches the same set through
 * base/ (own_labels.h), registered before any other constructor can
 * start it. */
__attribute__((constructor(101))) static void own_labels_register(void)
{
    static const pp_own_labels_ops ops = {pp_own_begin, pp_own_end};
    pp_own_labels_register(&ops);
}

int pp_labels_is_own(const void *set)
{
    const pprof_labels *s = set;
    return s && s->n == 1 && !strcmp(s->pairs[0].key, PP_OWN_KEY) && !strcmp(s->pairs[0].value, PP_OWN_VALUE);
}

void pp_labels_thread_exit(void)
{
    pprof_labels_unref(swap_current(NULL));
}
