/* span_times.c: how long spans and units of work lasted, for profiles of
 * slow ones only (the history's min_span_ms, recorder/history.c).
 *
 * Once pp_span_times_start has run, pprof_trace_enter stamps the time a
 * thread enters a context (a stack of 16 per thread: spans nest), and
 * pprof_trace_leave, when the context it leaves is the one stamped last,
 * records the span's ID, its length and its end when it lasted at least
 * the floor (LIBPPROF_HISTORY_SPAN_MS), into a fixed ring of the
 * profiler's own memory. A writer claims a slot with one atomic add and
 * publishes it with a sequence number (a seqlock: a reader keeps what it
 * read only when the number did not move), so entering and leaving stay
 * async-signal-safe and never allocate. A span entered on one thread and
 * left on another is not timed; one entered again (the same context
 * nested) is timed from its innermost entry.
 *
 * A unit of work is a pprof_do call: the outermost one on its thread (a
 * nested call belongs to it). It gets an ID from a process-wide count,
 * which its samples carry (trace.c's unit, the PP_UNIT_KEY label of the
 * history's windows), and its record is kept as a span's is.
 */
#include "labels.h"
#include "base/base.h"

#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#define RING (1u << 15)
#define DEPTH 16

typedef struct span_rec {
    _Atomic uint64_t seq; /* 0: being written; else the claim's number + 1 */
    _Atomic uint64_t span_id;       /* big-endian, as the label's 16 hex digits read */
    _Atomic int64_t end_ns;         /* CLOCK_REALTIME */
    _Atomic int64_t dur_unit;       /* its length << 1, | 1 for a unit of work's (32 bytes a record) */
} span_rec;

static span_rec *ring;
static _Atomic uint64_t claims;
static _Atomic uint64_t units; /* the last unit's ID */
static _Atomic int on;
static int64_t floor_ns;
static _Atomic int64_t alarm_at; /* ns; 0: no alarm */
static void (*_Atomic alarm_fn)(void);

static __thread struct {
    const pprof_trace_context *ctx;
    int64_t t0;
} stack[DEPTH];
static __thread int depth;

int pp_span_times_start(int64_t floor)
{
    if (atomic_load(&on))
        return 0;
    ring = pp_map(RING * sizeof *ring, PROT_READ | PROT_WRITE, 0, "span times");
    if (!ring)
        return -1;
    floor_ns = floor;
    atomic_store(&on, 1);
    return 0;
}

int64_t pp_span_times_floor(void)
{
    return atomic_load(&on) ? floor_ns : -1;
}

/* Keeps a span's or a unit's record when it lasted the floor or more, and
 * sounds the alarm when that is set and reached. async-signal-safe */
static void keep(uint64_t id, int unit, int64_t dur)
{
    if (dur < floor_ns)
        return;
    int64_t alarm = atomic_load_explicit(&alarm_at, memory_order_relaxed);
    void (*fn)(void) = atomic_load_explicit(&alarm_fn, memory_order_relaxed);
    if (alarm && dur >= alarm && fn)
        fn();
    uint64_t n = atomic_fetch_add(&claims, 1);
    span_rec *r = &ring[n % RING];
    atomic_store(&r->seq, 0);
    atomic_store_explicit(&r->span_id, id, memory_order_relaxed);
    atomic_store_explicit(&r->dur_unit, dur * 2 + (unit != 0), memory_order_relaxed);
    atomic_store_explicit(&r->end_ns, pp_now_ns(CLOCK_REALTIME), memory_order_relaxed);
    atomic_store(&r->seq, n + 1);
}

/* async-signal-safe */
void pp_span_times_enter(const pprof_trace_context *ctx)
{
    if (!atomic_load_explicit(&on, memory_order_relaxed))
        return;
    if (depth < DEPTH) {
        stack[depth].ctx = ctx;
        stack[depth].t0 = pp_now_ns(CLOCK_MONOTONIC);
    }
    depth++;
}

/* async-signal-safe */
void pp_span_times_leave(const pprof_trace_context *leaving)
{
    if (!atomic_load_explicit(&on, memory_order_relaxed) || depth == 0)
        return;
    depth--;
    if (depth >= DEPTH || stack[depth].ctx != leaving || !leaving)
        return;
    uint64_t id = 0;
    for (int i = 0; i < 8; i++)
        id = id << 8 | leaving->span_id[i];
    keep(id, 0, pp_now_ns(CLOCK_MONOTONIC) - stack[depth].t0);
}

/* async-signal-safe */
uint64_t pp_unit_begin(int64_t *t0)
{
    if (!atomic_load_explicit(&on, memory_order_relaxed) || pp_trace_unit())
        return 0;
    uint64_t id = atomic_fetch_add_explicit(&units, 1, memory_order_relaxed) + 1;
    *t0 = pp_now_ns(CLOCK_MONOTONIC);
    pp_trace_set_unit(id);
    return id;
}

/* async-signal-safe */
void pp_unit_end(uint64_t id, int64_t t0)
{
    if (!id)
        return;
    pp_trace_set_unit(0);
    keep(id, 1, pp_now_ns(CLOCK_MONOTONIC) - t0);
}

void pp_span_times_alarm(int64_t ns, void (*fn)(void))
{
    atomic_store(&alarm_fn, fn);
    atomic_store(&alarm_at, ns);
}

size_t pp_span_times_each(int64_t min_dur_ns, void (*fn)(uint64_t id, int unit, int64_t end_ns, void *arg), void *arg)
{
    if (!atomic_load(&on))
        return 0;
    uint64_t n = atomic_load(&claims);
    size_t found = 0;
    for (uint64_t k = n > RING ? n - RING : 0; k < n; k++) {
        span_rec *r = &ring[k % RING];
        uint64_t s1 = atomic_load(&r->seq);
        uint64_t id = atomic_load_explicit(&r->span_id, memory_order_relaxed);
        int64_t du = atomic_load_explicit(&r->dur_unit, memory_order_relaxed);
        int64_t end = atomic_load_explicit(&r->end_ns, memory_order_relaxed);
        if (s1 != k + 1 || atomic_load(&r->seq) != s1 || du / 2 < min_dur_ns)
            continue;
        fn(id, (int)(du & 1), end, arg);
        found++;
    }
    return found;
}
