/* test_recorder.c: the recorder API's state rules, the same for every kind.
 * test-labels: quick
 *
 * NULL arguments are PPROF_EINVAL; stop or snapshot before start is
 * PPROF_ESTATE, a second start PPROF_EBUSY; write_to on a windowed-only
 * kind (CPU, allocations) and start on an instant-only kind (heap, a
 * per-thread dump) are PPROF_ENOTSUP, each with a detail; a stopped
 * recorder starts again. Rates: a CPU recorder reports its rate only while
 * it runs, the others the rate in force, count kinds 0. Consecutive CPU
 * snapshots leave no gap: each window begins where the previous ended.
 * Freeing a running recorder stops it (a CPU recorder's timers go).
 * Sanitizer builds have no malloc or lock hooks: there the heap and
 * contention kinds answer PPROF_ENOTSUP and their checks are skipped.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static _Atomic int parked_running;

/* Says it runs, then waits until a byte arrives on the pipe *arg. */
static void *wait_on_pipe(void *arg)
{
    char b;
    parked_running = 1;
    while (read(*(int *)arg, &b, 1) < 0)
        ;
    return NULL;
}

/* The state rules of one windowed recorder, started and stopped twice. */
static void windowed_rules(pprof_recorder *r, const char *name)
{
    pprof_profile *p = NULL;
    CHECKF(pprof_recorder_stop(r, &p) == PPROF_ESTATE && p == NULL, "%s: stop before start", name);
    CHECKF(pprof_recorder_snapshot(r, &p) == PPROF_ESTATE, "%s: snapshot before start", name);
    for (int round = 0; round < 2; round++) {
        CHECKF(pprof_recorder_start(r) == 0, "%s: start (round %d): %s", name, round, pprof_last_error());
        CHECKF(pprof_recorder_start(r) == PPROF_EBUSY, "%s: second start", name);
        CHECKF(pprof_recorder_snapshot(r, &p) == 0 && p, "%s: snapshot", name);
        pprof_profile_free(p);
        CHECKF(pprof_recorder_snapshot(r, NULL) == 0, "%s: snapshot discarded", name);
        CHECKF(pprof_recorder_stop(r, &p) == 0 && p, "%s: stop", name);
        pprof_profile_free(p);
    }
}

int main(void)
{
    pprof_profile *p = NULL;
    CHECK(pprof_recorder_start(NULL) == PPROF_EINVAL);
    CHECK(pprof_recorder_stop(NULL, &p) == PPROF_EINVAL && p == NULL);
    CHECK(pprof_recorder_snapshot(NULL, NULL) == PPROF_EINVAL);
    CHECK(pprof_recorder_write_to(NULL, &p) == PPROF_EINVAL);
    CHECK(pprof_recorder_rate(NULL) == 0);
    pprof_recorder_free(NULL);

    /* CPU: windowed only; its rate while it runs */
    pprof_recorder *cpu;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = 200}, &cpu) == 0);
    CHECK(pprof_recorder_write_to(cpu, &p) == PPROF_ENOTSUP && strstr(pprof_last_error(), "windowed"));
    CHECK(pprof_recorder_rate(cpu) == 0);
    windowed_rules(cpu, "cpu");
    CHECK(pprof_recorder_start(cpu) == 0 && pprof_recorder_rate(cpu) == 200);
    pprof_profile *w[3];
    CHECK(pprof_recorder_snapshot(cpu, &w[0]) == 0);
    CHECK(pprof_recorder_snapshot(cpu, &w[1]) == 0);
    CHECK(pprof_recorder_stop(cpu, &w[2]) == 0);
    for (int i = 1; i < 3; i++)
        CHECKF(pprof_profile_time_nanos(w[i]) ==
                   pprof_profile_time_nanos(w[i - 1]) + pprof_profile_duration_nanos(w[i - 1]),
               "window %d begins where %d ended", i, i - 1);
    for (int i = 0; i < 3; i++)
        pprof_profile_free(w[i]);
    /* CPU time no sample saw (a process that started inside the window it
     * answers for): one sample at its frame, in periods and nanoseconds */
    CHECK(pprof_recorder_add_unsampled_cpu(cpu, 1) == PPROF_ESTATE);
    CHECK(pprof_recorder_add_unsampled_cpu(NULL, 1) == PPROF_EINVAL);
    CHECK(pprof_recorder_start(cpu) == 0);
    CHECK(pprof_recorder_add_unsampled_cpu(cpu, 52000000) == 0);
    CHECK(pprof_recorder_stop(cpu, &p) == 0 && p);
    for (int i = 0; i < 2; i++) {
        pprof_buffer folded = {0};
        pprof_folded_config fc = {.sample_type = i ? "cpu" : "samples"};
        CHECK(pprof_profile_write_folded(p, &fc, pprof_writer_buffer(&folded)) == 0);
        const char *want = i ? "[not sampled: the process's CPU time before profiling started] 52000000\n"
                             : "[not sampled: the process's CPU time before profiling started] 10\n";
        CHECKF(folded.data && strstr(folded.data, want), "folded %s: %.*s", fc.sample_type, (int)folded.len,
               folded.data ? folded.data : "");
        pprof_buffer_free(&folded);
    }
    pprof_profile_free(p);
    p = NULL;
    CHECK(pprof_recorder_start(cpu) == 0);
    pprof_recorder_free(cpu); /* running: stopped first */
    pprof_cpu_stats cs;
    pprof_cpu_stats_get(&cs);
    CHECK(cs.hz == 0 && cs.threads_timed == 0);

    size_t n;
    /* allocations: windowed only; heap: instant only */
    pprof_recorder *alloc = NULL, *heap = NULL;
    CHECK(pprof_alloc_recorder_new(NULL, &alloc) == 0 && pprof_heap_recorder_new(NULL, &heap) == 0);
    CHECK(pprof_recorder_start(heap) == PPROF_ENOTSUP && strstr(pprof_last_error(), "instant"));
    CHECK(pprof_recorder_write_to(alloc, &p) == PPROF_ENOTSUP);
    int rc = pprof_recorder_write_to(heap, &p);
    if (rc == PPROF_ENOTSUP) {
        printf("no malloc hooks in this build: heap kinds skipped\n");
    } else {
        CHECK(rc == 0 && p);
        pprof_profile_free(p);
        CHECK(pprof_recorder_rate(heap) == pprof_heap_rate() && pprof_heap_rate() > 0);
        windowed_rules(alloc, "allocs");
        /* the peak and age views: bad configurations, and at most three
         * windows following their peaks at once */
        pprof_recorder *v = NULL, *w[4] = {0};
        CHECK(pprof_heap_recorder_new(&(pprof_heap_config){.min_age = 5, .max_age = 2}, &v) == PPROF_EINVAL);
        CHECK(pprof_heap_recorder_new(&(pprof_heap_config){.window_live = 1}, &v) == PPROF_EINVAL);
        CHECK(pprof_alloc_recorder_new(&(pprof_heap_config){.min_age = 1}, &v) == PPROF_EINVAL);
        CHECK(pprof_heap_recorder_new(&(pprof_heap_config){.peak = 1}, &v) == 0);
        CHECK(pprof_recorder_write_to(v, &p) == 0 && p && pprof_profile_sample_types(p, &n) && n == 2);
        pprof_profile_free(p);
        pprof_recorder_free(v);
        for (int i = 0; i < 4; i++)
            CHECK(pprof_alloc_recorder_new(&(pprof_heap_config){.peak = 1}, &w[i]) == 0);
        CHECK(pprof_recorder_start(w[0]) == 0 && pprof_recorder_start(w[1]) == 0 && pprof_recorder_start(w[2]) == 0);
        CHECK(pprof_recorder_start(w[3]) == PPROF_EBUSY && strstr(pprof_last_error(), "peak slot"));
        CHECK(pprof_recorder_stop(w[0], NULL) == 0 && pprof_recorder_start(w[3]) == 0);
        for (int i = 0; i < 4; i++)
            pprof_recorder_free(w[i]);
    }
    pprof_recorder_free(alloc);
    pprof_recorder_free(heap);

    /* memory: the resident set now, and a window */
    pprof_recorder *mem;
    CHECK(pprof_memory_recorder_new(&mem) == 0);
    CHECK(pprof_recorder_write_to(mem, &p) == 0 && p && pprof_profile_sample_types(p, &n) && n == 1);
    const pprof_sample *ms = p ? pprof_profile_samples(p, &n) : NULL;
    int64_t resident = 0;
    for (size_t i = 0; ms && i < n; i++)
        resident += ms[i].values[0];
    CHECKF(resident > 1000000, "the resident set is %lld bytes", (long long)resident);
    pprof_profile_free(p);
    CHECK(pprof_recorder_start(mem) == 0 && pprof_recorder_stop(mem, &p) == 0 && p);
    CHECK(p && pprof_profile_sample_types(p, &n) && n == 2);
    pprof_profile_free(p);
    pprof_recorder_free(mem);

    /* mutex: windows and totals; the fraction in force */
    pprof_recorder *mutex;
    CHECK(pprof_mutex_recorder_new(&(pprof_contention_config){.rate = 3}, &mutex) == 0);
    rc = pprof_recorder_write_to(mutex, &p);
    if (rc == PPROF_ENOTSUP) {
        printf("no lock hooks in this build: contention kinds skipped\n");
    } else {
        CHECK(rc == 0 && p);
        pprof_profile_free(p);
        windowed_rules(mutex, "mutex");
        CHECK(pprof_recorder_start(mutex) == 0 && pprof_recorder_rate(mutex) == 3);
        CHECK(pprof_recorder_stop(mutex, NULL) == 0 && pprof_mutex_fraction() == 0);
    }
    pprof_recorder_free(mutex);

    /* counts: windows and state now; rate 0; a per-thread dump has no window */
    pprof_recorder *tc, *dump;
    CHECK(pprof_threadcreate_recorder_new(&tc) == 0);
    CHECK(pprof_recorder_write_to(tc, &p) == 0 && p);
    pprof_profile_free(p);
    CHECK(pprof_recorder_rate(tc) == 0);
    windowed_rules(tc, "threadcreate");
    /* symbolizing: names only, or nothing; bad arguments refused. A
     * thread of the test's own is alive meanwhile, so the profile has a
     * creation stack through main (the profiler's threads come and go). */
    int park[2];
    pthread_t parked;
    CHECK(pipe(park) == 0 && pthread_create(&parked, NULL, wait_on_pipe, &park[0]) == 0);
    while (!parked_running) /* a thread is listed once it runs */
        usleep(1000);
    CHECK(pprof_recorder_set_symbolize(NULL, PPROF_SYMBOLIZE_FULL) == PPROF_EINVAL);
    CHECK(pprof_recorder_set_symbolize(tc, (pprof_symbolize)9) == PPROF_EINVAL);
    for (int how = PPROF_SYMBOLIZE_FULL; how <= PPROF_SYMBOLIZE_NONE; how++) {
        CHECK(pprof_recorder_set_symbolize(tc, (pprof_symbolize)how) == 0);
        CHECK(pprof_recorder_write_to(tc, &p) == 0 && p);
        size_t files = 0, names = 0;
        const pprof_sample *s = pprof_profile_samples(p, &n);
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < s[i].nlocations; k++)
                for (size_t j = 0; j < s[i].locations[k]->nlines; j++) {
                    files += s[i].locations[k]->lines[j].filename[0] != 0;
                    names += !strcmp(s[i].locations[k]->lines[j].function, "main");
                }
        CHECKF(how == PPROF_SYMBOLIZE_FULL ? files > 0 && names > 0
               : how == PPROF_SYMBOLIZE_FUNCTIONS ? files == 0 && names > 0 : files == 0 && names == 0,
               "symbolize %d: %zu lines with a file, %zu naming main", how, files, names);
        pprof_profile_free(p);
    }
    pprof_recorder_free(tc);
    CHECK(write(park[1], "x", 1) == 1 && pthread_join(parked, NULL) == 0);
    close(park[0]);
    close(park[1]);
    CHECK(pprof_threads_recorder_new(&(pprof_threads_config){.per_thread = 1}, &dump) == 0);
    CHECK(pprof_recorder_start(dump) == PPROF_ENOTSUP && strstr(pprof_last_error(), "no window"));
    pprof_recorder_free(dump);
    /* The history's recorder: a kind it does not know, and no history kept
     * here (LIBPPROF_HISTORY unset). */
    pprof_recorder *past = NULL;
    CHECK(pprof_history_recorder_new(&(pprof_history_config){.kind = (pprof_history_kind)7}, &past) == PPROF_EINVAL &&
          strstr(pprof_last_error(), "kind must be") && !past);
    CHECK(pprof_history_recorder_new(&(pprof_history_config){.kind = PPROF_HISTORY_WALL}, &past) == PPROF_ENOTSUP &&
          strstr(pprof_last_error(), "LIBPPROF_HISTORY=SECONDS") && !past);
    return check_summary("test_recorder");
}
