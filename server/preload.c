/* preload.c: the environment entry point.
 *
 * When the library is loaded with LD_PRELOAD and LIBPPROF_ADDR is set to
 * HOST:PORT, a constructor starts the HTTP server there. Unset, empty or
 * "off": nothing happens. A program linked with the library starts the
 * server itself (explicit configuration beats the environment), so the
 * constructor only acts when the library is one of LD_PRELOAD's entries. If the server cannot
 * start, exactly one line goes to stderr and the host program runs on.
 *
 * When it starts, and LIBPPROF_PRINT_ADDR=1 (the launcher libpprof-run sets
 * it) or the requested port is 0, one line on stderr says where it serves,
 * with the port actually bound:
 *     libpprof: serving http://127.0.0.1:41237/debug/pprof/ (pid 1234)
 * once per process and address, exec or not (print_serving).
 *
 * At exit the server is stopped from an atexit handler registered by the
 * constructor; stopping is idempotent, so a program that stops the server
 * itself is fine. (The profiler core stops its timers with its own hook.)
 */
#define _GNU_SOURCE
#include "base/base.h"
#include "pprof.h"
#include "tree.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static void preload_exit(void)
{
    pprof_server_stop(); /* PPROF_ESTATE when already stopped: fine */
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether this library was loaded as one of LD_PRELOAD's entries. */
static int preloaded(void)
{
    Dl_info info;
    const char *list = getenv("LD_PRELOAD");
    if (!list || !dladdr((void *)base_name, &info) || !info.dli_fname)
        return 0;
    char self[PATH_MAX], other[PATH_MAX];
    if (!realpath(info.dli_fname, self))
        snprintf(self, sizeof self, "%s", info.dli_fname);
    while (*list) {
        size_t n = strcspn(list, ": ");
        char entry[PATH_MAX];
        if (n && n < sizeof entry) {
            memcpy(entry, list, n);
            entry[n] = 0;
            if (!strcmp(base_name(entry), base_name(info.dli_fname)) ||
                (realpath(entry, other) && !strcmp(other, self)))
                return 1;
        }
        list += n;
        list += strspn(list, ": ");
    }
    return 0;
}

/* Whether the port of "HOST:PORT" or "[V6]:PORT" is 0 (the kernel picks). */
static int port_is_zero(const char *addr)
{
    const char *port = strrchr(addr, ':') + 1; /* the server accepted addr: it has one */
    return *port && strspn(port, "0") == strlen(port);
}

/* setenv, leaving the environment array in a copy of its own that is never
 * freed. The C library passes main the array as it is after the
 * constructors (its envp), and reallocates the array it made for setenv at
 * the program's next setenv: a program that sets a variable and then
 * execs with main's envp (capsh --user does) would pass freed memory. */
static void set_env_kept(const char *name, const char *value)
{
    extern char **environ;
    if (setenv(name, value, 1) != 0)
        return;
    size_t n = 0;
    while (environ[n])
        n++;
    char **kept = malloc((n + 1) * sizeof *kept);
    if (kept) {
        memcpy(kept, environ, (n + 1) * sizeof *kept);
        environ = kept; /* the C library's next setenv makes a new array */
    }
}

/* The line saying where the server listens: the host as given ("0.0.0.0"
 * when empty, as for every interface), the port bound. Once per process
 * and address: a process that execs (a shim, a launcher script) and
 * serves again at the same address is the same endpoint, so ANNOUNCED,
 * carried across exec in the environment, holds "PID WHERE" of the last
 * line; another process (a child) or another address prints its own. */
#define ANNOUNCED "LIBPPROF_ANNOUNCED"
static void print_serving(const char *addr)
{
    if (!pp_env_int("LIBPPROF_PRINT_ADDR", 0, 0, 1) && !port_is_zero(addr))
        return;
    char where[PATH_MAX + 64];
    if (!strncmp(addr, "unix:", 5)) {
        snprintf(where, sizeof where, "/debug/pprof/ on %s", addr);
    } else {
        int hlen = (int)(strrchr(addr, ':') - addr);
        const char *cert = getenv("LIBPPROF_TLS_CERT"); /* the server started: it serves HTTPS */
        snprintf(where, sizeof where, "%s://%.*s:%d/debug/pprof/", cert && *cert ? "https" : "http",
                 hlen ? hlen : 7, hlen ? addr : "0.0.0.0", pprof_server_port());
    }
    char mark[sizeof where + 16];
    snprintf(mark, sizeof mark, "%d %s", (int)getpid(), where);
    const char *before = getenv(ANNOUNCED);
    if (before && !strcmp(before, mark))
        return; /* this process said so before its exec */
    set_env_kept(ANNOUNCED, mark);
    pp_say("libpprof: serving %s (pid %d)\n", where, (int)getpid());
}

/* The tree this process's hub started (LIBPPROF_HUB, set by a hub that
 * the preload started, inherited by its descendants): a process started by
 * exec while no process serves it, its hub having exited and a daemon it
 * left taking its place (postfix's master forks services that exec
 * within milliseconds), joins it once one does instead of serving. */
#define HUB_ENV "LIBPPROF_HUB"

__attribute__((constructor)) static void preload_init(void)
{
    const char *addr = getenv("LIBPPROF_ADDR");
    /* In secure-execution mode the C library takes LD_PRELOAD out of the
     * environment before the constructors run. */
    int secure = (int)getauxval(AT_SECURE);
    if (!addr || !*addr || strcmp(addr, "off") == 0 || !(secure || preloaded()))
        return;
    pprof_server_config cfg = {.addr = addr};
    const char *hub = getenv(HUB_ENV);
    int hub_pid = hub ? atoi(hub) : 0;
    int named = hub_pid > 0 && hub_pid != (int)getpid();
    /* the tree named first: one connection where walking the ancestors
     * tried one for each */
    if ((named && pp_tree_join_named(hub_pid, 1) == 0) || pp_tree_join_ancestor() == 0 ||
        (named && pp_tree_join_named(hub_pid, 0) == 0)) {
        /* a process of a tree: it answers through the hub, and serves
         * should it outlive the hub (a daemon's master started by exec) */
        if (!secure)
            pp_server_offer_takeover(&cfg);
        return;
    }
    if (secure)
        return; /* secure-execution mode (a set-user-ID copy of libpprof, docs/daemons.md): it joins its
                   tree's hub, never serves on its own for whoever started it */
    int rc = pprof_server_start(&cfg);
    if (rc == 0) {
        atexit(preload_exit);
        print_serving(addr);
        char pid[16];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        set_env_kept(HUB_ENV, pid);
        return;
    }
    if (rc == PPROF_EBUSY)
        return; /* someone started it already */
    /* pprof_last_error begins with the code's text ("cannot serve on that address: ...") */
    pp_say("libpprof: LIBPPROF_ADDR=%s: %s; running unprofiled\n", addr, pprof_last_error());
}
