/* labels_cap.c: the bounded set of label sets that cumulative profiles keep.
 *
 * Heap, allocation, mutex and block records live as long as the process,
 * so per-request labels would grow them without end. Their collectors map
 * each sample's set to a kept set equal to it (sets are compared by
 * content, hashed into an open-addressing table); once `cap` distinct sets
 * are kept, a new one maps to the shared {"pprof.labels": "dropped"} set
 * and the sample keeps its stack and counts (so does a sample taken while
 * a fork holds the table: hooks never wait for a fork, see lock.h). Kept sets are never freed, so
 * a record can point at one without holding a reference.
 *
 * The heap profiler maps sets from inside malloc, so nothing here calls
 * malloc: the table grows with mmap, the dropped set is built at start-up
 * (pp_labels_cap_init), and the lock is a futex lock held for a lookup.
 */
#include "labels.h"
#include "base/base.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h> /* kept sets are referenced from mmap'd memory */
#define ROOT_ADD(p, n) __lsan_register_root_region(p, n)
#define ROOT_DEL(p, n) __lsan_unregister_root_region(p, n)
#else
#define ROOT_ADD(p, n) ((void)0)
#define ROOT_DEL(p, n) ((void)0)
#endif

static pp_mutex cap_lock = PP_MUTEX_INIT;
static _Atomic size_t cap = PPROF_LABELS_DEFAULT_CAP;
static pprof_labels **table;        /* open addressing by content hash */
static size_t table_size, kept;
static pprof_labels *dropped_set;
static _Atomic uint64_t n_dropped;

int pprof_labels_set_cap(size_t n)
{
    atomic_store(&cap, n ? n : PPROF_LABELS_DEFAULT_CAP);
    return 0;
}

/* malloc-safe */
static uint64_t hash_set(const pprof_labels *s)
{
    size_t n;
    const pprof_label *p = pprof_labels_pairs(s, &n);
    uint64_t h = 1469598103934665603ull ^ n;
    for (size_t i = 0; i < n; i++) {
        for (const char *c = p[i].key; *c; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
        for (const char *c = p[i].value; *c; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
        h = (h ^ 0xfe) * 1099511628211ull;
    }
    return h;
}

/* malloc-safe */
static int same(const pprof_labels *a, const pprof_labels *b)
{
    size_t na, nb;
    const pprof_label *pa = pprof_labels_pairs(a, &na), *pb = pprof_labels_pairs(b, &nb);
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(pa[i].key, pb[i].key) || strcmp(pa[i].value, pb[i].value))
            return 0;
    return 1;
}

/* malloc-safe */
static int grow(void)
{
    size_t size = table_size ? table_size * 2 : 256;
    pprof_labels **t = pp_map(size * sizeof *t, PROT_READ | PROT_WRITE, 0, "table of label sets");
    if (!t)
        return -1;
    for (size_t i = 0; i < table_size; i++) {
        if (!table[i])
            continue;
        size_t j = hash_set(table[i]) & (size - 1);
        while (t[j])
            j = (j + 1) & (size - 1);
        t[j] = table[i];
    }
    if (table) {
        ROOT_DEL(table, table_size * sizeof *table);
        pp_unmap(table, table_size * sizeof *table);
    }
    ROOT_ADD(t, size * sizeof *t);
    table = t;
    table_size = size;
    return 0;
}

void pp_labels_cap_init(void)
{
    pprof_label d[] = {{"pprof.labels", "dropped"}};
    if (!dropped_set)
        pprof_labels_new(d, 1, &dropped_set);
}

/* malloc-safe */
static const pprof_labels *drop(void)
{
    atomic_fetch_add(&n_dropped, 1);
    return dropped_set;
}

/* malloc-safe */
const pprof_labels *pp_labels_cumulative(const pprof_labels *set)
{
    if (!set)
        return NULL;
    if (!pp_mutex_lock_hook(&cap_lock))
        return drop(); /* a fork holds the table: never wait for it here */
    const pprof_labels *out = NULL;
    if ((kept + 1) * 2 > table_size && grow()) {
        out = drop();
        goto done;
    }
    size_t j = hash_set(set) & (table_size - 1);
    for (; table[j]; j = (j + 1) & (table_size - 1))
        if (same(table[j], set)) {
            out = table[j];
            goto done;
        }
    if (kept >= atomic_load(&cap)) {
        out = drop();
        goto done;
    }
    table[j] = pprof_labels_ref((pprof_labels *)set);
    kept++;
    out = set;
done:
    pp_mutex_unlock(&cap_lock);
    return out;
}

void pp_labels_cap_fork_prepare(void)
{
    pp_mutex_lock(&cap_lock);
}

void pp_labels_cap_fork_parent(void)
{
    pp_mutex_unlock(&cap_lock);
}

void pp_labels_cap_fork_child(void)
{
    cap_lock = (pp_mutex)PP_MUTEX_INIT;
}

void pp_labels_cap_stats(uint64_t *kept_out, uint64_t *dropped_out)
{
    pp_mutex_lock(&cap_lock);
    *kept_out = kept;
    pp_mutex_unlock(&cap_lock);
    *dropped_out = atomic_load(&n_dropped);
}
