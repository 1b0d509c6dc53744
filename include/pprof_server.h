/* pprof_server.h: serving the endpoints (libpprof's own server, process
 * trees, and the handler for a program's own HTTP server), part of the
 * public API. pprof.h includes it: programs include pprof.h alone. The
 * conventions of pprof.h's introduction hold here; the adapter for a
 * service's own libmicrohttpd daemon is pprof_mhd.h.
 */
#include "pprof.h" /* first: it includes this file at its end */

#ifndef PPROF_SERVER_H
#define PPROF_SERVER_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- server */

typedef struct pprof_server_config {
    const char *addr;          /* "HOST:PORT"; NULL: LIBPPROF_ADDR, else 127.0.0.1:6060 */
    const char *prefix;        /* path prefix, NULL: "/debug/pprof/" (must start and end with '/') */
    int max_seconds;           /* largest seconds=N accepted; 0: 600 */
    int max_concurrent;        /* profile requests running at once; 0: 16; beyond: 503 */
    int no_tree;               /* 1: forked children do not join (see docs/process-trees.md;
                                  LIBPPROF_TREE=0 does the same) */
    /* Access (docs/access.md). A request must carry
     * "Authorization: Bearer <token>" when a token is set: 401 without it,
     * 403 with another. */
    const char *token_file;    /* the file holding the token (trailing whitespace ignored);
                                  NULL: LIBPPROF_TOKEN_FILE, else no token */
    int token_in_query;        /* 1: "?token=<token>" is accepted too, for clients that cannot
                                  send headers (go tool pprof): the token is then in URLs,
                                  shell history and proxies' logs (LIBPPROF_TOKEN_QUERY=1) */
    int auth_none;             /* 1: serve an address other than loopback with no token
                                  (LIBPPROF_AUTH=none); without it or a token,
                                  pprof_server_start refuses such an address */
    int no_cmdline;            /* 1: cmdline answers 403 (LIBPPROF_CMDLINE=off) */
    /* HTTPS (docs/access.md): PEM files, read once at start. */
    const char *tls_cert_file;      /* with tls_key_file: serve HTTPS; NULL: LIBPPROF_TLS_CERT */
    const char *tls_key_file;       /* NULL: LIBPPROF_TLS_KEY */
    const char *tls_client_ca_file; /* every client must present a certificate this CA signed
                                       (403 otherwise); counts as authentication for an address
                                       other than loopback; NULL: LIBPPROF_TLS_CLIENT_CA */
} pprof_server_config;

/* Starts the HTTP server on its own threads. cfg may be NULL. A second
 * start fails with PPROF_EBUSY; a bad address or a port in use with
 * PPROF_EADDR. The listening socket is close-on-exec, and a forked child
 * does not serve. Thread-safe. */
PPROF_API int pprof_server_start(const pprof_server_config *cfg);
/* Stops the server, ending running requests. Returns PPROF_ESTATE if it is
 * not running. Thread-safe. */
PPROF_API int pprof_server_stop(void);
/* The port the server listens on (useful with port 0), or PPROF_ESTATE
 * when it is not running. Thread-safe. */
PPROF_API int pprof_server_port(void);

/* --------------------------------------------------------- process trees */

/* Process trees without the built-in server (see docs/process-trees.md).
 * pprof_server_start makes its process the hub of its tree
 * unless no_tree; pprof_tree_start does the same for a program that
 * serves the endpoints on an HTTP server of its own (pprof_http_handle,
 * pprof_mhd_handle) or not at all: children it forks, and exec'd children
 * with the preload, join it, and pprof_http_handle answers for all of
 * them. Idempotent; a no-op under LIBPPROF_TREE=0. Returns 0,
 * PPROF_ESTATE in a process that has joined its parent's tree (it is a
 * member, answering that hub), or PPROF_ESYS. Thread-safe. */
PPROF_API int pprof_tree_start(void);

/* One profile of this process and every member of its tree, merged as
 * the hub's endpoints answer (the labels pid and process on every
 * sample), written to w: `request` is an endpoint name and query as in a
 * URL after the prefix ("heap", "profile?seconds=5", "goroutine?pid=123").
 * Without a tree (not a hub, or no member yet) the profile is this
 * process's alone. Blocks until the profile is complete. Returns 0, or
 * PPROF_EINVAL (a bad request), PPROF_ENOTFOUND (no such profile or
 * process), PPROF_ELIMIT (too many profiles at once), PPROF_ESYS (the
 * profile failed), PPROF_EIO (w failed), with the reason in
 * pprof_last_error. Thread-safe; never from a pprof_http_done callback. */
PPROF_API int pprof_tree_collect(const char *request, pprof_writer w);

/* A tree's members are mostly forks of its hub, mapping the same
 * executable and libraries: rather than each building the symbol tables
 * of those files for its own profiles, a member answering its hub leaves
 * them to the hub. With `maps`, the /proc/<pid>/maps text of the process
 * that will name them (its executable lines suffice), the profiles r
 * writes from now on give the addresses in files that process maps too
 * (the same device and inode) their mapping and no names, and a comment
 * says how many; NULL (the default) names everything. pprof_merge_naming
 * in that process names them. The text is copied. Returns 0, PPROF_EINVAL
 * or PPROF_ENOMEM. Not while r writes a profile. */
PPROF_API int pprof_recorder_leave_shared(pprof_recorder *r, const char *maps);
/* A running CPU recorder that answers for a window its process started
 * inside (a tree's member asked for the rest of one as it joins): adds
 * `ns`, the process's CPU time before the recorder started, which no
 * sample saw, to the open window as one sample at "[not sampled: the
 * process's CPU time before profiling started]", so that the window adds
 * up to the process's CPU clock. Returns 0, PPROF_EINVAL (not a CPU
 * recorder), PPROF_ESTATE (not running) or PPROF_ENOMEM. Thread-safe. */
PPROF_API int pprof_recorder_add_unsampled_cpu(pprof_recorder *r, uint64_t ns);
/* pprof_merge, which also names (as `how` says; NONE: not at all) the
 * locations without names of the inputs whose files this process maps:
 * by the mapping's build ID (its path when it has none) and file offset,
 * in this process's mapping of that file. Locations in files it does not
 * map stay as they came. Returns as pprof_merge, or
 * PPROF_EINVAL for a bad `how`. Thread-safe. */
PPROF_API int pprof_merge_naming(const pprof_merge_input *in, size_t n, pprof_symbolize how, pprof_writer w);

/* --------------------------------------------------------- HTTP handling */

/* Transport-independent request handling, for a service that mounts the
 * endpoints on an HTTP server of its own. */
typedef struct pprof_http_request {
    const char *method;   /* "GET", "HEAD", "POST", ... */
    const char *path;     /* e.g. "/debug/pprof/profile" (no query) */
    const char *query;    /* raw query without '?', or NULL; %-escapes allowed */
    const void *body;     /* POST body or NULL */
    size_t body_len;
} pprof_http_request;

#define PPROF_HTTP_MAX_HEADERS 6

typedef struct pprof_http_response {
    int status;
    size_t nheaders;
    struct { const char *name; const char *value; } headers[PPROF_HTTP_MAX_HEADERS];
    pprof_buffer body;   /* owned by the response */
} pprof_http_response;

/* Called once when a response is ready, from the calling thread (for quick
 * requests, before pprof_http_handle returns) or from a library thread (for
 * profiles that run for seconds). `resp` is valid only during the call. */
typedef void (*pprof_http_done)(void *ctx, const pprof_http_response *resp);

typedef struct pprof_http_call pprof_http_call;

/* Handles one request under the given configuration (cfg may be NULL for
 * the defaults; the prefix decides which paths are ours: others get 404).
 * `done` is called exactly once, unless the call is cancelled first.
 * If `call` is not NULL it receives a handle (NULL when the request was
 * answered before pprof_http_handle returned) that the caller must release
 * with pprof_http_cancel exactly once: before `done`, that cancels the
 * request; after, it only frees the handle. Returns 0, or a negative code
 * (then `done` is never called). Thread-safe. */
PPROF_API int pprof_http_handle(const pprof_server_config *cfg, const pprof_http_request *req,
                                pprof_http_done done, void *ctx, pprof_http_call **call);
/* Releases a call handle. If the call is still pending (its client went
 * away), its recorder ends and `done` is never called; if `done` is
 * running on another thread, waits for it to return. Must not be called
 * from the call's own `done`. Thread-safe. */
PPROF_API void pprof_http_cancel(pprof_http_call *call);
/* Whether `path` is one pprof_http_handle (or pprof_mhd_handle) answers
 * under cfg's prefix (cfg NULL: "/debug/pprof/"): a path under the prefix,
 * the prefix without its slash (a 301 to the index) or, when the prefix
 * lacks /debug/pprof/, "/symbolz". A host's server passes exactly these
 * paths to it. 0 for an invalid prefix. Thread-safe. */
PPROF_API int pprof_http_serves(const pprof_server_config *cfg, const char *path);

/* The adapter for a service's own libmicrohttpd daemon is in pprof_mhd.h. */

#ifdef __cplusplus
}
#endif
#endif /* PPROF_SERVER_H */
