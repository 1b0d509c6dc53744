/* pprof_stats.h: the counters of libpprof's parts (statistics), part of
 * the public API. pprof.h includes it: programs include pprof.h alone.
 * The conventions of pprof.h's introduction hold here.
 */
#include "pprof.h" /* first: it includes this file at its end */

#ifndef PPROF_STATS_H
#define PPROF_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ statistics
 *
 * Counters of the library's parts, for dashboards and for the index page.
 * Every *_stats struct ends in `reserved`, which its *_stats_get fills
 * with zeros: a later version's new counters take its place, 8 bytes each
 * (a uint64_t or int64_t), so the struct's size and its fields' offsets
 * never change. A program built against an older header keeps reading the
 * fields it knows; one built against a newer header, running with an
 * older library, reads 0 in the fields that library does not fill, so a
 * new counter is one whose 0 means "none" or "not known". */

typedef struct pprof_labels_stats {
    uint64_t live;            /* sets allocated and not yet freed */
    uint64_t created;         /* sets ever created */
    uint64_t freed;           /* sets ever freed */
    uint64_t kept;            /* distinct sets kept by cumulative profiles */
    uint64_t dropped;         /* records whose labels were dropped at the cap */
    uint64_t reserved[8];     /* zero; later fields take its place, so the struct's size never changes */
} pprof_labels_stats;

/* Counters of label-set memory. Thread-safe. */
PPROF_API void pprof_labels_stats_get(pprof_labels_stats *out);

typedef struct pprof_otel_stats {
    int published;           /* 1: the process context is published */
    uint64_t updates;        /* publications, the first included */
    uint64_t failures;       /* publications that failed (no memory, payload over 64 KiB) */
    uint64_t keys;           /* label keys in threadlocal.attribute_key_map (at most 256) */
    uint64_t keys_refused;   /* label pairs left out of thread records: their key came past 256 */
    uint64_t attrs_dropped;  /* label pairs left out: a value over 255 bytes, or past 228 bytes in all */
    uint64_t reserved[8];    /* zero; later fields take its place, so the struct's size never changes */
} pprof_otel_stats;

/* Counters of the publication. Thread-safe. */
PPROF_API void pprof_otel_stats_get(pprof_otel_stats *out);

#define PPROF_CPU_HIST_BUCKETS 64

typedef struct pprof_cpu_stats {
    uint64_t signals;        /* profiling signals handled */
    uint64_t samples;        /* weighted samples (1 + overrun each) */
    uint64_t lost;           /* weighted samples lost to a full ring */
    uint64_t truncated;      /* stacks cut at max_frames */
    uint64_t handler_ns;     /* total time spent in the signal handler */
    uint64_t collector_ns;   /* CPU time of the collector thread */
    int threads_timed;       /* threads with a live timer now */
    int64_t hz;              /* rate in force, 0 when idle */
    uint64_t handler_reclaimed; /* times another handler had replaced the profiling signal's
                                   and was put behind it (it gets the signals that are not ours) */
    uint64_t blocked;        /* samples not taken because their thread blocked the profiling
                                signal while it ran (estimated from its CPU time); profiles
                                show them as "[not sampled: ...]" */
    uint64_t catch_ups;      /* samples taken by a queued signal because the kernel left a
                                running thread's timer unchecked for max(2 periods, 8 ms) of
                                its CPU (it checks CPU timers only at the ticks that find the
                                thread running) */
    /* handler_hist[i]: signals handled in [i*100, (i+1)*100) ns; the last
     * bucket also counts everything slower. */
    uint64_t handler_hist[PPROF_CPU_HIST_BUCKETS];
    uint64_t reserved[8];    /* zero; later fields take its place, so the struct's size never changes */
} pprof_cpu_stats;

/* Counters of the CPU sampler since the process started. Thread-safe. */
PPROF_API void pprof_cpu_stats_get(pprof_cpu_stats *out);

typedef struct pprof_wall_stats {
    int64_t hz;              /* rate in force, 0 when idle */
    int64_t threads;         /* threads the sampler follows now */
    uint64_t ticks;          /* the sampler's wakes */
    uint64_t samples;        /* samples counted (periods x threads) */
    uint64_t still;          /* threads counted where they were, not looked at (no CPU since) */
    uint64_t looks;          /* threads looked at (they ran since their last look) */
    uint64_t walks;          /* of those, walked from /proc as they waited (no signal) */
    uint64_t signals;        /* of those, sent the profiling signal as they ran */
    uint64_t no_answer;      /* signals not answered in time */
    uint64_t full_scans;     /* ticks that read every thread's CPU clock */
    uint64_t late;           /* periods the sampler woke too late for (a busy machine): counted
                                half where each thread was at the wake before, half where the
                                next wake found it */
    uint64_t sampler_ns;     /* CPU time of the sampler thread */
    uint64_t reserved[8];    /* zero; later fields take its place */
} pprof_wall_stats;

/* Counters of the wall-clock sampler since the process started.
 * Thread-safe. */
PPROF_API void pprof_wall_stats_get(pprof_wall_stats *out);

typedef struct pprof_heap_stats {
    int64_t rate;              /* in force, 0 when off */
    uint64_t sampled;          /* allocations sampled since start-up */
    uint64_t unrecorded;       /* sampled but not recorded (tables full, or held by another thread's fork) */
    uint64_t records;          /* distinct (stack, labels, size) records */
    uint64_t live_sampled;     /* sampled objects not yet freed */
    uint64_t table_bytes;      /* memory of the records */
    uint64_t live_table_bytes; /* memory of the live-object table */
    uint64_t frees_unseen;     /* frees of sampled objects lost during forks (no room to defer
                                  them): those objects count as in use until their address is reused */
    int64_t own_inuse_bytes;   /* the profiler's own live heap from the program's allocator (server,
                                  encoders), estimated from its samples: left out of the heap profiles */
    uint64_t own_heap_bytes;   /* the profiler's own heap, apart from the program's allocator (what
                                  the symbolizer and the built-in server's threads allocate):
                                  blocks in use */
    uint64_t own_heap_mapped;  /* ... and the memory it has taken for them */
    uint64_t own_heap_fallbacks; /* allocations it could not serve (given to the program's allocator) */
    uint64_t reserved[8];      /* zero; later fields take its place, so the struct's size never changes */
} pprof_heap_stats;

/* Counters of the heap sampler (own_inuse_bytes reads the records: not
 * for a hot path). Thread-safe. */
PPROF_API void pprof_heap_stats_get(pprof_heap_stats *out);

typedef struct pprof_contention_stats {
    int64_t mutex_fraction;    /* in force, 0 when off */
    int64_t block_rate;        /* in force (ns), 0 when off */
    uint64_t mutex_records;    /* distinct (stack, labels) records */
    uint64_t block_records;
    uint64_t lost;             /* kept events not recorded: the tables were full, or held by
                                  another thread's fork */
    int64_t own_mutex_delay_ns; /* the profiler's own threads' waits, as recorded (sampled): left */
    int64_t own_block_delay_ns; /* out of the mutex and block profiles */
    uint64_t reserved[8];      /* zero; later fields take its place, so the struct's size never changes */
} pprof_contention_stats;

/* Counters of the contention profiles. Thread-safe. */
PPROF_API void pprof_contention_stats_get(pprof_contention_stats *out);

/* The symbolizer's memory and what it gave back. Its tables (libdw's, the
 * per-module symbol arrays, the per-unit function indexes) are built on
 * the first profile that needs them and dropped after
 * LIBPPROF_SYMBOLIZER_IDLE seconds without one; the pages of the object
 * and debug files a profile read are given back when its symbolization
 * ends; the cache of answers is emptied when it passes its budget. */
typedef struct pprof_symbolizer_stats {
    uint64_t sessions;         /* symbolization batches (profiles, symbol requests) */
    uint64_t cache_entries;    /* addresses with a cached answer */
    uint64_t cache_bytes;      /* memory of that cache */
    uint64_t cache_budget;     /* LIBPPROF_SYMBOLIZER_CACHE_MB, in bytes */
    uint64_t cache_evictions;  /* times the cache was emptied for its budget */
    uint64_t page_releases;    /* batches after which mapped file pages were given back */
    uint64_t idle_releases;    /* times everything was dropped for being idle */
    int loaded;                /* 1 while the tables are built */
    /* Debug files fetched from debuginfod by build ID (docs/symbols.md). */
    uint64_t debuginfo_fetched;      /* files fetched into the cache */
    uint64_t debuginfo_pending;      /* files being fetched now */
    uint64_t debuginfo_failed;       /* fetches that failed (not found, no answer in time, ...) */
    uint64_t debuginfo_cache_bytes;  /* the cache's size (LIBPPROF_DEBUGINFO_CACHE) */
    uint64_t debuginfo_cache_budget; /* LIBPPROF_DEBUGINFO_CACHE_MB, in bytes */
    int debuginfo_fetching;          /* PPROF_DEBUGINFOD_*: whether fetching is on, and why not */
    uint64_t reserved[2];      /* zero; later fields take its place, so the struct's size never changes */
} pprof_symbolizer_stats;

/* The history (LIBPPROF_HISTORY, pprof.h): slices, kept_ns and
 * oldest_unix_ns are the CPU series'; bytes and dropped count every
 * series. */
typedef struct pprof_history_stats {
    int64_t keep_ns;           /* LIBPPROF_HISTORY, in ns; 0: no history is kept */
    int64_t kept_ns;           /* the span the kept slices cover now */
    int64_t oldest_unix_ns;    /* where they begin (0: none yet) */
    uint64_t slices;           /* slices kept */
    uint64_t bytes;            /* their memory (the profiler's own heap) */
    uint64_t bound;            /* LIBPPROF_HISTORY_MB, in bytes */
    uint64_t dropped;          /* slices dropped early for the memory bound */
    int64_t hz;                /* the CPU rate its samples were taken at (0: not sampling) */
    int64_t wall_hz;           /* the wall-clock rate (LIBPPROF_HISTORY_WALL=1; 0: not kept) */
    uint64_t wall_slices;      /* wall-clock slices kept (bytes counts them too) */
    uint64_t dump_triggers;    /* pprof_history_dump calls and slow spans (LIBPPROF_HISTORY_DUMP_SPAN_MS) */
    uint64_t dumps;            /* dumps written (triggers a second apart or less make one) */
    uint64_t dump_failures;    /* dumps that could not be written (each said on stderr) */
    uint64_t dumps_kept;       /* LIBPPROF_HISTORY_DUMPS when LIBPPROF_HISTORY_DUMP_DIR is set, else 0 */
    uint64_t kinds;            /* the kinds kept: bit k set for pprof_history_kind k */
    uint64_t reserved[1];      /* zero; later fields take its place */
} pprof_history_stats;

/* The history's figures now. Thread-safe. */
PPROF_API void pprof_history_stats_get(pprof_history_stats *out);

/* pprof_symbolizer_stats.debuginfo_fetching */
enum {
    PPROF_DEBUGINFOD_OFF = 0,          /* no server named */
    PPROF_DEBUGINFOD_ON = 1,           /* LIBPPROF_DEBUGINFOD_URLS, or LIBPPROF_DEBUGINFOD=1 */
    PPROF_DEBUGINFOD_OFF_STANDARD = 2, /* DEBUGINFOD_URLS alone: not fetched until LIBPPROF_DEBUGINFOD=1 */
    PPROF_DEBUGINFOD_STOPPED = 3,      /* the process exits or entered a sandbox */
    PPROF_DEBUGINFOD_UNAVAILABLE = 4   /* this libpprof was built without libcurl's headers */
};

/* The symbolizer's counters as of the end of its last batch (never waits
 * for one in progress). Thread-safe. */
PPROF_API void pprof_symbolizer_stats_get(pprof_symbolizer_stats *out);


#ifdef __cplusplus
}
#endif
#endif /* PPROF_STATS_H */
