/* labels.h: the interface of labels/, label sets as the samplers see them.
 *
 * Label sets are immutable and reference-counted (labels.c, the public
 * pprof_labels_* API); each thread has a current set in an initial-exec
 * thread-local. Samplers take the current set without locks; cumulative
 * tables (heap, contention) map it to a kept set through a bounded table
 * (labels_cap.c) so per-request labels cannot grow them without end.
 *
 * Invariants: reading the current set is async-signal-safe; mapping to a
 * kept set is malloc-safe and never waits for a fork (lock.h).
 */
#ifndef PP_LABELS_H
#define PP_LABELS_H
#include <stddef.h>
#include <stdint.h>
#include "pprof.h"

/* The calling thread's current label set with a reference taken, or NULL.
 * async-signal-safe */
const void *pp_labels_current_ref(void);
/* Drops a reference taken by pp_labels_current_ref (may free: never call
 * from a signal handler). */
void pp_labels_unref(const void *set);
/* The pairs of a set, sorted by key. */
size_t pp_labels_pairs(const void *set, const pprof_label **out);
/* Makes `set` (a reference the caller gives away, or NULL) the calling
 * thread's current set: a new thread adopting its creator's set. */
void pp_labels_adopt(pprof_labels *set);
/* The address of the calling thread's current-set pointer (thread dumps
 * read it for threads they do not interrupt; see thread_dump.c). */
void *const *pp_labels_slot(void);
/* The layout thread dumps copy a set by (through the kernel, as another
 * thread may free it meanwhile): a 32-bit reference count, the 32-bit pair
 * count at PP_LABELS_N_OFFSET, then the pairs (pprof_label) from
 * PP_LABELS_PAIRS_OFFSET. labels.c asserts it. */
#define PP_LABELS_N_OFFSET 4
#define PP_LABELS_PAIRS_OFFSET 8
/* The calling thread's current set without a reference (valid until the
 * thread changes it), or NULL. async-signal-safe */
const pprof_labels *pp_labels_current_peek(void);
/* The set a cumulative table keeps for `set`: one shared set equal to it,
 * kept while fewer than the cap are kept, else the shared set
 * {"pprof.labels": "dropped"} (NULL before pp_labels_cap_init); NULL for
 * NULL. The result lives as long as the process. Takes a futex lock and
 * never calls malloc: safe inside malloc hooks, not in signal handlers. */
const pprof_labels *pp_labels_cumulative(const pprof_labels *set);
/* Builds the dropped set; call once at start-up. */
void pp_labels_cap_init(void);
/* fork handlers: the cap lock is held across fork. */
void pp_labels_cap_fork_prepare(void);
void pp_labels_cap_fork_parent(void);
void pp_labels_cap_fork_child(void);
/* Distinct sets kept for cumulative profiles, and records dropped. */
void pp_labels_cap_stats(uint64_t *kept, uint64_t *dropped);
/* The profiler's own work (base/names.h): pp_own_begin makes the calling
 * thread's current set {PP_OWN_KEY: PP_OWN_VALUE} and returns the set it
 * replaced, for pp_own_end. A thread that only works for the profiler
 * calls pp_own_begin once and never ends. */
pprof_labels *pp_own_begin(void);
void pp_own_end(pprof_labels *prev);
/* 1 if a set (a sample's, a record's kept set) marks the profiler's own
 * work. */
int pp_labels_is_own(const void *set);
/* Drops the calling thread's set at thread exit. */
void pp_labels_thread_exit(void);

/* Trace contexts (trace.c): what a sample keeps of the thread's span. */
#define PP_SPAN_NAME_MAX 64
typedef struct pp_trace_snap {
    uint8_t on;             /* 0: no context (the rest is not set) */
    uint8_t flags;
    uint8_t trace_id[16];
    uint8_t span_id[8];
    char span_name[PP_SPAN_NAME_MAX]; /* "" for none */
    uint64_t unit;          /* the pprof_do unit of work it is in (span_times.c), 0: none; set whatever `on` */
} pp_trace_snap;
/* Copies the calling thread's context into *out. async-signal-safe */
void pp_trace_capture(pp_trace_snap *out);
/* The address of the calling thread's current-context pointer (a
 * `const pprof_trace_context *`), followed by its unit of work (a
 * uint64_t, the word after it): the wall sampler and thread dumps copy
 * the context of a thread that waits in the kernel through it, as they do
 * its labels through pp_labels_slot (threads/thread_dump.c). */
void *const *pp_trace_slot(void);
/* Makes a copy of *t the calling thread's context: a new thread taking its
 * creator's (captured there). Its unit of work is not taken: a unit is
 * one call on one thread. */
void pp_trace_adopt(const pp_trace_snap *t);
/* The calling thread's unit of work (0: none), and setting it; the
 * units' timing is span_times.c's. async-signal-safe */
uint64_t pp_trace_unit(void);
void pp_trace_set_unit(uint64_t unit);
/* The label that names a sample's unit of work: only the history's own
 * windows ask for it (PP_TRACE_UNIT_LABEL), and its profiles drop it
 * once it has chosen the samples of slow units. */
#define PP_UNIT_KEY "pprof.unit"
/* What pp_trace_labels and pp_trace_pairs add besides span_id and
 * span_name: bits. */
#define PP_TRACE_ID_LABEL 1   /* trace_id */
#define PP_TRACE_UNIT_LABEL 2 /* PP_UNIT_KEY, when the sample is in a unit of work */
/* The labels of a sample: the pairs of `set` (may be NULL) with the span's
 * (span_id, span_name, and what `what` asks for), sorted by key, in *out;
 * returns their number. The strings live in *text, *t and the set; call
 * pp_trace_text_free(text) after use (text->heap starts NULL). Out of
 * memory, 0 pairs. */
typedef struct pp_trace_text {
    char unit[17];
    char span_id[17];
    char trace_id[33];
    pprof_label pairs[32];
    pprof_label *heap;
} pp_trace_text;
size_t pp_trace_labels(const void *set, const pp_trace_snap *t, int what, pp_trace_text *text,
                       pprof_label **out);
/* The same from n pairs already taken (sorted by key, e.g. copied from a
 * thread that waits): the strings live in *text, *t and `pairs`. */
size_t pp_trace_pairs(const pprof_label *pairs, size_t n, const pp_trace_snap *t, int what, pp_trace_text *text,
                      pprof_label **out);
void pp_trace_text_free(pp_trace_text *text);

/* How long spans and units of work lasted (span_times.c). Starts timing
 * the spans of every thread that enters one from now on, and the units of
 * work (pprof_do calls) begun from now on, keeping those of at least
 * floor_ns: 0, or -1 when its memory could not be mapped. Not in a
 * signal handler. */
int pp_span_times_start(int64_t floor_ns);
/* The floor, or -1 when spans are not timed. Thread-safe. */
int64_t pp_span_times_floor(void);
/* trace.c's entry and exit (ctx: the context entered, or left).
 * async-signal-safe */
void pp_span_times_enter(const pprof_trace_context *ctx);
void pp_span_times_leave(const pprof_trace_context *leaving);
/* pprof_do's unit of work: pp_unit_begin makes the call a unit of the
 * calling thread and returns its ID (and its start in *t0), or 0 when
 * units are not timed or the thread is in one already (a nested call
 * belongs to the outer unit); pp_unit_end(id, t0) ends it (nothing for
 * 0). async-signal-safe */
uint64_t pp_unit_begin(int64_t *t0);
void pp_unit_end(uint64_t id, int64_t t0);
/* Calls fn (async-signal-safe, as it runs where a span or unit ends) when
 * one that lasted alarm_ns or more ends; 0 stops it. Thread-safe. */
void pp_span_times_alarm(int64_t alarm_ns, void (*fn)(void));
/* Calls fn for each kept span or unit that lasted min_dur_ns or more (its
 * ID, as the span_id or PP_UNIT_KEY label's 16 hex digits read; unit: 1
 * for a unit of work; its end, CLOCK_REALTIME); returns how many.
 * Thread-safe. */
size_t pp_span_times_each(int64_t min_dur_ns, void (*fn)(uint64_t id, int unit, int64_t end_ns, void *arg),
                          void *arg);
#endif
