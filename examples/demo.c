/* demo.c: a small service that serves /debug/pprof/ about itself.
 *
 * It runs its own libmicrohttpd daemon (an app page at "/") and mounts the
 * profiling endpoints on it with pprof_mhd_handle, the way a service with
 * an HTTP server of its own would; `--builtin` uses pprof_server_start
 * instead, the way a service without one would. Two worker threads do CPU
 * work in named functions in a fixed ratio, so the first profile a newcomer
 * takes has something to show: compute_checkout_totals gets 3 parts of the
 * CPU for each part rank_search_results gets. Each piece of work runs under
 * profiler labels (endpoint and tenant), as a request handler would, so
 * `go tool pprof -tags` splits the profile by them, and under a span of
 * its own (pprof_trace_enter), as a traced service's would, so its CPU
 * samples carry span_id and span_name.
 *
 * Memory, for the heap profiles: every checkout builds a cart in a
 * short-lived 16-48 KiB buffer (build_cart: much allocated, nothing kept),
 * and every search keeps its results in a cache of 512 entries of 8-24 KiB
 * (cache_search_results: a steady live heap of about 8 MiB).
 *
 * Contention, for the mutex and block profiles (which the demo turns on
 * unless LIBPPROF_MUTEX_FRACTION / LIBPPROF_BLOCK_RATE say otherwise):
 * every checkout reserves inventory under one lock for about a
 * millisecond (reserve_inventory), and a restock job holds the same lock
 * for 5 ms of every 50 (restock_inventory), so checkouts wait for it and
 * for each other: about one checkout in ten waits.
 *
 *   LIBPPROF_ADDR   HOST:PORT, [IPv6]:PORT or :PORT to serve on (default
 *                   127.0.0.1:6060; port 0: one the kernel picks, printed;
 *                   "off": the workload runs without an endpoint)
 *   --addr ADDR     the same, ahead of LIBPPROF_ADDR (which, when
 *                   libpprof is also preloaded, starts its built-in server)
 */
#define _GNU_SOURCE
#include "pprof_mhd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static volatile double sink;

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Spends `ms` of this thread's CPU time in floating-point work. */
__attribute__((noinline)) static void compute_checkout_totals(double ms)
{
    double end = thread_cpu_ms() + ms, x = 1.0;
    while (thread_cpu_ms() < end)
        for (int i = 0; i < 2000; i++)
            x = x * 1.0000001 + 0.5 / (x + i);
    sink += x;
}

__attribute__((noinline)) static void rank_search_results(double ms)
{
    double end = thread_cpu_ms() + ms, x = 2.0;
    while (thread_cpu_ms() < end)
        for (int i = 0; i < 2000; i++)
            x = x / 1.0000003 + 0.25 / (x + i);
    sink += x;
}

/* A cart lives for one request. */
__attribute__((noinline)) static void build_cart(unsigned seed)
{
    size_t n = 16384 + (seed % 32) * 1024;
    char *cart = malloc(n);
    if (!cart)
        return;
    memset(cart, (int)seed, n);
    sink += cart[n / 2];
    free(cart);
}

#define CACHE_SLOTS 512
static char *cache[CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Search results stay in the cache until a later search replaces them. */
__attribute__((noinline)) static void cache_search_results(unsigned seed)
{
    size_t n = 8192 + (seed % 16) * 1024;
    char *r = malloc(n);
    if (!r)
        return;
    memset(r, (int)seed, n);
    pthread_mutex_lock(&cache_lock);
    char *old = cache[seed % CACHE_SLOTS];
    cache[seed % CACHE_SLOTS] = r;
    pthread_mutex_unlock(&cache_lock);
    free(old);
}

/* A request's size varies (5-15 ms of search, three times that of
 * checkout), as real ones do; fixed sizes would also fall into step with
 * the kernel's 4 ms tick and skew the samples. */
static pthread_mutex_t inventory_lock = PTHREAD_MUTEX_INITIALIZER;

/* Holds the inventory lock for about a millisecond, sleeping. */
__attribute__((noinline)) static void reserve_inventory(void)
{
    pthread_mutex_lock(&inventory_lock);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    pthread_mutex_unlock(&inventory_lock);
}

/* The restock job: every 50 ms, 5 ms under the inventory lock. */
__attribute__((noinline)) static void restock_inventory(void)
{
    pthread_mutex_lock(&inventory_lock);
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
    pthread_mutex_unlock(&inventory_lock);
}

static void *restocker(void *arg)
{
    (void)arg;
    while (!stop) {
        restock_inventory();
        usleep(45 * 1000);
    }
    return NULL;
}

/* One piece of a request: its size and its span. */
struct piece {
    double ms;
    pprof_trace_context span;
};

/* Each piece enters its span inside its labels and leaves it before they
 * are restored, so every sample with a span has the labels too. */
static void checkout(void *arg)
{
    struct piece *p = arg;
    const pprof_trace_context *prev = pprof_trace_enter(&p->span);
    compute_checkout_totals(3 * p->ms);
    build_cart((unsigned)(p->ms * 1000));
    reserve_inventory();
    pprof_trace_leave(prev);
}

static void search(void *arg)
{
    struct piece *p = arg;
    const pprof_trace_context *prev = pprof_trace_enter(&p->span);
    rank_search_results(p->ms);
    cache_search_results((unsigned)(p->ms * 7919));
    pprof_trace_leave(prev);
}

/* Label sets are built once and shared: one per (endpoint, tenant). */
static pprof_labels *request_labels[2][2];

static void make_labels(void)
{
    static const char *endpoints[] = {"/checkout", "/search"}, *tenants[] = {"acme", "globex"};
    for (int e = 0; e < 2; e++)
        for (int t = 0; t < 2; t++) {
            pprof_label pairs[] = {{"endpoint", endpoints[e]}, {"tenant", tenants[t]}};
            pprof_labels_new(pairs, 2, &request_labels[e][t]);
        }
}

/* A request's span, as a tracing SDK would start it: new random IDs. */
static void start_span(pprof_trace_context *span, const char *name, unsigned *seed)
{
    for (size_t i = 0; i < sizeof span->trace_id; i++)
        span->trace_id[i] = (uint8_t)rand_r(seed);
    for (size_t i = 0; i < sizeof span->span_id; i++)
        span->span_id[i] = (uint8_t)rand_r(seed);
    span->trace_id[0] |= 1; /* never all zero */
    span->trace_flags = 1;
    span->span_name = name;
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg + 1;
    for (unsigned i = 0; !stop; i++) {
        int tenant = (i % 4 == 0); /* globex sends a quarter of the requests */
        /* Each piece runs under its (endpoint, tenant) labels and under a
         * span of its own (CPU samples carry span_id and span_name). */
        struct piece p = {.ms = 5 + rand_r(&seed) % 1000 / 100.0};
        start_span(&p.span, "POST /checkout", &seed);
        pprof_do(request_labels[0][tenant], checkout, &p);
        start_span(&p.span, "GET /search", &seed);
        pprof_do(request_labels[1][tenant], search, &p);
        usleep(20 * 1000); /* the service is not always busy */
    }
    return NULL;
}

static enum MHD_Result app(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    if (pprof_http_serves(NULL, url))
        return (enum MHD_Result)pprof_mhd_handle(NULL, c, url, method, upload, upload_size, con_cls);
    static const char page[] = "pprof-demo: see /debug/pprof/\n";
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof page - 1, (void *)page,
                                                             MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    enum MHD_Result ok = MHD_queue_response(c, strcmp(url, "/") ? MHD_HTTP_NOT_FOUND : MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)c;
    (void)code;
    pprof_mhd_completed(con_cls);
}

/* Opens the listening socket for "HOST:PORT" or "[IPv6]:PORT" (HOST
 * empty: every address; PORT 0: one the kernel picks). Returns the socket,
 * or -1 with `why` saying what is wrong (a malformed address, a port in
 * use). The demo binds it itself, so the message is the system's. */
static int listen_on(const char *addr, char *why, size_t why_size)
{
    char host[64];
    const char *colon = strrchr(addr, ':'), *port = colon ? colon + 1 : "";
    size_t hlen = colon ? (size_t)(colon - addr) : 0;
    if (hlen >= 2 && addr[0] == '[' && addr[hlen - 1] == ']') {
        addr++;
        hlen -= 2;
    }
    char *end;
    long p = strtol(port, &end, 10);
    if (!colon || hlen >= sizeof host || !*port || *end || port[0] == '-' || port[0] == '+' || p > 65535) {
        snprintf(why, why_size, "malformed address (want HOST:PORT, [IPv6]:PORT or :PORT, with PORT 0-65535)");
        return -1;
    }
    memcpy(host, addr, hlen);
    host[hlen] = 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *ai;
    int rc = getaddrinfo(hlen ? host : NULL, port, &hints, &ai);
    if (rc) {
        snprintf(why, why_size, "%s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
        snprintf(why, why_size, "%s", strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* The address a listening socket ended up on, as HOST:PORT. */
static void bound_address(int fd, char *out, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
        port = ntohs(s6->sin6_port);
        snprintf(out, size, "[%s]:%d", host, port);
        return;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
    snprintf(out, size, "%s:%d", host, ntohs(s4->sin_port));
}

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv)
{
    const char *addr = getenv("LIBPPROF_ADDR");
    int builtin = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "--builtin"))
            builtin = 1;
        else if (!strcmp(argv[i], "--addr") && i + 1 < argc)
            addr = argv[++i];
        else
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: pprof-demo [--builtin] [--addr HOST:PORT]   (or LIBPPROF_ADDR=HOST:PORT; default "
                        "127.0.0.1:6060; off: no endpoint)\n");
        return 2;
    }
    if (!addr || !*addr)
        addr = "127.0.0.1:6060";
    int serve = strcmp(addr, "off") != 0;
    int fd = -1;
    char why[160], where[80] = "";
    if (serve && !builtin && (fd = listen_on(addr, why, sizeof why)) < 0) {
        fprintf(stderr, "pprof-demo: cannot serve on %s: %s\n", addr, why);
        return 1;
    }
    signal(SIGINT, on_term);
    signal(SIGTERM, on_term);
    /* Contention profiles are off by default; the demo shows them. */
    if (!getenv("LIBPPROF_MUTEX_FRACTION"))
        pprof_mutex_set_fraction(1);
    if (!getenv("LIBPPROF_BLOCK_RATE"))
        pprof_block_set_rate(100000); /* waits of 100 us and more are all kept */

    make_labels();
    pthread_t t[3];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    pthread_create(&t[2], NULL, restocker, NULL);

    struct MHD_Daemon *d = NULL;
    if (serve && builtin) {
        pprof_server_config cfg = {.addr = addr};
        int rc = pprof_server_start(&cfg);
        if (rc) {
            fprintf(stderr, "pprof-demo: %s: %s\n", addr, pprof_last_error()); /* "cannot serve on that address: ..." */
            stop = 1;
        } else {
            const char *colon = strrchr(addr, ':');
            snprintf(where, sizeof where, "%.*s:%d", colon == addr ? 7 : (int)(colon - addr),
                     colon == addr ? "0.0.0.0" : addr, pprof_server_port());
        }
    } else if (serve) {
        bound_address(fd, where, sizeof where);
        d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
                             0, NULL, NULL, app, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
                             MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                             /* bounds for a service: idle connections close, and few at once
                              * (a connection waiting for a long profile is suspended, not idle) */
                             MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64, MHD_OPTION_END);
        if (!d) {
            fprintf(stderr, "pprof-demo: cannot serve on %s: libmicrohttpd did not start\n", addr);
            stop = 1;
        }
    }
    if (stop) {
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);
        return 1;
    }
    if (serve)
        printf("pprof-demo: serving on http://%s/debug/pprof/ (try: go tool pprof "
               "'http://%s/debug/pprof/profile?seconds=10')\n", where, where);
    else
        printf("pprof-demo: running without an endpoint (LIBPPROF_ADDR=off)\n");
    fflush(stdout);
    while (!stop)
        pause();
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    if (d) {
        MHD_quiesce_daemon(d);
        pprof_mhd_release(d); /* profiles still running end here */
        MHD_stop_daemon(d);
    }
    else
        pprof_server_stop();
    return 0;
}
