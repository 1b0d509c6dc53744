/* contention.c: what a contended lock or a wait records, as Go records it.
 *
 * Mutex profile (LIBPPROF_MUTEX_FRACTION, pprof_mutex_set_fraction): one
 * contended acquisition of a pthread mutex or rwlock in F is kept, counting
 * F events and F x its delay. Block profile (LIBPPROF_BLOCK_RATE,
 * pprof_block_set_rate, in ns): a wait of d ns (contended locks, condition
 * variables, semaphores, joins) is kept when d >= rate, and with
 * probability d/rate otherwise, then counting rate/d events and rate ns.
 * Both attribute the delay to the waiter's stack (Go charges mutex delay to
 * the holder's unlock; that needs every unlock to be timed, which the
 * 2 ns budget of an uncontended lock does not allow). Records carry the
 * waiter's labels. Nothing here calls malloc.
 */
#define _GNU_SOURCE
#include "contention.h"
#include "base/base.h"
#include "labels/labels.h"
#include "model/model.h"
#include "unwind/unwind.h"

#include <limits.h>
#include <string.h>
#include <time.h>

pp_store pp_mutex_tab = PP_STORE_INIT(256ull << 20, 1u << 14);
pp_store pp_block_tab = PP_STORE_INIT(256ull << 20, 1u << 14);
_Atomic int pp_contention_on;
static _Atomic int fraction;
static _Atomic int64_t block_rate;
static int env_fraction;
static int64_t env_block_rate;
static pp_mutex conf_lock = PP_MUTEX_INIT;
static int users[2]; /* recorders that turned a profile on */
static __thread uint64_t rng;

static void update_on(void)
{
    atomic_store(&pp_contention_on, atomic_load(&fraction) || atomic_load(&block_rate));
}

/* malloc-safe */
int64_t pp_contention_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* malloc-safe */
static uint64_t random64(void)
{
    if (!rng)
        rng = (uint64_t)pp_contention_now() * 0x9e3779b97f4a7c15ull | 1;
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

/* malloc-safe */
static void record(pp_store *t, uint64_t caller, int64_t count, int64_t delay)
{
    uint64_t pcs[PPROF_DEFAULT_MAX_FRAMES + 1];
    int end;
    int n = pp_unwind_here(caller, pcs, PPROF_DEFAULT_MAX_FRAMES, &end);
    if (end)
        pcs[n++] = pp_pc_stack_end(end);
    pp_store_add(t, pcs, (size_t)n, pp_labels_cumulative(pp_labels_current_peek()), 0, count, delay);
}

/* malloc-safe */
void pp_contention_event(int64_t ns, int kind, uint64_t caller)
{
    if (ns < 0)
        ns = 0;
    int f = atomic_load_explicit(&fraction, memory_order_relaxed);
    if (kind == PP_WAIT_LOCK && f > 0 && random64() % (uint64_t)f == 0)
        record(&pp_mutex_tab, caller, f, (int64_t)f * ns);
    int64_t rate = atomic_load_explicit(&block_rate, memory_order_relaxed);
    if (rate > 0) {
        if (ns >= rate)
            record(&pp_block_tab, caller, 1, ns);
        else if (ns > 0 && (int64_t)(random64() % (uint64_t)rate) < ns)
            record(&pp_block_tab, caller, rate / ns, rate);
    }
}

int pp_mutex_fraction(void) { return atomic_load(&fraction); }
int64_t pp_block_rate(void) { return atomic_load(&block_rate); }

void pp_contention_init(void)
{
    env_fraction = pp_env_int("LIBPPROF_MUTEX_FRACTION", 0, 0, INT_MAX);
    env_block_rate = pp_env_int("LIBPPROF_BLOCK_RATE", 0, 0, INT_MAX);
    atomic_store(&fraction, env_fraction);
    atomic_store(&block_rate, env_block_rate);
    update_on();
}

int pprof_mutex_set_fraction(int64_t f64)
{
    if (f64 < 0 || f64 > INT_MAX)
        return pp_error_detail(PPROF_EINVAL, "the mutex fraction must be from 0 (off) to %d, not %lld", INT_MAX,
                               (long long)f64);
    int f = (int)f64;
    pp_mutex_lock(&conf_lock);
    env_fraction = f;
    if (!users[0])
        atomic_store(&fraction, f);
    int rc = users[0] && atomic_load(&fraction) != f
                 ? pp_error_detail(PPROF_ERATE, "mutex recorders sample 1 in %d now", atomic_load(&fraction))
                 : 0;
    update_on();
    pp_mutex_unlock(&conf_lock);
    return rc;
}

int pprof_block_set_rate(int64_t ns)
{
    if (ns < 0)
        return pp_error_detail(PPROF_EINVAL, "the block rate must be >= 0 ns (0: off)");
    pp_mutex_lock(&conf_lock);
    env_block_rate = ns;
    if (!users[1])
        atomic_store(&block_rate, ns);
    int rc = users[1] && atomic_load(&block_rate) != ns
                 ? pp_error_detail(PPROF_ERATE, "block recorders sample at %lld ns now",
                                   (long long)atomic_load(&block_rate))
                 : 0;
    update_on();
    pp_mutex_unlock(&conf_lock);
    return rc;
}

/* The delay recorded for the profiler's own threads (base/names.h). */
static int64_t own_delay(pp_store *t)
{
    pp_store_snap s;
    if (pp_store_snap_take(t, &s) != 0)
        return 0;
    int64_t total = 0;
    for (size_t i = 0; i < s.n; i++)
        if (pp_labels_is_own(pp_store_rec(t, s.c[i].rec)->labels))
            total += s.c[i].c[1];
    pp_store_snap_free(&s);
    return total;
}

void pprof_contention_stats_get(pprof_contention_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out); /* reserved included */
    out->mutex_fraction = atomic_load(&fraction);
    out->block_rate = atomic_load(&block_rate);
    pp_mutex_lock(&pp_mutex_tab.lock);
    out->mutex_records = pp_mutex_tab.nrecords;
    pp_mutex_unlock(&pp_mutex_tab.lock);
    pp_mutex_lock(&pp_block_tab.lock);
    out->block_records = pp_block_tab.nrecords;
    pp_mutex_unlock(&pp_block_tab.lock);
    out->lost = atomic_load(&pp_mutex_tab.lost) + atomic_load(&pp_block_tab.lost);
    out->own_mutex_delay_ns = own_delay(&pp_mutex_tab);
    out->own_block_delay_ns = own_delay(&pp_block_tab);
}

pprof_profile *pp_contention_build(const pp_store *t, const pp_store_snap *base, const pp_store_snap *now)
{
    static const pprof_value_type types[] = {{"contentions", "count"}, {"delay", "nanoseconds"}};
    pprof_profile *p = pp_profile_new(types, 2, types[0], 1);
    if (!p)
        return NULL;
    size_t cursor = 0;
    for (size_t i = 0; i < now->n; i++) {
        const pp_store_count *c = &now->c[i], *b = pp_store_base(base, &cursor, c->rec);
        int64_t v[2] = {c->c[0] - (b ? b->c[0] : 0), c->c[1] - (b ? b->c[1] : 0)};
        if (!v[0] && !v[1])
            continue;
        const pp_rec *r = pp_store_rec(t, c->rec);
        if (pp_labels_is_own(r->labels))
            continue; /* the profiler's own waits: pprof_contention_stats */
        const pprof_label *pairs = NULL;
        size_t np = r->labels ? pp_labels_pairs(r->labels, &pairs) : 0;
        if (pp_profile_append(p, r->pcs, r->nframes, v, pairs, np, NULL, 0)) {
            pprof_profile_free(p);
            return NULL;
        }
    }
    return p;
}

int64_t pprof_mutex_fraction(void) { return atomic_load(&fraction); }
int64_t pprof_block_rate(void) { return atomic_load(&block_rate); }

int pp_contention_join(int kind, int64_t rate, int *turned_on)
{
    *turned_on = 0;
    pp_mutex_lock(&conf_lock);
    int64_t cur = kind ? atomic_load(&block_rate) : atomic_load(&fraction);
    int rc = 0;
    if (rate && cur && rate != cur) {
        rc = kind ? pp_error_detail(PPROF_ERATE, "block profiling runs at a rate of %lld ns; ask for that or 0",
                                    (long long)cur)
                  : pp_error_detail(PPROF_ERATE, "mutex profiling samples 1 in %lld; ask for that or 0",
                                    (long long)cur);
    } else if (rate && !cur) {
        if (kind)
            atomic_store(&block_rate, rate);
        else
            atomic_store(&fraction, (int)rate);
        users[kind]++;
        *turned_on = 1;
        update_on();
    } else if (rate && users[kind]) {
        users[kind]++;
        *turned_on = 1;
    }
    pp_mutex_unlock(&conf_lock);
    return rc;
}

void pp_contention_leave(int kind, int turned_on)
{
    if (!turned_on)
        return;
    pp_mutex_lock(&conf_lock);
    if (--users[kind] == 0) { /* back to the configured rate */
        if (kind)
            atomic_store(&block_rate, env_block_rate);
        else
            atomic_store(&fraction, env_fraction);
        update_on();
    }
    pp_mutex_unlock(&conf_lock);
}

void pp_contention_fork_prepare(void)
{
    pp_store_fork_prepare(&pp_mutex_tab);
    pp_store_fork_prepare(&pp_block_tab);
}

void pp_contention_fork_parent(void)
{
    pp_store_fork_parent(&pp_block_tab);
    pp_store_fork_parent(&pp_mutex_tab);
}

void pp_contention_fork_child(void)
{
    pp_store_fork_child(&pp_block_tab);
    pp_store_fork_child(&pp_mutex_tab);
    rng = 0; /* the child's choices are not its parent's */
    conf_lock = (pp_mutex)PP_MUTEX_INIT;
}
