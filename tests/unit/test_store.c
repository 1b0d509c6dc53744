/* test_store.c: the record store (profiler/store/).
 * test-labels: quick
 *
 * Records are found again by (stack, labels, key) and by nothing less:
 * another frame, another label set, another key or another depth is
 * another record. Counters add up; snapshots list every record in record
 * order; pp_store_base joins a later snapshot with an earlier one, giving
 * each record's base counts or none for records made since. A store that
 * is full gives up additions and counts them in `lost`, as it does while
 * a fork holds it (pp_fork_pending up and the lock taken): adds then never
 * wait. Four threads adding to shared and private records at once leave
 * exact totals.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "store/store.h"

#include <pthread.h>

static pp_store store = PP_STORE_INIT(1u << 20, 1u << 6);

static const pp_store_count *find(const pp_store_snap *s, uint32_t rec)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->c[i].rec == rec)
            return &s->c[i];
    return NULL;
}

static uint32_t id_of(pp_store *st, const uint64_t *pcs, size_t n, const pprof_labels *l, uint64_t key)
{
    pp_mutex_lock(&st->lock);
    uint32_t id = pp_store_find_locked(st, pcs, n, l, key);
    pp_mutex_unlock(&st->lock);
    return id;
}

#define THREADS 4
#define ADDS 100000

static void *adder(void *arg)
{
    uint64_t shared[2] = {0x1000, 0x2000}, own[2] = {0x3000, (uint64_t)(uintptr_t)arg};
    for (int i = 0; i < ADDS; i++) {
        pp_store_add(&store, shared, 2, NULL, 7, 1, 10);
        pp_store_add(&store, own, 2, NULL, 7, 2, 20);
    }
    return NULL;
}

int main(void)
{
    pprof_labels *a, *b;
    pprof_label pa = {"k", "a"}, pb = {"k", "b"};
    CHECK(pprof_labels_new(&pa, 1, &a) == 0 && pprof_labels_new(&pb, 1, &b) == 0);

    uint64_t s1[3] = {0x10, 0x20, 0x30}, s2[3] = {0x10, 0x21, 0x30};
    pp_store_snap empty;
    CHECK(pp_store_snap_take(&store, &empty) == 0 && empty.n == 0);

    pp_store_add(&store, s1, 3, a, 64, 1, 100);
    pp_store_add(&store, s1, 3, a, 64, 2, 200);
    pp_store_add(&store, s2, 3, a, 64, 1, 1);  /* another frame */
    pp_store_add(&store, s1, 3, b, 64, 1, 1);  /* another label set */
    pp_store_add(&store, s1, 3, a, 128, 1, 1); /* another key */
    pp_store_add(&store, s1, 2, a, 64, 1, 1);  /* another depth */
    uint32_t r1 = id_of(&store, s1, 3, a, 64);
    CHECK(r1 != 0 && atomic_load(&store.nrecords) == 5);
    const pp_rec *r = pp_store_rec(&store, r1);
    CHECK(r->key == 64 && r->labels == a && r->nframes == 3 && r->pcs[1] == 0x20);

    pp_store_snap before;
    CHECK(pp_store_snap_take(&store, &before) == 0 && before.n == 5);
    for (size_t i = 1; i < before.n; i++)
        CHECK(before.c[i - 1].rec < before.c[i].rec);
    const pp_store_count *c1 = find(&before, r1);
    CHECK(c1 && c1->c[0] == 3 && c1->c[1] == 300);

    /* a window: one old record grows, one new record appears */
    uint64_t s3[1] = {0x99};
    pp_store_add(&store, s1, 3, a, 64, 4, 400);
    pp_store_add(&store, s3, 1, NULL, 0, 5, 500);
    pp_store_snap after;
    CHECK(pp_store_snap_take(&store, &after) == 0 && after.n == 6);
    size_t cursor = 0, joined = 0, fresh = 0;
    for (size_t i = 0; i < after.n; i++) {
        const pp_store_count *base = pp_store_base(&before, &cursor, after.c[i].rec);
        if (!base) {
            fresh++;
            CHECK(after.c[i].c[0] == 5 && after.c[i].c[1] == 500);
            continue;
        }
        joined++;
        int64_t d0 = after.c[i].c[0] - base->c[0], d1 = after.c[i].c[1] - base->c[1];
        CHECK(after.c[i].rec == r1 ? d0 == 4 && d1 == 400 : d0 == 0 && d1 == 0);
    }
    CHECK(joined == 5 && fresh == 1);
    cursor = 0;
    CHECK(pp_store_base(NULL, &cursor, r1) == NULL);

    /* while a fork holds the store, adds give up at once */
    uint64_t lost = atomic_load(&store.lost);
    atomic_fetch_add(&pp_fork_pending, 1);
    pp_mutex_lock(&store.lock);
    pp_store_add(&store, s1, 3, a, 64, 1, 1);
    pp_mutex_unlock(&store.lock);
    atomic_fetch_sub(&pp_fork_pending, 1);
    CHECK(atomic_load(&store.lost) == lost + 1);
    pp_store_add(&store, s1, 3, a, 64, 1, 1); /* and work again after */
    CHECK(atomic_load(&store.lost) == lost + 1);

    /* concurrent adds are exact */
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, adder, (void *)(0x4000 + i));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    uint64_t shared[2] = {0x1000, 0x2000};
    pp_store_snap end;
    CHECK(pp_store_snap_take(&store, &end) == 0);
    const pp_store_count *sc = find(&end, id_of(&store, shared, 2, NULL, 7));
    CHECK(sc && sc->c[0] == THREADS * ADDS && sc->c[1] == THREADS * ADDS * 10ll);
    for (long i = 0; i < THREADS; i++) {
        uint64_t own[2] = {0x3000, (uint64_t)(0x4000 + i)};
        const pp_store_count *oc = find(&end, id_of(&store, own, 2, NULL, 7));
        CHECK(oc && oc->c[0] == 2ll * ADDS && oc->c[1] == 20ll * ADDS);
    }

    /* a full store gives up and counts it */
    static pp_store tiny = PP_STORE_INIT(256, 1u << 2);
    uint64_t pcs[8] = {0};
    size_t made = 0;
    for (uint64_t i = 1; i <= 20; i++) {
        pcs[0] = i;
        pp_store_add(&tiny, pcs, 8, NULL, 0, 1, 1);
        made = (size_t)atomic_load(&tiny.nrecords);
    }
    CHECK(made > 0 && made < 20 && atomic_load(&tiny.lost) == 20 - made);

    pp_store_snap_free(&empty);
    pp_store_snap_free(&before);
    pp_store_snap_free(&after);
    pp_store_snap_free(&end);
    pprof_labels_unref(a);
    pprof_labels_unref(b);
    return check_summary("test_store");
}
