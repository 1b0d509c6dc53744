/* tls.h: HTTPS for the built-in server (tls.c).
 *
 * The server's certificate and key (pprof_server_config.tls_cert_file and
 * tls_key_file, or LIBPPROF_TLS_CERT and LIBPPROF_TLS_KEY) are read once,
 * at start, into memory: libmicrohttpd takes PEM text, not paths, and
 * serves with GnuTLS. A client CA (tls_client_ca_file, LIBPPROF_TLS_CLIENT_CA)
 * makes libmicrohttpd ask every client for a certificate; libmicrohttpd
 * does not require one, so each request is checked before it is routed
 * (pp_tls_client_verified): a client that presented no certificate, or
 * one the CA did not sign or that is out of its validity, gets 403. A
 * client CA is authentication: with one, a non-loopback address serves
 * without a token.
 */
#ifndef PP_TLS_H
#define PP_TLS_H
#include "pprof.h"

#include <stddef.h>

struct MHD_Connection;

typedef struct pp_tls {
    char *cert, *key, *client_ca; /* PEM text; NULL: not set */
} pp_tls;

/* Resolves the files (cfg's fields, else the environment's) and reads
 * them. Returns 0 (*out all NULL when TLS is not asked for), or -1 with
 * `why` when only one of certificate and key is set, a client CA is set
 * without them, or a file cannot be read. */
int pp_tls_load(const pprof_server_config *cfg, pp_tls *out, char *why, size_t why_size);
void pp_tls_free(pp_tls *t);

/* 1 when the connection is TLS and its client presented a certificate that
 * verifies against the daemon's client CA; else 0. Thread-safe. */
int pp_tls_client_verified(struct MHD_Connection *c);
#endif
