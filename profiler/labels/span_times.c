/* span_times.c: how long spans lasted, for profiles of slow spans only
 * (the history's min_span_ms, recorder/history.c).
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
    _Atomic int64_t end_ns, dur_ns; /* CLOCK_REALTIME end; length */
} span_rec;

static span_rec *ring;
static _Atomic uint64_t claims;
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
    int64_t dur = pp_now_ns(CLOCK_MONOTONIC) - stack[depth].t0;
    if (dur < floor_ns)
        return;
    int64_t alarm = atomic_load_explicit(&alarm_at, memory_order_relaxed);
    void (*fn)(void) = atomic_load_explicit(&alarm_fn, memory_order_relaxed);
    if (alarm && dur >= alarm && fn)
        fn();
    uint64_t id = 0;
    for (int i = 0; i < 8; i++)
        id = id << 8 | leaving->span_id[i];
    uint64_t n = atomic_fetch_add(&claims, 1);
    span_rec *r = &ring[n % RING];
    atomic_store(&r->seq, 0);
    atomic_store_explicit(&r->span_id, id, memory_order_relaxed);
    atomic_store_explicit(&r->dur_ns, dur, memory_order_relaxed);
    atomic_store_explicit(&r->end_ns, pp_now_ns(CLOCK_REALTIME), memory_order_relaxed);
    atomic_store(&r->seq, n + 1);
}

void pp_span_times_alarm(int64_t ns, void (*fn)(void))
{
    atomic_store(&alarm_fn, fn);
    atomic_store(&alarm_at, ns);
}

size_t pp_span_times_each(int64_t min_dur_ns, void (*fn)(uint64_t span_id, int64_t end_ns, void *arg), void *arg)
{
    if (!atomic_load(&on))
        return 0;
    uint64_t n = atomic_load(&claims);
    size_t found = 0;
    for (uint64_t k = n > RING ? n - RING : 0; k < n; k++) {
        span_rec *r = &ring[k % RING];
        uint64_t s1 = atomic_load(&r->seq);
        uint64_t id = atomic_load_explicit(&r->span_id, memory_order_relaxed);
        int64_t dur = atomic_load_explicit(&r->dur_ns, memory_order_relaxed);
        int64_t end = atomic_load_explicit(&r->end_ns, memory_order_relaxed);
        if (s1 != k + 1 || atomic_load(&r->seq) != s1 || dur < min_dur_ns)
            continue;
        fn(id, end, arg);
        found++;
    }
    return found;
}
