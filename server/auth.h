/* auth.h: who may use the endpoint (auth.c).
 *
 * A token (pprof_server_config.token_file or LIBPPROF_TOKEN_FILE) is read
 * once per file and kept; every request through the libmicrohttpd daemon
 * (built-in or the host's, through the adapter) is checked before it is
 * routed: "Authorization: Bearer <token>", compared in constant time, or
 * "?token=" when allowed. A refused request gets 401 (no credentials,
 * with WWW-Authenticate) or 403 (wrong ones), a fixed text that says
 * nothing of the token; refusals are counted for the index and logged on
 * stderr at most once a minute. Without a token and without auth_none,
 * the built-in server serves loopback addresses only.
 */
#ifndef PP_AUTH_H
#define PP_AUTH_H
#include "pprof.h"

#include <stddef.h>
#include <stdint.h>

/* The settings in force: cfg's fields, else the environment's (read once). */
typedef struct pp_access {
    const char *token_file; /* NULL: no token */
    int token_in_query;
    int auth_none;
    int no_cmdline;
} pp_access;
void pp_access_resolve(const pprof_server_config *cfg, pp_access *out);

/* Loads the token of a (cached per file). Returns 0, or -1 with `why` when
 * the file cannot be read or is empty. Thread-safe. */
int pp_auth_load(const pp_access *a, char *why, size_t why_size);

/* 0 when the request may go on, else the status to answer (401, 403, or
 * 500 when the token file cannot be read: refused, never open) with a
 * fixed one-line text in *text. authorization: the header's value or NULL;
 * query_token: the decoded "token" argument or NULL. Thread-safe. */
int pp_auth_check(const pp_access *a, const char *authorization, const char *query_token, const char **text);

/* Counts a refusal and logs it (peer: the client's address, or NULL) at
 * most once a minute. Thread-safe. */
void pp_auth_refused(int status, const char *peer);

typedef struct pp_refusals {
    uint64_t unauthenticated; /* 401 */
    uint64_t forbidden;       /* 403 */
    uint64_t busy;            /* 503: a connection cap was hit */
} pp_refusals;
void pp_refusals_get(pp_refusals *out);
#endif
