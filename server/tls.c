/* tls.c: the built-in server's certificate, key and client CA, and the
 * client-certificate check (see tls.h). */
#define _GNU_SOURCE
#include "tls.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include "mhd_lib.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PEM_MAX (1 << 20)

/* The whole file as a string, or NULL with `why`. */
static char *read_pem(const char *what, const char *path, char *why, size_t why_size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        char e[PP_ELIDE_MAX];
        snprintf(why, why_size, "cannot read the TLS %s %s: %s", what, pp_elide(path, e), strerror(errno));
        return NULL;
    }
    char *buf = malloc(PEM_MAX + 1);
    size_t len = 0;
    ssize_t n = 0;
    while (buf && len < PEM_MAX && (n = read(fd, buf + len, PEM_MAX - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        len += (size_t)n;
    }
    int err = errno;
    close(fd);
    if (!buf || n < 0 || len == 0 || len == PEM_MAX) {
        char e[PP_ELIDE_MAX];
        snprintf(why, why_size, "cannot read the TLS %s %s: %s", what, pp_elide(path, e),
                 !buf ? "out of memory" : n < 0 ? strerror(err) : len == 0 ? "empty" : "over 1 MiB");
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

static const char *setting(const char *field, const char *env)
{
    if (field && *field)
        return field;
    const char *v = getenv(env);
    return v && *v ? v : NULL;
}

int pp_tls_load(const pprof_server_config *cfg, pp_tls *out, char *why, size_t why_size)
{
    *out = (pp_tls){0};
    pprof_server_config c = cfg ? *cfg : (pprof_server_config){0};
    const char *cert = setting(c.tls_cert_file, "LIBPPROF_TLS_CERT");
    const char *key = setting(c.tls_key_file, "LIBPPROF_TLS_KEY");
    const char *ca = setting(c.tls_client_ca_file, "LIBPPROF_TLS_CLIENT_CA");
    if (!cert && !key && !ca)
        return 0;
    if (!cert || !key) {
        snprintf(why, why_size, "TLS needs both a certificate and a key (LIBPPROF_TLS_CERT, LIBPPROF_TLS_KEY)%s",
                 ca ? "; a client CA alone is not enough" : "");
        return -1;
    }
    if (!(out->cert = read_pem("certificate", cert, why, why_size)) ||
        !(out->key = read_pem("key", key, why, why_size)) ||
        (ca && !(out->client_ca = read_pem("client CA", ca, why, why_size)))) {
        pp_tls_free(out);
        return -1;
    }
    return 0;
}

void pp_tls_free(pp_tls *t)
{
    free(t->cert);
    if (t->key) /* the private key: not left in freed memory */
        explicit_bzero(t->key, strlen(t->key));
    free(t->key);
    free(t->client_ca);
    *t = (pp_tls){0};
}

int pp_tls_client_verified(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session)
        return 0;
    gnutls_session_t s = (gnutls_session_t)ci->tls_session;
    unsigned int n = 0;
    if (!gnutls_certificate_get_peers(s, &n) || n == 0)
        return 0; /* no certificate presented */
    unsigned int status = 0;
    return gnutls_certificate_verify_peers2(s, &status) == GNUTLS_E_SUCCESS && status == 0;
}
