/* index.c: the index page, {prefix} (see endpoints.h).
 *
 * web/index.html with one row per endpoint of the table that has an href
 * (handlers.c), one per custom profile, and the profiler's state: the
 * core's counters from the public API, then the rows other parts of the
 * server register (the built-in daemon's connections, the process tree's
 * members), then the profiler's own work and the samplers' settings.
 */
#include "auth.h"
#include "base/base.h"
#include "endpoints.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* web/index.html, embedded at build time by web/embed.cmake. */
__attribute__((visibility("hidden"))) extern const unsigned char pp_web_index_html[];
__attribute__((visibility("hidden"))) extern const size_t pp_web_index_html_len;

#define MAX_ROWS 8
static void (*_Atomic rows[MAX_ROWS])(pp_reply *r);

int pp_index_row_add(void (*write)(pp_reply *r))
{
    for (int i = 0; i < MAX_ROWS; i++) {
        void (*expected)(pp_reply *r) = NULL;
        if (atomic_compare_exchange_strong(&rows[i], &expected, write) || expected == write)
            return 0;
    }
    return -1;
}

static void write_registered(pp_reply *r)
{
    for (int i = 0; i < MAX_ROWS; i++) {
        void (*write)(pp_reply *r) = atomic_load(&rows[i]);
        if (write)
            write(r);
    }
}

/* The count Go's index shows next to a profile: its records (heap,
 * allocs, mutex, block) or live threads (goroutine, threadcreate); -1 for
 * endpoints that are not counted. */
static long count_of(const char *name)
{
    if (!strcmp(name, "heap") || !strcmp(name, "allocs")) {
        pprof_heap_stats h;
        pprof_heap_stats_get(&h);
        return (long)h.records;
    }
    if (!strcmp(name, "mutex") || !strcmp(name, "block")) {
        pprof_contention_stats c;
        pprof_contention_stats_get(&c);
        return (long)(name[0] == 'm' ? c.mutex_records : c.block_records);
    }
    if (!strcmp(name, "goroutine") || !strcmp(name, "threadcreate")) {
        long n = 0;
        DIR *d = pp_fd_opendir("/proc/self/task");
        for (struct dirent *e; d && (e = readdir(d));)
            n += e->d_name[0] != '.';
        if (d)
            pp_fd_closedir(d);
        return n;
    }
    return -1;
}

static void write_rows(pp_reply *r, const pp_req *q)
{
    (void)q;
    size_t nendpoints;
    const pp_endpoint *endpoints = pp_endpoints(&nendpoints);
    for (size_t i = 0; i < nendpoints; i++) {
        const pp_endpoint *e = &endpoints[i];
        if (!e->href)
            continue;
        long n = count_of(e->name);
        char count[32] = "";
        if (n >= 0)
            snprintf(count, sizeof count, "%ld", n);
        pp_reply_printf(r, "<tr><td>%s</td><td><a href=\"%s\">%s</a></td><td>", count, e->href, e->name);
        if (e->flags & PP_EP_PROFILE)
            pp_reply_printf(r, "<a href=\"ui?profile=%s\">flame graph</a>", e->name);
        pp_reply_printf(r, "</td><td>%s</td></tr>\n", e->desc);
    }
    pprof_custom *c[64];
    size_t n = pprof_custom_list(c, 64);
    for (size_t i = 0; i < n; i++) {
        const char *name = pprof_custom_name(c[i]); /* [A-Za-z0-9._-]: nothing to escape */
        pp_reply_printf(r, "<tr><td>%zu</td><td><a href=\"%s?debug=1\">%s</a></td><td><a href=\"ui?profile=%s\">"
                        "flame graph</a></td><td>A profile defined by the program (entries now)</td></tr>\n",
                        pprof_custom_count(c[i]), name, name, name);
    }
}

/* The profiler's own counters, from the public API. */
static void write_stats(pp_reply *r, const pp_req *q)
{
    (void)q;
    pprof_cpu_stats c;
    pprof_labels_stats l;
    pprof_heap_stats h;
    pprof_cpu_stats_get(&c);
    pprof_labels_stats_get(&l);
    pprof_heap_stats_get(&h);
    pp_reply_printf(r,
                    "<tr><td>CPU sampling</td><td>%lld Hz now, %d threads timed; %llu signals, %llu samples, "
                    "%llu lost, %llu not taken (their thread blocks the signal), %llu truncated, %llu caught up "
                    "(a running thread's timer went unchecked); handler %.3f ms, collector %.3f ms of CPU</td></tr>\n",
                    (long long)c.hz, c.threads_timed, (unsigned long long)c.signals, (unsigned long long)c.samples,
                    (unsigned long long)c.lost, (unsigned long long)c.blocked, (unsigned long long)c.truncated,
                    (unsigned long long)c.catch_ups,
                    c.handler_ns / 1e6,
                    c.collector_ns / 1e6);
    pprof_wall_stats ws;
    pprof_wall_stats_get(&ws);
    if (ws.ticks)
        pp_reply_printf(r,
                        "<tr><td>Wall-clock sampling</td><td>%lld Hz now, %lld threads followed; %llu ticks "
                        "(%llu periods late), %llu samples: %llu counted where they were (no CPU since), %llu "
                        "looked at (%llu walked from /proc, %llu signalled, %llu did not answer); %llu full "
                        "scans; sampler %.3f ms of CPU</td></tr>\n",
                        (long long)ws.hz, (long long)ws.threads, (unsigned long long)ws.ticks,
                        (unsigned long long)ws.late, (unsigned long long)ws.samples, (unsigned long long)ws.still,
                        (unsigned long long)ws.looks, (unsigned long long)ws.walks, (unsigned long long)ws.signals,
                        (unsigned long long)ws.no_answer, (unsigned long long)ws.full_scans, ws.sampler_ns / 1e6);
    if (c.handler_reclaimed)
        pp_reply_printf(r,
                        "<tr><td>Profiling signal</td><td>another handler replaced libpprof's %llu times; "
                        "it was put back each time, and the other one gets the signals that are not "
                        "libpprof's (it was installed without sigaction; see LIBPPROF_SIGNAL to use another "
                        "signal)</td></tr>\n",
                        (unsigned long long)c.handler_reclaimed);
    pp_reply_printf(r,
                    "<tr><td>Label sets</td><td>%llu live, %llu created, %llu freed; %llu kept by "
                    "cumulative profiles, %llu records with labels dropped</td></tr>\n",
                    (unsigned long long)l.live, (unsigned long long)l.created, (unsigned long long)l.freed,
                    (unsigned long long)l.kept, (unsigned long long)l.dropped);
    pprof_otel_stats o;
    pprof_otel_stats_get(&o);
    if (o.published)
        pp_reply_printf(r,
                        "<tr><td>OpenTelemetry contexts</td><td>process context published (mapping OTEL_CTX, "
                        "%llu publications, %llu failed); thread records with %llu label keys mapped, %llu "
                        "pairs left out past 256 keys, %llu left out for size</td></tr>\n",
                        (unsigned long long)o.updates, (unsigned long long)o.failures, (unsigned long long)o.keys,
                        (unsigned long long)o.keys_refused, (unsigned long long)o.attrs_dropped);
    else
        pp_reply_printf(r, "<tr><td>OpenTelemetry contexts</td><td>not published (LIBPPROF_OTEL_CONTEXT=0, "
                           "or the mapping could not be made)</td></tr>\n");
    pp_refusals f;
    pp_refusals_get(&f);
    pp_reply_printf(r,
                    "<tr><td>Refused requests</td><td>%llu without credentials (401), %llu with a wrong token "
                    "(403), %llu over a limit (503)</td></tr>\n",
                    (unsigned long long)f.unauthenticated, (unsigned long long)f.forbidden,
                    (unsigned long long)f.busy);
    write_registered(r);
    pprof_contention_stats w;
    pprof_contention_stats_get(&w);
    pp_reply_printf(r,
                    "<tr><td>libpprof's own work</td><td>heap in use %.1f MiB from the program's allocator "
                    "(estimated from its samples) and %.1f MiB of its own (the symbolizer's and the built-in server's; %.1f MiB taken, "
                    "%llu allocations it passed to the program's allocator), mutex waits %.3f s, block waits "
                    "%.3f s (as recorded): left out of the heap, allocs, mutex and block profiles; its CPU "
                    "time carries the label %s=%s</td></tr>\n",
                    h.own_inuse_bytes / 1048576.0, h.own_heap_bytes / 1048576.0, h.own_heap_mapped / 1048576.0,
                    (unsigned long long)h.own_heap_fallbacks, w.own_mutex_delay_ns / 1e9,
                    w.own_block_delay_ns / 1e9, PP_OWN_KEY, PP_OWN_VALUE);
    pprof_symbolizer_stats y;
    pprof_symbolizer_stats_get(&y);
    pp_reply_printf(r,
                    "<tr><td>Symbolizer</td><td>tables %s; cache of answers %llu addresses, %.1f MiB of "
                    "%.0f MiB allowed, emptied %llu times for it; %llu batches, mapped file pages given "
                    "back after %llu, everything dropped %llu times when idle</td></tr>\n",
                    y.loaded ? "built" : "not built", (unsigned long long)y.cache_entries,
                    y.cache_bytes / 1048576.0, y.cache_budget / 1048576.0,
                    (unsigned long long)y.cache_evictions, (unsigned long long)y.sessions,
                    (unsigned long long)y.page_releases, (unsigned long long)y.idle_releases);
    pprof_history_stats hs;
    pprof_history_stats_get(&hs);
    char wall_note[200];
    if (hs.wall_hz)
        snprintf(wall_note, sizeof wall_note,
                 "; wall-clock samples at %lld Hz in %llu slices (LIBPPROF_HISTORY_WALL): "
                 "<a href=\"wall?last=60\">the last minute</a>",
                 (long long)hs.wall_hz, (unsigned long long)hs.wall_slices);
    else
        snprintf(wall_note, sizeof wall_note, "; no wall-clock samples (LIBPPROF_HISTORY_WALL=1 keeps them)");
    char kinds_note[200] = "";
    for (int k = PPROF_HISTORY_ALLOCS, n = 0; k <= PPROF_HISTORY_BLOCK; k++)
        if (hs.kinds >> k & 1) {
            size_t len = strlen(kinds_note);
            snprintf(kinds_note + len, sizeof kinds_note - len, "%s<a href=\"%s?last=60\">%s</a>",
                     n++ ? ", " : "; the last minute of ", pp_history_endpoints[k], pp_history_endpoints[k]);
        }
    char dump_note[200] = "";
    if (hs.dumps_kept)
        snprintf(dump_note, sizeof dump_note,
                 "; dumps (LIBPPROF_HISTORY_DUMP_DIR): %llu written of %llu triggers, %llu failed, the last %llu kept",
                 (unsigned long long)hs.dumps, (unsigned long long)hs.dump_triggers,
                 (unsigned long long)hs.dump_failures, (unsigned long long)hs.dumps_kept);
    if (hs.keep_ns)
        pp_reply_printf(r,
                        "<tr><td>History</td><td>CPU samples at %lld Hz, kept for %lld s (LIBPPROF_HISTORY): %.0f s "
                        "kept now in %llu slices, %.1f MiB of %.0f MiB allowed (%llu slices dropped early for "
                        "it); <a href=\"profile?last=60\">the last minute</a>%s%s%s</td></tr>\n",
                        (long long)hs.hz, (long long)(hs.keep_ns / 1000000000), hs.kept_ns / 1e9,
                        (unsigned long long)hs.slices, hs.bytes / 1048576.0, hs.bound / 1048576.0,
                        (unsigned long long)hs.dropped, kinds_note, wall_note, dump_note);
    else
        pp_reply_printf(r, "<tr><td>History</td><td>off: LIBPPROF_HISTORY=SECONDS keeps the last SECONDS of CPU "
                           "samples, for profile?last=N</td></tr>\n");
    static const char *const fetching[] = {
        [PPROF_DEBUGINFOD_OFF] = "off (no server named: LIBPPROF_DEBUGINFOD_URLS)",
        [PPROF_DEBUGINFOD_ON] = "on",
        [PPROF_DEBUGINFOD_OFF_STANDARD] = "off: DEBUGINFOD_URLS is set, LIBPPROF_DEBUGINFOD=1 turns it on",
        [PPROF_DEBUGINFOD_STOPPED] = "stopped (the process exits, or entered a sandbox)",
        [PPROF_DEBUGINFOD_UNAVAILABLE] = "unavailable (built without libcurl's header)"};
    int fi = y.debuginfo_fetching >= 0 && y.debuginfo_fetching <= PPROF_DEBUGINFOD_UNAVAILABLE ? y.debuginfo_fetching : 0;
    pp_reply_printf(r,
                    "<tr><td>Debug files</td><td>fetching from debuginfod %s; %llu fetched, %llu pending, %llu failed; "
                    "cache %.1f %s of %.0f MiB allowed</td></tr>\n",
                    fetching[fi], (unsigned long long)y.debuginfo_fetched, (unsigned long long)y.debuginfo_pending,
                    (unsigned long long)y.debuginfo_failed,
                    y.debuginfo_cache_bytes / (y.debuginfo_cache_bytes < 1048576 ? 1024.0 : 1048576.0),
                    y.debuginfo_cache_bytes < 1048576 ? "KiB" : "MiB", y.debuginfo_cache_budget / 1048576.0);
    pp_reply_printf(r,
                    "<tr><td>Heap sampling</td><td>%lld bytes between samples (0: off); %llu sampled, "
                    "%llu unrecorded; %llu records (%.1f MiB), %llu sampled objects live (%.1f MiB)</td></tr>\n",
                    (long long)h.rate, (unsigned long long)h.sampled, (unsigned long long)h.unrecorded,
                    (unsigned long long)h.records, h.table_bytes / 1048576.0, (unsigned long long)h.live_sampled,
                    h.live_table_bytes / 1048576.0);
    pp_reply_printf(r,
                    "<tr><td>Contention sampling</td><td>mutex: 1 in %lld contended waits (0: off), %llu records; "
                    "block: a wait of %lld ns or more always, shorter ones in proportion (0: off), %llu records; "
                    "%llu events not recorded</td></tr>\n",
                    (long long)w.mutex_fraction, (unsigned long long)w.mutex_records, (long long)w.block_rate,
                    (unsigned long long)w.block_records, (unsigned long long)w.lost);
}

/* The index page: web/index.html with the prefix, one row per endpoint
 * and the profiler's own counters. */
int pp_h_index(pp_req *q)
{
    static const pp_slot slots[] = {
        {"PREFIX", pp_write_prefix}, {"ROWS", write_rows}, {"STATS", write_stats}};
    pp_reply r;
    pp_reply_init(&r, 200);
    pp_reply_header(&r, "Content-Type", "text/html; charset=utf-8");
    pp_write_template(&r, pp_web_index_html, pp_web_index_html_len, slots, sizeof slots / sizeof *slots, q);
    return pp_reply_send(q, &r);
}
