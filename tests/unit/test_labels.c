/* test_labels.c: label sets, pprof_do, enter/leave, capture, inheritance.
 * test-labels: concurrency quick
 *
 * Building sorts pairs by key and lets a later value for a key override an
 * earlier one; bad arguments give PPROF_EINVAL; pprof_do merges with the
 * current set, nests and restores; enter replaces instead of merging; a
 * set captured on one thread runs work on another; a new thread starts
 * with its creator's set; every set is freed when its last user is done;
 * cumulative profiles keep at most `cap` distinct sets, then "dropped".
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "labels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *value_of(const pprof_labels *s, const char *key)
{
    size_t n;
    const pprof_label *p = pprof_labels_pairs(s, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].key, key))
            return p[i].value;
    return NULL;
}

/* The current set's value for key, copied into one of a few rotating
 * buffers so that several results can be compared at once. */
static const char *current_value(const char *key)
{
    static __thread char bufs[4][64];
    static __thread int next;
    pprof_labels *c = pprof_labels_current();
    const char *v = c ? value_of(c, key) : NULL;
    if (v) {
        char *b = bufs[next++ % 4];
        snprintf(b, 64, "%s", v);
        v = b;
    }
    pprof_labels_unref(c);
    return v;
}

static void building(void)
{
    pprof_labels *s, *t;
    pprof_label pairs[] = {{"tenant", "a"}, {"endpoint", "/x"}, {"tenant", "b"}};
    CHECK(pprof_labels_new(pairs, 3, &s) == 0);
    size_t n;
    const pprof_label *p = pprof_labels_pairs(s, &n);
    CHECK(n == 2 && !strcmp(p[0].key, "endpoint") && !strcmp(p[1].key, "tenant"));
    CHECK(!strcmp(value_of(s, "tenant"), "b")); /* later overrides */
    pprof_label more[] = {{"tenant", "c"}, {"zone", "eu"}};
    CHECK(pprof_labels_with(s, more, 2, &t) == 0);
    CHECK(!strcmp(value_of(t, "tenant"), "c") && !strcmp(value_of(t, "zone"), "eu") &&
          !strcmp(value_of(t, "endpoint"), "/x"));
    CHECK(!strcmp(value_of(s, "tenant"), "b")); /* base unchanged */
    pprof_labels_unref(t);
    pprof_labels_unref(s);

    pprof_label empty_key[] = {{"", "v"}}, null_key[] = {{NULL, "v"}}, null_value[] = {{"k", NULL}};
    CHECK(pprof_labels_new(empty_key, 1, &s) == PPROF_EINVAL && s == NULL);
    CHECK(pprof_labels_new(null_key, 1, &s) == PPROF_EINVAL);
    CHECK(pprof_labels_new(null_value, 1, &s) == PPROF_EINVAL);
    CHECK(pprof_labels_new(NULL, 2, &s) == PPROF_EINVAL);
    CHECK(pprof_labels_new(pairs, 1, NULL) == PPROF_EINVAL);
    CHECK(pprof_do(NULL, NULL, NULL) == PPROF_EINVAL);
    CHECK(pprof_labels_new(NULL, 0, &s) == 0); /* the empty set is fine */
    pprof_labels_unref(s);
    pprof_labels_unref(NULL);
}

struct nest { int depth; int ok; };

static void inner(void *arg)
{
    struct nest *n = arg;
    const char *t = current_value("tenant"), *e = current_value("endpoint");
    n->ok &= t && !strcmp(t, n->depth == 1 ? "a" : "b");
    n->ok &= e && !strcmp(e, "/checkout"); /* inherited from the outer call */
    if (n->depth == 1) {
        pprof_label b[] = {{"tenant", "b"}};
        pprof_labels *sb;
        pprof_labels_new(b, 1, &sb);
        n->depth = 2;
        CHECK(pprof_do(sb, inner, n) == 0);
        n->depth = 1;
        pprof_labels_unref(sb);
        t = current_value("tenant");
        n->ok &= t && !strcmp(t, "a"); /* restored */
    }
}

static void nesting(void)
{
    pprof_label a[] = {{"tenant", "a"}, {"endpoint", "/checkout"}};
    pprof_labels *sa;
    CHECK(pprof_labels_new(a, 2, &sa) == 0);
    struct nest n = {1, 1};
    CHECK(current_value("tenant") == NULL);
    CHECK(pprof_do(sa, inner, &n) == 0);
    CHECK(n.ok);
    CHECK(current_value("tenant") == NULL); /* restored to none */

    /* enter replaces rather than merges; leave restores */
    pprof_label x[] = {{"job", "nightly"}};
    pprof_labels *sx;
    pprof_labels_new(x, 1, &sx);
    pprof_labels *prev = pprof_labels_enter(sa);
    pprof_labels *prev2 = pprof_labels_enter(sx);
    CHECK(current_value("job") && current_value("tenant") == NULL);
    pprof_labels_leave(prev2);
    CHECK(current_value("tenant") && !strcmp(current_value("tenant"), "a"));
    pprof_labels_leave(prev);
    CHECK(current_value("tenant") == NULL);
    pprof_labels_unref(sx);
    pprof_labels_unref(sa);
}

struct task { pprof_labels *captured; char seen[32]; char inherited[32]; };

static void *worker(void *arg)
{
    struct task *t = arg;
    const char *v = current_value("tenant");
    snprintf(t->inherited, sizeof t->inherited, "%s", v ? v : "(none)");
    pprof_labels *prev = pprof_labels_enter(t->captured);
    v = current_value("tenant");
    snprintf(t->seen, sizeof t->seen, "%s", v ? v : "(none)");
    pprof_labels_leave(prev);
    return NULL;
}

static void spawn_under(void *arg)
{
    struct task *t = arg;
    pthread_t th;
    pthread_create(&th, NULL, worker, t);
    pthread_join(th, NULL);
}

static void threads(void)
{
    pprof_label a[] = {{"tenant", "submitter"}}, b[] = {{"tenant", "creator"}};
    pprof_labels *sa, *sb;
    pprof_labels_new(a, 1, &sa);
    pprof_labels_new(b, 1, &sb);
    struct task t = {0};
    pprof_labels *prev = pprof_labels_enter(sa);
    t.captured = pprof_labels_current(); /* captured where work is submitted */
    pprof_labels_leave(prev);
    CHECK(pprof_do(sb, spawn_under, &t) == 0);
    CHECK(!strcmp(t.inherited, "creator"));
    CHECK(!strcmp(t.seen, "submitter"));
    pprof_labels_unref(t.captured);
    pprof_labels_unref(sa);
    pprof_labels_unref(sb);
}

static void *hammer(void *arg)
{
    pprof_labels *shared = arg;
    for (int i = 0; i < 20000; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        pprof_label p[] = {{"req", v}};
        pprof_labels *s;
        if (pprof_labels_with(shared, p, 1, &s) == 0) {
            pprof_labels *prev = pprof_labels_enter(s);
            pprof_labels_leave(prev);
            pprof_labels_unref(s);
        }
        pprof_labels_unref(pprof_labels_ref(shared));
    }
    return NULL;
}

static void cap(void)
{
    CHECK(pprof_labels_set_cap(3) == 0);
    pprof_labels *s[5], *again;
    const pprof_labels *kept[5];
    for (int i = 0; i < 5; i++) {
        char v[8];
        snprintf(v, sizeof v, "t%d", i);
        pprof_label p[] = {{"tenant", v}};
        pprof_labels_new(p, 1, &s[i]);
        kept[i] = pp_labels_cumulative(s[i]);
    }
    pprof_label p1[] = {{"tenant", "t1"}};
    pprof_labels_new(p1, 1, &again);
    CHECK(kept[0] == s[0] && kept[1] == s[1] && kept[2] == s[2]);
    CHECK(pp_labels_cumulative(again) == s[1]); /* equal content, same kept set */
    CHECK(kept[3] == kept[4] && !strcmp(value_of(kept[3], "pprof.labels"), "dropped"));
    CHECK(pp_labels_cumulative(NULL) == NULL);
    pprof_labels_stats st;
    pprof_labels_stats_get(&st);
    CHECK(st.kept == 3 && st.dropped == 2);
    for (int i = 0; i < 5; i++)
        pprof_labels_unref(s[i]);
    pprof_labels_unref(again);
    CHECK(!strcmp(value_of(kept[1], "tenant"), "t1")); /* kept sets outlive their creators */
}

int main(void)
{
    pprof_labels_stats st0, st1;
    pprof_labels_stats_get(&st0);
    building();
    nesting();
    threads();
    pprof_label s[] = {{"service", "x"}};
    pprof_labels *shared;
    pprof_labels_new(s, 1, &shared);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hammer, shared);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    pprof_labels_unref(shared);
    pprof_labels_stats_get(&st1);
    cap(); /* after the live count: kept sets live on by design */
    CHECKF(st1.live == st0.live, "live sets: %llu before, %llu after", (unsigned long long)st0.live,
           (unsigned long long)st1.live);
    CHECK(st1.created - st0.created >= 80000);
    return check_summary("test_labels");
}
