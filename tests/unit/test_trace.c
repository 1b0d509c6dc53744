/* test_trace.c: trace contexts (spans) and the labels CPU samples get.
 * test-labels: plain-only timing
 *
 * enter/leave nest and return the previous context; CPU samples taken
 * under a span carry span_id (16 hex digits) and span_name, and trace_id
 * only in a recorder that asks for it; a span overrides a label set's pair
 * of the same key and keeps its other pairs; two threads in two spans at
 * once keep their samples apart; a thread created inside a span keeps a
 * copy of it after its creator left the span and reused the struct; a
 * context whose trace ID is all zero gives no labels. Every sample is
 * checked, not a share: the labels are taken on the sampled thread, so one
 * wrong sample is a bug. Plain build only: it needs real signals.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "../burn.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *label(const pprof_sample *s, const char *key)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].key, key))
            return s->labels[i].value;
    return NULL;
}

static pprof_trace_context span_a = {
    .trace_id = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
    .span_id = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
    .trace_flags = 1,
    .span_name = "alpha"};
static pprof_trace_context span_b = {
    .trace_id = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
    .span_id = {0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1}};
static pprof_trace_context span_c = {
    .trace_id = {0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00},
    .span_id = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88},
    .span_name = "gamma"};

__attribute__((noinline)) static void work_alpha(void) { burn_cpu(0.3, 1.0000001); }
__attribute__((noinline)) static void work_beta(void) { burn_cpu(0.3, 1.0000002); }
__attribute__((noinline)) static void work_gamma(void) { burn_cpu(0.3, 1.0000003); }
__attribute__((noinline)) static void work_none(void) { burn_cpu(0.2, 1.0000004); }

static void *run_alpha(void *arg)
{
    (void)arg;
    const pprof_trace_context *prev = pprof_trace_enter(&span_a);
    work_alpha();
    pprof_trace_leave(prev);
    return NULL;
}

static void beta_labeled(void *arg)
{
    (void)arg;
    work_beta();
}

static void *run_beta(void *arg)
{
    (void)arg;
    pprof_label pairs[] = {{"endpoint", "/b"}, {"span_id", "bogus"}};
    pprof_labels *set;
    if (pprof_labels_new(pairs, 2, &set) != 0)
        return NULL;
    const pprof_trace_context *prev = pprof_trace_enter(&span_b);
    pprof_do(set, beta_labeled, NULL);
    pprof_trace_leave(prev);
    pprof_labels_unref(set);
    return NULL;
}

static pthread_barrier_t go; /* gamma works once its creator overwrote span_c */

static void *run_gamma(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go);
    work_gamma(); /* under the copy of span_c taken at pthread_create */
    return NULL;
}

static void api(void)
{
    CHECK(pprof_trace_current() == NULL);
    CHECK(pprof_trace_enter(&span_a) == NULL);
    CHECK(pprof_trace_current() == &span_a);
    const pprof_trace_context *prev = pprof_trace_enter(&span_b);
    CHECK(prev == &span_a && pprof_trace_current() == &span_b);
    pprof_trace_leave(prev);
    CHECK(pprof_trace_current() == &span_a);
    pprof_trace_leave(NULL);
    CHECK(pprof_trace_current() == NULL);

    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.trace_id_label = 2}, &r) == PPROF_EINVAL);
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.trace_id_label = -2}, &r) == PPROF_EINVAL);
}

/* Checks every sample of `fn` in p: span_id, span_name and trace_id are
 * want_* (NULL: absent), endpoint too; returns how many samples. */
static int64_t check_fn(const pprof_profile *p, const char *fn, const char *want_span, const char *want_name,
                        const char *want_trace, const char *want_endpoint)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    int64_t count = 0, bad = 0;
    const char *why = "";
    for (size_t i = 0; i < n; i++) {
        if (!sample_has(&s[i], fn))
            continue;
        count += s[i].values[0];
        const char *got[4] = {label(&s[i], "span_id"), label(&s[i], "span_name"), label(&s[i], "trace_id"),
                              label(&s[i], "endpoint")};
        const char *want[4] = {want_span, want_name, want_trace, want_endpoint};
        for (int k = 0; k < 4; k++)
            if (!got[k] != !want[k] || (got[k] && strcmp(got[k], want[k]))) {
                bad += s[i].values[0];
                why = got[k] ? got[k] : "(none)";
                break;
            }
    }
    CHECKF(bad == 0, "%s: %lld of %lld samples with wrong span labels (one: %s)", fn, (long long)bad,
           (long long)count, why);
    /* 0.2-0.3 s of CPU at 1000 Hz: 200-300 samples; 60 leaves room for a loaded machine */
    CHECKF(count >= 60, "%s: only %lld samples", fn, (long long)count);
    return count;
}

static void samples(void)
{
    pprof_recorder *plain, *with_trace;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000}, &plain) == 0);
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 1000, .trace_id_label = 1}, &with_trace) == 0);
    CHECK(pprof_recorder_start(plain) == 0);
    CHECK(pprof_recorder_start(with_trace) == 0);

    /* gamma's thread is created inside span_c; then its creator leaves the
     * span and overwrites the struct before the thread does its work. */
    pthread_t ta, tb, tc;
    pthread_barrier_init(&go, NULL, 2);
    const pprof_trace_context *prev = pprof_trace_enter(&span_c);
    CHECK(pthread_create(&tc, NULL, run_gamma, NULL) == 0);
    pprof_trace_leave(prev);
    pprof_trace_context saved_c = span_c;
    memset(span_c.span_id, 0x99, sizeof span_c.span_id);
    span_c.span_name = "overwritten";
    pthread_barrier_wait(&go);

    CHECK(pthread_create(&ta, NULL, run_alpha, NULL) == 0);
    CHECK(pthread_create(&tb, NULL, run_beta, NULL) == 0);
    /* an all-zero trace ID: no context */
    pprof_trace_context zero = {.span_id = {1, 2, 3, 4, 5, 6, 7, 8}, .span_name = "zero"};
    prev = pprof_trace_enter(&zero);
    work_none();
    pprof_trace_leave(prev);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_join(tc, NULL);
    pthread_barrier_destroy(&go);
    span_c = saved_c;

    pprof_profile *p, *q;
    CHECK(pprof_recorder_stop(plain, &p) == 0);
    CHECK(pprof_recorder_stop(with_trace, &q) == 0);
    if (!p || !q)
        return;
    int64_t a = check_fn(p, "work_alpha", "00f067aa0ba902b7", "alpha", NULL, NULL);
    int64_t b = check_fn(p, "work_beta", "deadbeef00000001", NULL, NULL, "/b");
    int64_t c = check_fn(p, "work_gamma", "1122334455667788", "gamma", NULL, NULL);
    int64_t z = check_fn(p, "work_none", NULL, NULL, NULL, NULL);
    check_fn(q, "work_alpha", "00f067aa0ba902b7", "alpha", "4bf92f3577b34da6a3ce929d0e0e4736", NULL);
    check_fn(q, "work_beta", "deadbeef00000001", NULL, "0102030405060708090a0b0c0d0e0f10", "/b");
    check_fn(q, "work_gamma", "1122334455667788", "gamma", "ffeeddccbbaa99887766554433221100", NULL);
    check_fn(q, "work_none", NULL, NULL, NULL, NULL);
    printf("samples: alpha %lld, beta %lld, gamma %lld, none %lld\n", (long long)a, (long long)b, (long long)c,
           (long long)z);
    pprof_profile_free(p);
    pprof_profile_free(q);
    pprof_recorder_free(plain);
    pprof_recorder_free(with_trace);
}

int main(void)
{
    api();
    samples();
    return check_summary("test_trace");
}
