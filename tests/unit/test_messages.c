/* test_messages.c: libpprof's error texts are never cut.
 * test-labels: quick
 *
 * pprof_last_error holds a detail of PP_DETAIL_MAX - 1 bytes whole (and
 * says "..." at the end of a longer one, which libpprof never makes);
 * pp_elide keeps a short string as it is and a long one's end; the
 * longest texts of pprof_server_start come whole: an address other than
 * loopback without authentication (to its last word), a token file and a
 * TLS file with paths of 300 bytes (the path's end and the system's
 * reason kept).
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "check.h"
#include "pprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);
    return n >= m && !strcmp(s + n - m, end);
}

static void test_detail(void)
{
    char detail[PP_DETAIL_MAX];
    memset(detail, 'x', sizeof detail - 1);
    detail[sizeof detail - 2] = 'Z';
    detail[sizeof detail - 1] = 0;
    pp_error_detail(PPROF_ERATE, "%s", detail); /* the longest code text, the longest detail */
    const char *e = pprof_last_error();
    CHECKF(!strncmp(e, "sampling rate differs from the rate in force: ", 46) && ends_with(e, "xZ") &&
               strlen(e) == 46 + sizeof detail - 1,
           "%zu bytes: ...%s", strlen(e), e + (strlen(e) > 20 ? strlen(e) - 20 : 0));
    char longer[PP_ERROR_MAX + 100];
    memset(longer, 'y', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    pp_error_detail(PPROF_EINVAL, "%s", longer);
    e = pprof_last_error();
    CHECKF(strlen(e) == PP_ERROR_MAX - 1 && ends_with(e, "y..."), "%zu bytes", strlen(e));
    pp_fail(PPROF_EINVAL);
    CHECK(!strcmp(pprof_last_error(), "invalid argument"));
    pp_error_detail(PPROF_EINVAL, "%s", "");
    CHECK(!strcmp(pprof_last_error(), "invalid argument"));
}

static void test_elide(void)
{
    char buf[PP_ELIDE_MAX], s[400];
    const char *shortone = "/etc/token";
    CHECK(pp_elide(shortone, buf) == shortone);
    memset(s, 'a', PP_ELIDE_MAX - 1);
    s[PP_ELIDE_MAX - 1] = 0;
    CHECK(pp_elide(s, buf) == s); /* PP_ELIDE_MAX - 1 bytes: as it is */
    memset(s, 'a', sizeof s - 1);
    s[sizeof s - 1] = 0;
    memcpy(s + sizeof s - 10, "/tail.pem", 9);
    const char *e = pp_elide(s, buf);
    CHECKF(e == buf && strlen(e) == PP_ELIDE_MAX - 1 && !strncmp(e, "...", 3) && ends_with(e, "/tail.pem"), "%s", e);
}

/* A path of about 300 bytes under /nonexistent that ends in `name`. */
static void long_path(char *out, size_t size, const char *name)
{
    int n = snprintf(out, size, "/nonexistent");
    while (n < 290)
        n += snprintf(out + n, size - (size_t)n, "/directory");
    snprintf(out + n, size - (size_t)n, "/%s", name);
}

/* pprof_server_start(c) fails with `want`, its error text starting with
 * `head`... and ending with `tail`. */
static void start_fails(pprof_server_config c, int want, const char *head, const char *tail)
{
    int rc = pprof_server_start(&c);
    const char *e = pprof_last_error();
    CHECKF(rc == want && strstr(e, head) && ends_with(e, tail), "%d %s", rc, e);
    if (rc == 0)
        pprof_server_stop();
}

static void test_server_texts(void)
{
    start_fails((pprof_server_config){.addr = "0.0.0.0:0"}, PPROF_EADDR, "0.0.0.0:0 is not a loopback address",
                "or LIBPPROF_AUTH=none to serve anyone who reaches it");
    char path[400], key[400];
    long_path(path, sizeof path, "token");
    start_fails((pprof_server_config){.addr = "127.0.0.1:0", .token_file = path}, PPROF_EINVAL,
                "cannot read the token file ...", "/directory/token: No such file or directory");
    long_path(path, sizeof path, "cert.pem");
    long_path(key, sizeof key, "key.pem");
    start_fails((pprof_server_config){.addr = "127.0.0.1:0", .tls_cert_file = path, .tls_key_file = key},
                PPROF_EINVAL, "cannot read the TLS certificate ...", "/directory/cert.pem: No such file or directory");
}

int main(void)
{
    unsetenv("LIBPPROF_ADDR");
    unsetenv("LIBPPROF_AUTH");
    unsetenv("LIBPPROF_TOKEN_FILE");
    test_detail();
    test_elide();
    test_server_texts();
    return check_summary("test_messages");
}
