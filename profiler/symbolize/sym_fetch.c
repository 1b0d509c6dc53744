/* sym_fetch.c: fetching debug files by build ID from debuginfod servers,
 * on the profiler's own thread.
 *
 * When the symbolizer finds no debug file for an object on the machine
 * (sym_debuginfo.c), it asks for one here and goes on without: the fetch
 * thread ("pprof-debuginfo") downloads <url>/buildid/<hex>/debuginfo
 * from each server in turn into the cache (sym_store.c), and a file that
 * arrives bumps a generation that makes the next session build its Dwfl
 * again, so the object gets its names. A profile waits for files being
 * fetched at most LIBPPROF_DEBUGINFOD_WAIT_MS (pp_sym_fetch_wait), and
 * says which are still pending; one download takes at most
 * LIBPPROF_DEBUGINFOD_TIMEOUT seconds.
 *
 * Fetching is on only when asked for: LIBPPROF_DEBUGINFOD_URLS (its own
 * servers), or LIBPPROF_DEBUGINFOD=1 with the standard DEBUGINFOD_URLS.
 * DEBUGINFOD_URLS alone, which some systems set for every process, does
 * not make a service reach the network; profiles then say how to.
 *
 * HTTP is libcurl's (HTTPS, proxies, redirects), loaded with dlopen on
 * the first fetch (libcurl-gnutls.so.4, as elfutils' own client uses, or
 * libcurl.so.4). elfutils' client library is not used: it reads its
 * servers and cache only from the environment, which a library inside a
 * running program must not change, and bounds its cache by age only.
 * curl never raises a signal (CURLOPT_NOSIGNAL), and its sockets are the
 * profiler's (base/fds.h). A process that enters a sandbox or exits stops
 * the thread first (a shutdown hook), and a forked child starts it again
 * when it needs it.
 */
#define _GNU_SOURCE
#include "sym_internal.h"

#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#ifdef PP_HAVE_CURL
#include <curl/curl.h>
#endif

#define MAX_FILES 128
#define RETRY_MISSING_S 3600  /* no server had it: asked again an hour later */
#define RETRY_ERROR_S 60      /* a server could not be reached */

enum { WANTED = 1, RUNNING, DONE, FAILED };

typedef struct fetch {
    char hex[PP_SYM_HEX_MAX];
    char path[200];         /* the object's, for notes */
    int state;
    int64_t retry_ns;       /* FAILED: may be asked again from then */
    char why[160];
} fetch;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake, done; /* on CLOCK_MONOTONIC */
static fetch table[MAX_FILES];
static int nfetch;
static bool running, stopping;
static uint64_t n_fetched, n_failed;
static atomic_uint generation;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char urls[2048];
static int mode; /* PPROF_DEBUGINFOD_* */
static int wait_ms, timeout_s;

static void at_fork_child(void)
{
    mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    pp_cond_init_monotonic(&wake);
    pp_cond_init_monotonic(&done);
    running = false; /* the thread stayed in the parent */
    for (int i = 0; i < nfetch; i++)
        if (table[i].state == RUNNING)
            table[i].state = WANTED;
}

static void stop(void);

/* Whether text is a list of http:// or https:// addresses. */
static int urls_ok(const char *text)
{
    int n = 0;
    for (const char *u = text + strspn(text, " \t"); *u; u += strspn(u, " \t"), n++) {
        size_t len = strcspn(u, " \t");
        if (!((len > 7 && strncmp(u, "http://", 7) == 0) || (len > 8 && strncmp(u, "https://", 8) == 0)))
            return 0;
        u += len;
    }
    return n > 0 && strlen(text) < sizeof urls;
}

static void fetch_init(void)
{
    at_fork_child(); /* makes the conditions */
    const char *own = pp_env_text("LIBPPROF_DEBUGINFOD_URLS", urls_ok,
                                  "http:// or https:// addresses, separated by spaces", "no fetching"),
               *std = getenv("DEBUGINFOD_URLS");
    if (std && !urls_ok(std))
        std = NULL;
    int on = pp_env_int("LIBPPROF_DEBUGINFOD", -1, 0, 1);
    const char *use = own ? own : on == 1 ? std : NULL;
    mode = on == 0 ? PPROF_DEBUGINFOD_OFF
           : use   ? PPROF_DEBUGINFOD_ON
           : std   ? PPROF_DEBUGINFOD_OFF_STANDARD
                   : PPROF_DEBUGINFOD_OFF;
    if (mode == PPROF_DEBUGINFOD_ON)
        snprintf(urls, sizeof urls, "%s", use);
#ifndef PP_HAVE_CURL
    if (mode == PPROF_DEBUGINFOD_ON)
        mode = PPROF_DEBUGINFOD_UNAVAILABLE;
#endif
    wait_ms = pp_env_int("LIBPPROF_DEBUGINFOD_WAIT_MS", 3000, 0, 600000);
    timeout_s = pp_env_int("LIBPPROF_DEBUGINFOD_TIMEOUT", 90, 1, 86400);
    pp_atfork(NULL, NULL, at_fork_child);
    pp_shutdown_hook_add(stop);
}

int pp_sym_fetch_mode(void)
{
    pthread_once(&once, fetch_init);
    pthread_mutex_lock(&mu);
    int m = mode;
    pthread_mutex_unlock(&mu);
    return m;
}

unsigned pp_sym_fetch_generation(void)
{
    return atomic_load(&generation);
}

/* The entry for hex, or NULL (mu held). */
static fetch *find_locked(const char *hex)
{
    for (int i = 0; i < nfetch; i++)
        if (strcmp(table[i].hex, hex) == 0)
            return &table[i];
    return NULL;
}

#ifdef PP_HAVE_CURL
/* ------------------------------------------------------------ libcurl */

static struct {
    CURL *(*init)(void);
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
    void (*cleanup)(CURL *);
    const char *(*strerror)(CURLcode);
    CURLcode (*global_init)(long);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add)(CURLM *, CURL *);
    CURLMcode (*multi_remove)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
} curl;
static CURLM *transfer; /* under mu: the transfer in flight, which stop wakes */

static bool curl_load(void)
{
    static int loaded; /* the fetch thread's */
    if (loaded)
        return loaded > 0;
    static const char *const names[] = {"libcurl-gnutls.so.4", "libcurl.so.4"};
    void *h = NULL;
    for (int pass = 0; pass < 2 && !h; pass++) /* one the program loaded already, first */
        for (size_t i = 0; i < 2 && !h; i++)
            if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | (pass == 0 ? RTLD_NOLOAD : 0))) && pass == 1)
                pp_own_object_add(names[i]);
    if (h) {
        *(void **)&curl.init = dlsym(h, "curl_easy_init");
        *(void **)&curl.setopt = dlsym(h, "curl_easy_setopt");
        *(void **)&curl.getinfo = dlsym(h, "curl_easy_getinfo");
        *(void **)&curl.cleanup = dlsym(h, "curl_easy_cleanup");
        *(void **)&curl.strerror = dlsym(h, "curl_easy_strerror");
        *(void **)&curl.global_init = dlsym(h, "curl_global_init");
        *(void **)&curl.multi_init = dlsym(h, "curl_multi_init");
        *(void **)&curl.multi_add = dlsym(h, "curl_multi_add_handle");
        *(void **)&curl.multi_remove = dlsym(h, "curl_multi_remove_handle");
        *(void **)&curl.multi_perform = dlsym(h, "curl_multi_perform");
        *(void **)&curl.multi_poll = dlsym(h, "curl_multi_poll");
        *(void **)&curl.multi_wakeup = dlsym(h, "curl_multi_wakeup");
        *(void **)&curl.multi_info_read = dlsym(h, "curl_multi_info_read");
        *(void **)&curl.multi_cleanup = dlsym(h, "curl_multi_cleanup");
    }
    loaded = curl.init && curl.setopt && curl.getinfo && curl.cleanup && curl.strerror && curl.multi_init &&
                     curl.multi_add && curl.multi_remove && curl.multi_perform && curl.multi_poll &&
                     curl.multi_wakeup && curl.multi_info_read && curl.multi_cleanup && curl.global_init &&
                     curl.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK
                 ? 1
                 : -1;
    return loaded > 0;
}

typedef struct sink {
    int fd;
    uint64_t bytes, max;
    bool failed;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    sink *k = arg;
    size_t len = size * n;
    if (k->bytes + len > k->max)
        return 0; /* over the cache's bound: aborts */
    for (size_t off = 0; off < len;) {
        ssize_t w = write(k->fd, p + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            k->failed = true;
            return 0;
        }
        off += (size_t)w;
    }
    k->bytes += len;
    return len;
}

static curl_socket_t on_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)arg, (void)purpose;
    return pp_fd_socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int on_close(void *arg, curl_socket_t fd)
{
    (void)arg;
    return pp_fd_close(fd);
}

/* Runs h to its end, or until stop() wakes it: its result. */
static CURLcode run(CURL *h)
{
    CURLM *m = curl.multi_init();
    if (!m || curl.multi_add(m, h) != CURLM_OK) {
        if (m)
            curl.multi_cleanup(m);
        return CURLE_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&mu);
    transfer = m;
    pthread_mutex_unlock(&mu);
    CURLcode rc = CURLE_ABORTED_BY_CALLBACK;
    for (int active = 1;;) {
        if (curl.multi_perform(m, &active) != CURLM_OK)
            break;
        int left;
        CURLMsg *msg = active ? NULL : curl.multi_info_read(m, &left);
        if (msg && msg->msg == CURLMSG_DONE) {
            rc = msg->data.result;
            break;
        }
        pthread_mutex_lock(&mu);
        bool quit = stopping;
        pthread_mutex_unlock(&mu);
        if (quit || !active || curl.multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK)
            break;
    }
    pthread_mutex_lock(&mu);
    transfer = NULL;
    pthread_mutex_unlock(&mu);
    curl.multi_remove(m, h);
    curl.multi_cleanup(m);
    return rc;
}

/* Downloads url into fd, taking at most ms: 200, 404, ... or 0 with *why
 * when no answer. */
static long get(const char *url, int fd, long ms, const char **why, char *err)
{
    CURL *h = curl.init();
    if (!h) {
        *why = "libcurl could not start a transfer";
        return 0;
    }
    sink k = {.fd = fd, .max = pp_sym_store_budget()};
    char agent[64];
    snprintf(agent, sizeof agent, "libpprof/%s", PPROF_VERSION_STRING);
    err[0] = '\0';
    curl.setopt(h, CURLOPT_URL, url);
    curl.setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl.setopt(h, CURLOPT_ERRORBUFFER, err);
    curl.setopt(h, CURLOPT_USERAGENT, agent);
    curl.setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl.setopt(h, CURLOPT_MAXREDIRS, 5L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl.setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl.setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    curl.setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl.setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms < 10000 ? ms : 10000L);
    curl.setopt(h, CURLOPT_TIMEOUT_MS, ms);
    curl.setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)k.max);
    curl.setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl.setopt(h, CURLOPT_WRITEDATA, &k);
    curl.setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_socket);
    curl.setopt(h, CURLOPT_CLOSESOCKETFUNCTION, on_close);
    CURLcode rc = run(h);
    long code = 0;
    curl.getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl.cleanup(h);
    if (rc == CURLE_OK)
        return code;
    *why = k.failed ? "the cache directory cannot be written"
           : k.bytes + CURL_MAX_WRITE_SIZE > k.max || rc == CURLE_FILESIZE_EXCEEDED
               ? "the file is larger than LIBPPROF_DEBUGINFO_CACHE_MB"
           : rc == CURLE_ABORTED_BY_CALLBACK ? "stopped: the process exits or enters a sandbox"
           : err[0]                          ? err
                                             : curl.strerror(rc);
    return code == 404 ? 404 : 0;
}

/* Fetches hex's debug file into the cache: 0, or -1 with why (and
 * *missing when every server answered that it has none). */
static int fetch_one(const char *hex, char *why, size_t nwhy, bool *missing)
{
    *missing = false;
    char *fname = NULL;
    int have = pp_sym_store_open(hex, &fname); /* another process fetched it */
    free(fname);
    if (have >= 0) {
        close(have);
        return 0;
    }
    if (!curl_load()) {
        snprintf(why, nwhy, "libcurl (libcurl3-gnutls or libcurl4) cannot be loaded");
        return -1;
    }
    int n404 = 0, nurl = 0;
    /* LIBPPROF_DEBUGINFOD_TIMEOUT bounds the file, whatever the servers. */
    int64_t deadline = pp_now_ns(CLOCK_MONOTONIC) + (int64_t)timeout_s * 1000000000;
    for (const char *u = urls; *u;) {
        u += strspn(u, " \t");
        size_t len = strcspn(u, " \t");
        if (len == 0)
            break;
        nurl++;
        char base[2048], url[2300], tmp[1300], err[CURL_ERROR_SIZE];
        snprintf(base, sizeof base, "%.*s", (int)len, u);
        u += len;
        for (size_t k = strlen(base); k > 0 && base[k - 1] == '/'; k--)
            base[k - 1] = '\0';
        snprintf(url, sizeof url, "%s/buildid/%s/debuginfo", base, hex);
        const char *w = NULL;
        int fd = pp_sym_store_begin(hex, tmp, sizeof tmp, &w);
        if (fd < 0) {
            snprintf(why, nwhy, "%s", w);
            return -1;
        }
        long ms = (long)((deadline - pp_now_ns(CLOCK_MONOTONIC)) / 1000000);
        long code = ms > 0 ? get(url, fd, ms, &w, err) : 0;
        if (ms <= 0)
            w = "no answer within LIBPPROF_DEBUGINFOD_TIMEOUT";
        if (code == 200 && pp_sym_store_commit(hex, tmp, fd, &w) == 0)
            return 0;
        if (code != 200)
            pp_sym_store_abort(tmp, fd);
        if (code == 404)
            n404++;
        else if (w)
            snprintf(why, nwhy, "%s: %s", base, w);
        else
            snprintf(why, nwhy, "%s answered HTTP %ld", base, code);
    }
    *missing = nurl > 0 && n404 == nurl;
    if (*missing)
        snprintf(why, nwhy, "not found on any server");
    return -1;
}

static void *fetch_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pprof-debuginfo");
    pthread_mutex_lock(&mu);
    for (;;) {
        fetch *f = NULL;
        for (int i = 0; i < nfetch && !f; i++)
            if (table[i].state == WANTED)
                f = &table[i];
        if (stopping)
            break;
        if (!f) {
            pp_cond_wait(&wake, &mu);
            continue;
        }
        f->state = RUNNING;
        char hex[PP_SYM_HEX_MAX], why[160] = "";
        snprintf(hex, sizeof hex, "%s", f->hex);
        pthread_mutex_unlock(&mu);
        bool missing;
        int rc = fetch_one(hex, why, sizeof why, &missing);
        pthread_mutex_lock(&mu);
        f = find_locked(hex);
        if (f && rc == 0) {
            f->state = DONE;
            n_fetched++;
            atomic_fetch_add(&generation, 1);
        } else if (f) {
            f->state = FAILED;
            n_failed++;
            snprintf(f->why, sizeof f->why, "%s", why);
            f->retry_ns = pp_now_ns(CLOCK_MONOTONIC) + (int64_t)(missing ? RETRY_MISSING_S : RETRY_ERROR_S) * 1000000000;
        }
        pthread_cond_broadcast(&done);
    }
    running = false;
    pthread_cond_broadcast(&done);
    pthread_mutex_unlock(&mu);
    return NULL;
}
#endif

/* Stops the thread before the process exits or enters a sandbox (a
 * shutdown hook): a transfer in flight is woken and ends (waited for at
 * most 2 s, so that no system call of its runs in the sandbox, and no
 * TLS session outlives the libraries' destructors). */
static void stop(void)
{
    pthread_mutex_lock(&mu);
    stopping = true;
    mode = mode == PPROF_DEBUGINFOD_ON ? PPROF_DEBUGINFOD_STOPPED : mode;
    pthread_cond_broadcast(&wake);
#ifdef PP_HAVE_CURL
    if (transfer)
        curl.multi_wakeup(transfer);
#endif
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 2;
    while (running && pp_cond_timedwait(&done, &mu, &until) == 0)
        ;
    pthread_mutex_unlock(&mu);
}

int pp_sym_fetch_want(const char *hex, const char *path)
{
    pthread_once(&once, fetch_init);
    if (hex[0] == '\0' || strncmp(path, "[vdso", 5) == 0)
        return 0;
    pthread_mutex_lock(&mu);
    int state = 0;
    if (mode == PPROF_DEBUGINFOD_ON && !pp_sandboxed()) {
        fetch *f = find_locked(hex);
        if (!f && nfetch < MAX_FILES) {
            f = &table[nfetch++];
            *f = (fetch){.state = WANTED};
            snprintf(f->hex, sizeof f->hex, "%s", hex);
            snprintf(f->path, sizeof f->path, "%s", path);
        }
        if (f && f->state == FAILED && pp_now_ns(CLOCK_MONOTONIC) >= f->retry_ns)
            f->state = WANTED;
#ifdef PP_HAVE_CURL
        if (f && f->state == WANTED && !running && !stopping)
            running = pp_spawn_detached(fetch_main, NULL, NULL) == 0;
#endif
        pthread_cond_signal(&wake);
        state = f ? f->state : 0;
    }
    pthread_mutex_unlock(&mu);
    return state;
}

int pp_sym_fetch_note(const char *hex, char *out, size_t n)
{
    pthread_once(&once, fetch_init);
    pthread_mutex_lock(&mu);
    fetch *f = hex[0] ? find_locked(hex) : NULL;
    int state = f ? f->state : 0;
    if (state == WANTED || state == RUNNING)
        snprintf(out, n, "debuginfod: debug file pending for %s (build ID %s): a later profile names its functions",
                 f->path, hex);
    else if (state == FAILED)
        snprintf(out, n, "debuginfod: no debug file for %s (build ID %s): %s", f->path, hex, f->why);
    pthread_mutex_unlock(&mu);
    return state == WANTED || state == RUNNING ? 1 : state == FAILED ? 2 : 0;
}

bool pp_sym_fetch_wait(int64_t since_ns)
{
    pthread_once(&once, fetch_init);
    int64_t deadline = since_ns + (int64_t)wait_ms * 1000000;
    struct timespec until = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
    pthread_mutex_lock(&mu);
    uint64_t ended = n_fetched + n_failed;
    for (;;) {
        bool busy = false;
        for (int i = 0; i < nfetch && !busy; i++)
            busy = table[i].state == WANTED || table[i].state == RUNNING;
        if (!busy || !running || pp_cond_timedwait(&done, &mu, &until) != 0)
            break;
    }
    ended = n_fetched + n_failed - ended;
    pthread_mutex_unlock(&mu);
    return ended > 0;
}

void pp_sym_fetch_stats(pprof_symbolizer_stats *st)
{
    pthread_once(&once, fetch_init);
    pthread_mutex_lock(&mu);
    st->debuginfo_fetched = n_fetched;
    st->debuginfo_failed = n_failed;
    for (int i = 0; i < nfetch; i++)
        st->debuginfo_pending += table[i].state == WANTED || table[i].state == RUNNING;
    st->debuginfo_fetching = mode;
    pthread_mutex_unlock(&mu);
    st->debuginfo_cache_budget = pp_sym_store_budget();
    st->debuginfo_cache_bytes = pp_sym_store_bytes();
}
