/* handlers.c: the endpoints under the /debug/pprof/ prefix, one small
 * function each, built on the public recorder API of pprof.h only.
 *
 * The table at the end is the single list of endpoints: routing in http.c
 * looks names up in it and the index page lists the entries that have an
 * href. A new profile is one function and one table row.
 *
 * Every function here answers through pp_reply_send/pp_reply_error before
 * returning, or hands the request to the scheduler with pp_call_defer.
 */
#define _GNU_SOURCE /* memmem */
#include "auth.h"
#include "heads.h"
#include "http_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* web/index.html, embedded at build time by web/embed.cmake. */
__attribute__((visibility("hidden"))) extern const unsigned char pp_web_index_html[];
__attribute__((visibility("hidden"))) extern const size_t pp_web_index_html_len;

static int h_index(pp_req *q);

/* ------------------------------------------------------------- profile */

void pp_write_profile(pp_reply *r, pprof_profile *p, const pp_output *o, pprof_format fmt, const char *what,
                      const char *disposition)
{
    if (o->format == PP_OUT_PROTO)
        fmt = PPROF_FORMAT_PROTO;
    else if (o->format == PP_OUT_FOLDED)
        fmt = PPROF_FORMAT_FOLDED;
    int rc;
    if (o->format == PP_OUT_FOLDED) {
        pprof_folded_config fc = {o->sample_index, o->labels};
        rc = pprof_profile_write_folded(p, &fc, pp_reply_writer(r));
    } else {
        rc = pprof_profile_write(p, fmt, pp_reply_writer(r));
    }
    pprof_profile_free(p);
    if (rc != 0 && !r->failed) {
        pprof_buffer_free(&r->resp.body);
        if (rc == PPROF_ENOTFOUND) /* sample_index */
            pp_reply_set_error(r, 400, "invalid value for \"sample_index\" - %s", pp_why(rc));
        else
            pp_reply_set_error(r, 500, "Could not write the %s profile: %s", what, pp_why(rc));
        return;
    }
    if (fmt == PPROF_FORMAT_PROTO_GZIP || fmt == PPROF_FORMAT_PROTO) {
        pp_reply_header(r, "Content-Type", "application/octet-stream");
        pp_reply_header(r, "Content-Disposition", disposition);
    } else {
        pp_reply_header(r, "Content-Type", "text/plain; charset=utf-8");
    }
}

/* Ends a window: stop, then the profile as the request asked (gzipped
 * protobuf by default). `arg` is the Content-Disposition value. Runs on
 * the scheduler thread. */
static void finish_window(pprof_recorder *rec, const void *arg, const pp_output *o, pp_reply *out)
{
    pprof_profile *p = NULL;
    int rc = pprof_recorder_stop(rec, &p);
    if (rc != 0) {
        pp_reply_set_error(out, 500, "Could not stop profiling: %s", pp_why(rc));
        return;
    }
    pp_write_profile(out, p, o, PPROF_FORMAT_PROTO_GZIP, "requested", (const char *)arg);
}

int pp_serve_window(pp_req *q, pprof_recorder *rec, int seconds, const char *what, const char *disposition)
{
    if (seconds > q->cfg.max_seconds)
        seconds = q->cfg.max_seconds;
    if (pp_call_reserve(q) != 0) {
        pprof_recorder_free(rec);
        pp_auth_refused(503, NULL);
        return pp_reply_error(q, 503, "too many profile requests at once (limit %d); try again later",
                              q->cfg.max_concurrent);
    }
    pprof_recorder_set_symbolize(rec, q->q.symbolize);
    int rc = pprof_recorder_start(rec);
    if (rc != 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", pp_why(rc)); /* before free can touch it */
        pprof_recorder_free(rec);
        pp_call_unreserve();
        return pp_reply_error(q, 500, "Could not enable %s profiling: %s", what, why);
    }
    rc = pp_call_defer(q, rec, seconds, finish_window, disposition);
    if (rc != 0) {
        pprof_recorder_free(rec);
        return pp_reply_error(q, 500, "Could not schedule the profile: %s", pp_why(rc));
    }
    return 0;
}

int pp_send_profile(pp_req *q, pprof_profile *p, pprof_format fmt, const char *what, const char *disposition)
{
    pp_reply r;
    pp_reply_init(&r, 200);
    pp_write_profile(&r, p, &q->q.out, fmt, what, disposition);
    return pp_reply_send(q, &r);
}

int pp_serve_recorder(pp_req *q, pprof_recorder *rec, pprof_format fmt, const char *what, const char *disposition,
                      const char *delta_disposition)
{
    if (q->q.has_seconds)
        return pp_serve_window(q, rec, q->q.seconds, what, delta_disposition);
    pprof_profile *p = NULL;
    pprof_recorder_set_symbolize(rec, q->q.symbolize);
    int rc = pprof_recorder_write_to(rec, &p);
    pprof_recorder_free(rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not write the %s profile: %s", what, pp_why(rc));
    return pp_send_profile(q, p, fmt, what, disposition);
}

static pthread_mutex_t delta_lock = PTHREAD_MUTEX_INITIALIZER;
static pprof_recorder **delta_changing; /* the state being served, while delta_lock is held */
static pthread_once_t delta_once = PTHREAD_ONCE_INIT;

/* A forked child (a member of the tree) answers delta requests of its own,
 * but a parent thread may have held delta_lock at the fork: the lock
 * starts over, and the state that thread was changing may be half-done,
 * so that one begins afresh in the child (the parent's copy is left as
 * it is). */
static void delta_after_fork_child(void)
{
    if (delta_changing)
        *delta_changing = NULL;
    delta_changing = NULL;
    pthread_mutex_init(&delta_lock, NULL);
}

static void delta_init(void)
{
    pthread_atfork(NULL, NULL, delta_after_fork_child);
}

int pp_serve_delta(pp_req *q, pprof_recorder **state, int (*make)(pprof_recorder **out), const char *what,
                   const char *disposition)
{
    pthread_once(&delta_once, delta_init);
    pthread_mutex_lock(&delta_lock);
    delta_changing = state;
    int rc = 0;
    if (!*state) {
        rc = make(state);
        if (rc == 0 && (rc = pprof_recorder_start(*state)) != 0) {
            pprof_recorder_free(*state);
            *state = NULL;
        }
    }
    pprof_profile *p = NULL;
    if (rc == 0)
        pprof_recorder_set_symbolize(*state, q->q.symbolize);
    if (rc == 0)
        rc = pprof_recorder_snapshot(*state, &p);
    char why[256];
    if (rc != 0)
        snprintf(why, sizeof why, "%s", pp_why(rc)); /* before the lock goes */
    delta_changing = NULL;
    pthread_mutex_unlock(&delta_lock);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not write the %s profile: %s", what, why);
    return pp_send_profile(q, p, PPROF_FORMAT_PROTO_GZIP, what, disposition);
}

/* profile?seconds=N: a CPU profile of the next N seconds (default 30),
 * joining the sampling rate in force. Answered from the scheduler. */
static int h_profile(pp_req *q)
{
    if (q->q.has_debug && q->q.debug != 0)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    pprof_recorder *rec = NULL;
    pprof_cpu_config cc = {0}; /* hz 0: join the rate in force */
    int rc = pprof_cpu_recorder_new(&cc, &rec);
    if (rc != 0)
        return pp_reply_error(q, 500, "Could not enable CPU profiling: %s", pp_why(rc));
    return pp_serve_window(q, rec, q->q.has_seconds ? q->q.seconds : PP_DEFAULT_SECONDS, "CPU",
                           "attachment; filename=\"profile\"");
}

/* ------------------------------------------------------------- cmdline */

/* argv joined by NUL bytes, without the final NUL. */
static int h_cmdline(pp_req *q)
{
    pp_access a;
    pp_access_resolve(&q->cfg, &a);
    if (a.no_cmdline)
        return pp_reply_error(q, 403, "cmdline is turned off here (LIBPPROF_CMDLINE=off)");
    pp_reply r;
    pp_reply_init(&r, 200);
    pp_reply_header(&r, "Content-Type", "text/plain; charset=utf-8");
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pp_reply_error(q, 500, "cannot read /proc/self/cmdline: %s", strerror(errno));
    char buf[4096];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            pprof_buffer_free(&r.resp.body);
            return pp_reply_error(q, 500, "cannot read /proc/self/cmdline: %s", strerror(e));
        }
        if (n == 0)
            break;
        pp_reply_write(&r, buf, (size_t)n);
    }
    close(fd);
    if (r.resp.body.len > 0 && r.resp.body.data[r.resp.body.len - 1] == '\0')
        r.resp.body.len--;
    return pp_reply_send(q, &r);
}

/* -------------------------------------------------------------- symbol */

/* Parses one token as strtoull with base 0 would, but the whole token must
 * be the number (no sign, no spaces). Returns 0 for anything else. */
static uint64_t parse_address(const char *s, size_t n)
{
    char tok[64];
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) /* a body typed by hand */
        n--;
    if (n == 0 || n >= sizeof tok || s[0] < '0' || s[0] > '9')
        return 0;
    memcpy(tok, s, n);
    tok[n] = '\0';
    char *end;
    errno = 0;
    unsigned long long v = strtoull(tok, &end, 0);
    if (errno != 0 || *end != '\0')
        return 0;
    return v;
}

/* Go's symbol endpoint: addresses separated by '+' in the POST body or the
 * raw GET query; one "0x<addr> <name>" line per address that resolves. */
static int h_symbol(pp_req *q)
{
    const pprof_http_request *req = q->req;
    const char *in;
    size_t len;
    if (strcmp(req->method, "POST") == 0) {
        in = req->body ? req->body : "";
        len = req->body ? req->body_len : 0;
    } else {
        in = req->query ? req->query : "";
        len = strlen(in);
    }
    pp_reply r;
    pp_reply_init(&r, 200);
    pp_reply_header(&r, "Content-Type", "text/plain; charset=utf-8");
    /* pprof only asks whether this is 0 (no symbols) or not. */
    pp_reply_printf(&r, "num_symbols: 1\n");
    char name[4096];
    const char *s = in, *end = in + len;
    while (s < end) {
        const char *plus = memchr(s, '+', (size_t)(end - s));
        size_t n = plus ? (size_t)(plus - s) : (size_t)(end - s);
        uint64_t addr = parse_address(s, n);
        if (addr != 0 && pprof_symbol_name(addr, name, sizeof name) == 0)
            pp_reply_printf(&r, "0x%" PRIx64 " %s\n", addr, name);
        s += n + (plus ? 1 : 0);
    }
    return pp_reply_send(q, &r);
}

/* --------------------------------------------------------------- trace */

static int h_trace(pp_req *q)
{
    return pp_reply_error(q, 501, "execution traces are not supported by libpprof");
}

/* --------------------------------------------------------------- table */

/* In index order (by name, as Go's). The index page itself ("") and the
 * endpoints without an href are not listed. */
static const pp_endpoint endpoints[] = {
    {"", NULL, NULL, 0, h_index},
    {"allocs", "allocs?debug=1",
     "A sampling of all past memory allocations (C malloc family and C++ new), with labels",
     PP_EP_QUERY | PP_EP_PROFILE, pp_h_allocs},
    {"block", "block?debug=1",
     "Stack traces that led to blocking on pthread mutexes, rwlocks, condition variables, semaphores and joins "
     "(LIBPPROF_BLOCK_RATE)",
     PP_EP_QUERY | PP_EP_PROFILE, pp_h_block},
    {"cmdline", "cmdline", "The command line invocation of the current program", 0, h_cmdline},
    {"delta_block", "delta_block", "The block profile's change since the previous request of it (one state per "
     "process, as godeltaprof's)", PP_EP_QUERY | PP_EP_PROFILE, pp_h_delta_block},
    {"delta_heap", "delta_heap", "The heap profile's allocations since the previous request of it, and the live "
     "heap now", PP_EP_QUERY | PP_EP_PROFILE, pp_h_delta_heap},
    {"delta_mutex", "delta_mutex", "The mutex profile's change since the previous request of it",
     PP_EP_QUERY | PP_EP_PROFILE, pp_h_delta_mutex},
    {"goroutine", "goroutine?debug=1",
     "Stack traces of all current threads (goroutine for Go tools). Use debug=2 as a query parameter "
     "to dump each thread with its id, name and state (<a href=\"goroutine?debug=2\">full thread dump</a>). "
     "Threads waiting in the kernel are read without a signal, so their system calls are not interrupted.",
     PP_EP_QUERY | PP_EP_PROFILE, pp_h_goroutine},
    {"heap", "heap?debug=1",
     "A sampling of memory allocations of live objects (C malloc family and C++ new), with labels",
     PP_EP_QUERY | PP_EP_PROFILE, pp_h_heap},
    {"mutex", "mutex?debug=1",
     "Stack traces of waiters for contended pthread mutexes and rwlocks (the delay is charged to the waiter, "
     "not to the holder as in Go; LIBPPROF_MUTEX_FRACTION)",
     PP_EP_QUERY | PP_EP_PROFILE, pp_h_mutex},
    {"profile", "profile?seconds=30",
     "CPU profile. You can specify the duration in the seconds GET parameter. After you get the "
     "profile file, use the go tool pprof command to investigate the profile.",
     PP_EP_QUERY | PP_EP_PROFILE, h_profile},
    {"symbol", "symbol",
     "Maps program counters to function names: POST or GET addresses joined by +", PP_EP_POST,
     h_symbol},
    {"threadcreate", "threadcreate?debug=1", "Stack traces that led to the creation of the live threads",
     PP_EP_QUERY | PP_EP_PROFILE, pp_h_threadcreate},
    {"threads", "threads?debug=1", "The same as goroutine, by the name C programs know", PP_EP_QUERY | PP_EP_PROFILE,
     pp_h_goroutine},
    {"trace", "trace", "Execution trace: not supported by libpprof (answers 501)", 0, h_trace},
    {"ui", NULL, NULL, 0, pp_h_ui},
};
static const size_t nendpoints = sizeof endpoints / sizeof endpoints[0];

/* --------------------------------------------------------------- index */

void pp_write_html_escaped(pp_reply *r, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': pp_reply_printf(r, "&amp;"); break;
        case '<': pp_reply_printf(r, "&lt;"); break;
        case '>': pp_reply_printf(r, "&gt;"); break;
        case '"': pp_reply_printf(r, "&quot;"); break;
        case '\'': pp_reply_printf(r, "&#39;"); break;
        default: pp_reply_write(r, s, 1);
        }
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
        DIR *d = opendir("/proc/self/task");
        for (struct dirent *e; d && (e = readdir(d));)
            n += e->d_name[0] != '.';
        if (d)
            closedir(d);
        return n;
    }
    return -1;
}

static void write_rows(pp_reply *r, const pp_req *q)
{
    (void)q;
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
    if (c.handler_reclaimed)
        pp_reply_printf(r,
                        "<tr><td>Profiling signal</td><td>another handler replaced libpprof's %llu times; "
                        "it was put back each time, and the other one gets the signals that are not "
                        "libpprof's (see LIBPPROF_SIGNAL to use another signal)</td></tr>\n",
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
    pp_tree_write_index(r);
    pp_refusals f;
    pp_refusals_get(&f);
    pp_reply_printf(r,
                    "<tr><td>Refused requests</td><td>%llu without credentials (401), %llu with a wrong token "
                    "(403), %llu over a limit (503)</td></tr>\n",
                    (unsigned long long)f.unauthenticated, (unsigned long long)f.forbidden,
                    (unsigned long long)f.busy);
    pp_heads_stats hs;
    pp_heads_stats_get(&hs);
    int live, cap;
    pp_server_connections(&live, &cap);
    if (cap) /* the built-in server's */
        pp_reply_printf(r,
                        "<tr><td>Connections</td><td>%d being answered of %d allowed; %d waiting for their "
                        "request head of %d allowed; closed: %llu without a whole head within %d s, %llu "
                        "to make room, %llu with a head over %d bytes (431)</td></tr>\n",
                        live, cap, hs.held, hs.cap, (unsigned long long)hs.timed_out, PP_HEAD_SECONDS,
                        (unsigned long long)hs.displaced, (unsigned long long)hs.too_large, PP_HEAD_MAX);
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

void pp_write_template(pp_reply *r, const unsigned char *text, size_t len, const pp_slot *slots, size_t nslots,
                       const pp_req *q)
{
    const char *t = (const char *)text, *end = t + len;
    while (t < end) {
        const char *open = memmem(t, (size_t)(end - t), "{{", 2);
        if (!open) {
            pp_reply_write(r, t, (size_t)(end - t));
            break;
        }
        pp_reply_write(r, t, (size_t)(open - t));
        size_t rest = (size_t)(end - open), i = 0, n = 0;
        for (; i < nslots; i++) {
            n = strlen(slots[i].name);
            if (rest >= n + 4 && memcmp(open + 2, slots[i].name, n) == 0 && memcmp(open + 2 + n, "}}", 2) == 0)
                break;
        }
        if (i < nslots) {
            slots[i].write(r, q);
            t = open + n + 4;
        } else {
            pp_reply_write(r, open, 2);
            t = open + 2;
        }
    }
}

void pp_write_prefix(pp_reply *r, const pp_req *q)
{
    pp_write_html_escaped(r, q->cfg.prefix);
}

/* The index page: web/index.html with the prefix, one row per endpoint
 * and the profiler's own counters. */
static int h_index(pp_req *q)
{
    static const pp_slot slots[] = {
        {"PREFIX", pp_write_prefix}, {"ROWS", write_rows}, {"STATS", write_stats}};
    pp_reply r;
    pp_reply_init(&r, 200);
    pp_reply_header(&r, "Content-Type", "text/html; charset=utf-8");
    pp_write_template(&r, pp_web_index_html, pp_web_index_html_len, slots, sizeof slots / sizeof *slots, q);
    return pp_reply_send(q, &r);
}

/* Custom profiles are served under the same prefix: they may not take an
 * endpoint's name, nor "symbolz" (served at the root when the prefix has
 * no /debug/pprof/). */
__attribute__((constructor(101))) static void reserve_names(void)
{
    static const char *names[sizeof endpoints / sizeof endpoints[0] + 1];
    for (size_t i = 0; i < nendpoints; i++)
        names[i] = endpoints[i].name;
    names[nendpoints] = "symbolz";
    pp_names_reserve(names, nendpoints + 1);
}

int pp_profile_names(const char *name, void (*each)(const char *name, void *arg), void *arg)
{
    int found = 0;
    for (size_t i = 0; i < nendpoints; i++)
        if (endpoints[i].flags & PP_EP_PROFILE) {
            found |= name && !strcmp(endpoints[i].name, name);
            if (each)
                each(endpoints[i].name, arg);
        }
    pprof_custom *c[64];
    size_t n = pprof_custom_list(c, 64);
    for (size_t i = 0; i < n; i++) {
        found |= name && !strcmp(pprof_custom_name(c[i]), name);
        if (each)
            each(pprof_custom_name(c[i]), arg);
    }
    return found || (name && pprof_custom_find(name));
}

const pp_endpoint *pp_endpoint_find(const char *name)
{
    static const pp_endpoint custom = {"", NULL, NULL, PP_EP_QUERY, pp_h_custom};
    for (size_t i = 0; i < nendpoints; i++)
        if (strcmp(endpoints[i].name, name) == 0)
            return &endpoints[i];
    return pprof_custom_find(name) ? &custom : NULL;
}
