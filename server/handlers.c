/* handlers.c: the endpoints under the /debug/pprof/ prefix, one small
 * function each, built on the public recorder API of pprof.h only.
 *
 * The table at the end is the single list of endpoints: routing (route.c)
 * looks names up in it, the index page (index.c) lists the entries that
 * have an href, the flame-graph page the profiles, and a hub merges its
 * members' answers for the entries flagged PP_EP_MERGE (the tree).
 * A new profile is one function and one table row.
 *
 * Every function here answers through pp_reply_send/pp_reply_error before
 * returning, or hands the request to the scheduler (serve.c, sched.h).
 */
#include "auth.h"
#include "base/base.h"
#include "endpoints.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- profile */

/* profile?last=N, or from=T&until=T (wall, allocs, mutex, block too):
 * the history's slices of that kind over that span
 * (pprof_history_recorder_new), at once; min_span_ms=N keeps the samples
 * of spans that lasted N ms or more. */
const char *const pp_history_endpoints[PP_HISTORY_KINDS] = {"profile", "wall", "allocs", "mutex", "block"};

int pp_serve_past(pp_req *q, pprof_history_kind kind)
{
    static const char *const names[] = {"CPU", "wall", "heap", "mutex", "block"};
    char file[64];
    snprintf(file, sizeof file, "attachment; filename=\"%s\"", pp_history_endpoints[kind]);
    if (q->q.has_debug && q->q.debug != 0)
        return pp_reply_error(q, 400, "last, from and until give a profile: no debug format");
    int64_t now = pp_now_ns(CLOCK_REALTIME);
    if (q->q.from * 1000000000ll > now)
        return pp_reply_error(q, 400, "from is in the future");
    int64_t from = q->q.last ? now - q->q.last * 1000000000ll : q->q.from * 1000000000ll;
    pprof_history_config hc = {.from_unix_ns = from > 0 ? from : 0, /* before the epoch: all that is kept */
                               .until_unix_ns = q->q.until * 1000000000ll,
                               .min_span_ns = q->q.min_span_ms * 1000000ll,
                               .kind = kind};
    pprof_recorder *rec = NULL;
    int rc = pprof_history_recorder_new(&hc, &rec);
    if (rc != 0)
        return pp_reply_error(q, rc == PPROF_ENOTSUP ? 404 : 400, "%s", pp_why(rc));
    return pp_serve_recorder(q, rec, PPROF_FORMAT_PROTO_GZIP, names[kind], file, NULL);
}

/* profile?seconds=N: a CPU profile of the next N seconds (default 30),
 * joining the sampling rate in force. Answered from the scheduler. */
static int h_profile(pp_req *q)
{
    if (q->q.has_debug && q->q.debug != 0)
        return pp_reply_error(q, 400, "seconds and debug params are incompatible");
    if (q->q.has_past)
        return pp_serve_past(q, PPROF_HISTORY_CPU);
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

/* The flags of a profile's endpoint. */
#define PROFILE (PP_EP_QUERY | PP_EP_PROFILE | PP_EP_MERGE)

/* In index order (by name, as Go's). The index page itself ("") and the
 * endpoints without an href are not listed. */
static const pp_endpoint endpoints[] = {
    {"", NULL, NULL, 0, pp_h_index},
    {"allocs", "allocs?debug=1",
     "A sampling of all past memory allocations (C malloc family and C++ new), with labels",
     PROFILE | PP_EP_PAST, pp_h_allocs},
    {"block", "block?debug=1",
     "Stack traces that led to blocking on pthread mutexes, rwlocks, condition variables, semaphores and joins "
     "(LIBPPROF_BLOCK_RATE)",
     PROFILE | PP_EP_PAST, pp_h_block},
    {"cmdline", "cmdline", "The command line invocation of the current program", 0, h_cmdline},
    {"delta_block", "delta_block", "The block profile's change since the previous request of it (one state per "
     "process, as godeltaprof's)", PROFILE, pp_h_delta_block},
    {"delta_heap", "delta_heap", "The heap profile's allocations since the previous request of it, and the live "
     "heap now", PROFILE, pp_h_delta_heap},
    {"delta_mutex", "delta_mutex", "The mutex profile's change since the previous request of it",
     PROFILE, pp_h_delta_mutex},
    {"fgprof", "fgprof?seconds=30",
     "The wall-clock profile in fgprof's form (samples and time; format=pprof or folded), for the fgprof scrape "
     "jobs of Grafana Alloy and Pyroscope",
     PP_EP_PROFILE | PP_EP_MERGE, pp_h_fgprof},
    {"goroutine", "goroutine?debug=1",
     "Stack traces of all current threads (goroutine for Go tools). Use debug=2 as a query parameter "
     "to dump each thread with its id, name and state (<a href=\"goroutine?debug=2\">full thread dump</a>). "
     "Threads waiting in the kernel are read without a signal, so their system calls are not interrupted.",
     PROFILE, pp_h_goroutine},
    {"heap", "heap?debug=1",
     "A sampling of memory allocations of live objects (C malloc family and C++ new), with labels",
     PROFILE, pp_h_heap},
    {"memory", "memory",
     "The whole resident set (Rss) by what holds it: live heap objects under their allocation stacks, memory the "
     "allocator holds free, the program's own mmap regions under their stacks, thread stacks, mapped files, shared "
     "memory, libpprof, and what none of them claims. seconds=N adds the change over N seconds.",
     PROFILE, pp_h_memory},
    {"mutex", "mutex?debug=1",
     "Stack traces of waiters for contended pthread mutexes and rwlocks (the delay is charged to the waiter, "
     "not to the holder as in Go; LIBPPROF_MUTEX_FRACTION)",
     PROFILE | PP_EP_PAST, pp_h_mutex},
    {"profile", "profile?seconds=30",
     "CPU profile. You can specify the duration in the seconds GET parameter. After you get the "
     "profile file, use the go tool pprof command to investigate the profile.",
     PROFILE | PP_EP_PAST, h_profile},
    {"symbol", "symbol",
     "Maps program counters to function names: POST or GET addresses joined by +", PP_EP_POST,
     h_symbol},
    {"threadcreate", "threadcreate?debug=1", "Stack traces that led to the creation of the live threads",
     PROFILE, pp_h_threadcreate},
    {"threads", "threads?debug=1", "The same as goroutine, by the name C programs know", PP_EP_QUERY | PP_EP_PROFILE | PP_EP_MERGE,
     pp_h_goroutine},
    {"trace", "trace", "Execution trace: not supported by libpprof (answers 501)", 0, h_trace},
    {"ui", NULL, NULL, 0, pp_h_ui},
    {"wall", "wall?seconds=30",
     "Wall-clock profile: every thread, running or waiting, sampled 99 times a second (hz=), with the label "
     "thread_state (running, runnable, or the system call it waits in); state=off-cpu keeps only the waits. Waiting "
     "threads are read without a signal.",
     PROFILE | PP_EP_PAST, pp_h_wall},
};
static const size_t nendpoints = sizeof endpoints / sizeof endpoints[0];

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

const pp_endpoint *pp_endpoints(size_t *n)
{
    *n = nendpoints;
    return endpoints;
}

int pp_endpoint_merges(const char *name)
{
    const pp_endpoint *ep = pp_endpoint_find(name);
    return ep ? (ep->flags & PP_EP_MERGE) != 0 : !pp_name_reserved(name);
}

const pp_endpoint *pp_endpoint_find(const char *name)
{
    static const pp_endpoint custom = {"", NULL, NULL, PP_EP_QUERY | PP_EP_MERGE, pp_h_custom};
    for (size_t i = 0; i < nendpoints; i++)
        if (strcmp(endpoints[i].name, name) == 0)
            return &endpoints[i];
    return pprof_custom_find(name) ? &custom : NULL;
}
