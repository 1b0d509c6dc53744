/* auth.c: tokens, the access check, and refusals (see auth.h). */
#define _GNU_SOURCE
#include "auth.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MAX_TOKEN 1024

static struct {
    pthread_mutex_t mu;
    char path[PATH_MAX];  /* the file the token was read from; "" none */
    char token[MAX_TOKEN];
    size_t len;
} tok = {.mu = PTHREAD_MUTEX_INITIALIZER};

static struct {
    const char *token_file;
    int token_in_query, auth_none, no_cmdline;
} env;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static _Atomic uint64_t n_unauthenticated, n_forbidden, n_busy;
static _Atomic int64_t last_log_ns;

static void read_env(void)
{
    const char *v = getenv("LIBPPROF_TOKEN_FILE");
    env.token_file = v && *v ? strdup(v) : NULL;
    env.token_in_query = pp_env_int("LIBPPROF_TOKEN_QUERY", 0, 0, 1);
    static const char *const auth[] = {"none", NULL}, *const cmdline[] = {"on", "off", NULL};
    env.auth_none = pp_env_word("LIBPPROF_AUTH", auth, -1, "no value (a token or a client CA off loopback)") == 0;
    env.no_cmdline = pp_env_word("LIBPPROF_CMDLINE", cmdline, 0, "on") == 1;
}

void pp_access_resolve(const pprof_server_config *cfg, pp_access *out)
{
    pthread_once(&env_once, read_env);
    pprof_server_config c = cfg ? *cfg : (pprof_server_config){0};
    out->token_file = c.token_file && *c.token_file ? c.token_file : env.token_file;
    out->token_in_query = c.token_in_query || env.token_in_query;
    out->auth_none = c.auth_none || env.auth_none;
    out->no_cmdline = c.no_cmdline || env.no_cmdline;
}

/* Reads the token file into tok (lock held). */
static int load_locked(const char *path, char *why, size_t why_size)
{
    if (tok.path[0] && strcmp(tok.path, path) == 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        char e[PP_ELIDE_MAX];
        snprintf(why, why_size, "cannot read the token file %s: %s", pp_elide(path, e), strerror(err));
        return -1;
    }
    char buf[MAX_TOKEN + 1];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof buf && (n = read(fd, buf + len, sizeof buf - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    while (len && strchr(" \t\r\n", buf[len - 1]))
        len--;
    if (len == 0 || len > MAX_TOKEN - 1 || memchr(buf, '\n', len)) {
        char e[PP_ELIDE_MAX];
        snprintf(why, why_size, "the token file %s must hold one token of 1 to %d bytes", pp_elide(path, e),
                 MAX_TOKEN - 1);
        return -1;
    }
    memcpy(tok.token, buf, len);
    tok.len = len;
    snprintf(tok.path, sizeof tok.path, "%s", path);
    return 0;
}

int pp_auth_load(const pp_access *a, char *why, size_t why_size)
{
    if (!a->token_file)
        return 0;
    pthread_mutex_lock(&tok.mu);
    int rc = load_locked(a->token_file, why, why_size);
    pthread_mutex_unlock(&tok.mu);
    return rc;
}

/* Whether `given` is the token: time depends on the token's length only. */
static int token_matches(const char *given, size_t given_len)
{
    volatile unsigned char diff = given_len != tok.len;
    for (size_t i = 0; i < tok.len; i++) {
        unsigned char g = i < given_len ? (unsigned char)given[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)tok.token[i]);
    }
    return diff == 0;
}

int pp_auth_check(const pp_access *a, const char *authorization, const char *query_token, const char **text)
{
    if (!a->token_file)
        return 0;
    char why[PATH_MAX + 64];
    pthread_mutex_lock(&tok.mu);
    if (load_locked(a->token_file, why, sizeof why) != 0) {
        pthread_mutex_unlock(&tok.mu);
        *text = "the server cannot read its token file; every request is refused";
        return 500;
    }
    const char *given = NULL;
    size_t given_len = 0;
    if (authorization) {
        while (*authorization == ' ')
            authorization++;
        if (strncasecmp(authorization, "Bearer ", 7) == 0) {
            given = authorization + 7;
            while (*given == ' ')
                given++;
            given_len = strlen(given);
            while (given_len && given[given_len - 1] == ' ')
                given_len--;
        }
    }
    if (!given && a->token_in_query && query_token) {
        given = query_token;
        given_len = strlen(query_token);
    }
    int ok = given && token_matches(given, given_len);
    pthread_mutex_unlock(&tok.mu);
    if (ok)
        return 0;
    if (!given) {
        *text = a->token_in_query ? "authentication required: send \"Authorization: Bearer <token>\" or ?token=<token>"
                                  : "authentication required: send \"Authorization: Bearer <token>\"";
        return 401;
    }
    *text = "forbidden: the token is not valid";
    return 403;
}

void pp_auth_refused(int status, const char *peer)
{
    atomic_fetch_add(status == 401 ? &n_unauthenticated : status == 403 ? &n_forbidden : &n_busy, 1);
    int64_t now = pp_now_ns(CLOCK_MONOTONIC), last = atomic_load(&last_log_ns);
    if (last && now - last < 60000000000LL)
        return;
    if (!atomic_compare_exchange_strong(&last_log_ns, &last, now))
        return;
    pp_say("libpprof: refused a request from %s (%d %s); refusals are counted on the index and "
           "logged at most once a minute\n",
           peer ? peer : "a client", status,
           status == 401   ? "without credentials"
           : status == 403 ? "with a wrong token"
                           : "over a limit");
}

void pp_refusals_get(pp_refusals *out)
{
    out->unauthenticated = atomic_load(&n_unauthenticated);
    out->forbidden = atomic_load(&n_forbidden);
    out->busy = atomic_load(&n_busy);
}
