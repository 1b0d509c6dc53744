/* heap_peak.c: the live heap at its highest, since start-up and in
 * windows.
 *
 * The table keeps an estimate of the live heap's bytes (each sampled
 * object weighs its size unsampled, as the profiles count it), changed
 * with every sampled allocation and free under the table's lock. A peak
 * slot remembers when the estimate was highest: a new high bumps the
 * slot's epoch, which says "every record's peak value is its value now";
 * a record about to change first saves its value, tagged with the epoch,
 * unless it already did in this epoch. The state at the peak is then
 * each record's saved value where the tag is the slot's epoch, and its
 * value now elsewhere: O(1) per sampled event, no copy at each new high.
 * Slot 0 runs from start-up; windows take the others for their length.
 *
 * Everything here runs with the table's lock held, inside malloc: no
 * malloc, memory from pp_map.
 */
#define _GNU_SOURCE
#include "heap.h"
#include "base/base.h"

#include <math.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_SEQ (1u << 22) /* records with a peak value kept */

typedef struct slot {
    int used;
    uint32_t epoch;
    double peak;         /* the highest estimate, bytes */
    int64_t when_ns;     /* CLOCK_REALTIME then */
} slot;

typedef struct saved {
    uint32_t epoch;
    uint32_t pad;
    int64_t live;        /* the record's live objects at the slot's peak */
} saved;

static slot slots[PP_HEAP_PEAK_SLOTS] = {{1, 1, 0, 0}};
static uint32_t last_epoch = 1;
static double live_bytes;
static saved *kept; /* [slot][seq], pp_map'd on first use */
static _Atomic int64_t rate; /* the sampling rate the live objects were sampled at */

/* malloc-safe */
void pp_heap_peak_set_rate(int64_t r)
{
    atomic_store_explicit(&rate, r, memory_order_relaxed);
}

/* async-signal-safe */
static int64_t now_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The bytes one sampled object of `size` stands for. malloc-safe */
static double weight(uint64_t size)
{
    int64_t r = atomic_load_explicit(&rate, memory_order_relaxed);
    if (r <= 1 || !size)
        return (double)size;
    return (double)size / (1.0 - exp(-(double)size / (double)r));
}

/* malloc-safe; lock held */
void pp_heap_peak_change(const pp_rec *r, int delta)
{
    static int map_failed;
    if (!kept && !map_failed &&
        !(kept = pp_map((size_t)PP_HEAP_PEAK_SLOTS * MAX_SEQ * sizeof *kept, PROT_READ | PROT_WRITE, MAP_NORESERVE,
                        "the heap peak's books")))
        map_failed = 1; /* peaks then read records as they are now */
    int64_t before = r->c[0] - r->c[1];
    for (int s = 0; s < PP_HEAP_PEAK_SLOTS; s++) {
        if (!kept || !slots[s].used || r->seq >= MAX_SEQ)
            continue;
        saved *k = &kept[(size_t)s * MAX_SEQ + r->seq];
        if (k->epoch != slots[s].epoch)
            *k = (saved){slots[s].epoch, 0, before};
    }
    live_bytes += delta * weight(r->key);
    for (int s = 0; s < PP_HEAP_PEAK_SLOTS; s++)
        if (slots[s].used && live_bytes > slots[s].peak) {
            slots[s].peak = live_bytes;
            slots[s].epoch = ++last_epoch;
            slots[s].when_ns = now_real();
        }
}

/* lock held */
int pp_heap_peak_begin_locked(void)
{
    for (int s = 1; s < PP_HEAP_PEAK_SLOTS; s++)
        if (!slots[s].used) {
            slots[s] = (slot){1, ++last_epoch, live_bytes, now_real()};
            return s;
        }
    return -1;
}

/* lock held */
int pp_heap_peak_restart_locked(int s)
{
    if (s <= 0 || s >= PP_HEAP_PEAK_SLOTS || !slots[s].used)
        return -1;
    slots[s] = (slot){1, ++last_epoch, live_bytes, now_real()};
    return 0;
}

/* lock held */
void pp_heap_peak_end_locked(int s)
{
    if (s > 0 && s < PP_HEAP_PEAK_SLOTS)
        slots[s].used = 0;
}

/* lock held */
int64_t pp_heap_peak_value_locked(int s, const pp_rec *r, int64_t *when_ns, double *peak)
{
    *when_ns = slots[s].when_ns;
    *peak = slots[s].peak;
    if (kept && r->seq < MAX_SEQ) {
        const saved *k = &kept[(size_t)s * MAX_SEQ + r->seq];
        if (k->epoch == slots[s].epoch)
            return k->live;
    }
    return r->c[0] - r->c[1];
}
