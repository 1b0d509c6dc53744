/* prog_mhd_modes_linked.c: libpprof's endpoints mounted on a program's own
 * libmicrohttpd daemon, in the daemon mode named on the command line
 * (test_mhd_modes.sh):
 *
 *   poll        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, with
 *               MHD_ALLOW_SUSPEND_RESUME (the README's snippet)
 *   per-conn    MHD_USE_THREAD_PER_CONNECTION, with MHD_ALLOW_SUSPEND_RESUME
 *   external    no thread of MHD's: the program runs MHD_run in its main
 *               loop, with MHD_ALLOW_SUSPEND_RESUME
 *   no-suspend  MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, without
 *               MHD_ALLOW_SUSPEND_RESUME
 *
 * A worker thread burns CPU in burn_in_worker. Prints "port=P" once it
 * serves; on SIGTERM it quiesces the daemon, releases pending profiles
 * (pprof_mhd_release), stops the daemon and prints "stopped".
 * Usage: prog_mhd_modes_linked MODE
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "pprof_mhd.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>

static _Atomic int stop;
static volatile double sink;

__attribute__((noinline)) void burn_in_worker(void)
{
    for (int i = 0; i < 200000; i++)
        sink += i * 1.0000001;
}

static void *worker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        burn_in_worker();
    return NULL;
}

static enum MHD_Result app(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    if (pprof_http_serves(NULL, url))
        return (enum MHD_Result)pprof_mhd_handle(NULL, c, url, method, upload, upload_size, con_cls);
    static const char page[] = "the program's own page\n";
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof page - 1, (void *)page, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)c;
    (void)code;
    pprof_mhd_completed(con_cls);
}

static void on_term(int sig)
{
    (void)sig;
    atomic_store(&stop, 1);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    unsigned int flags = MHD_USE_ERROR_LOG;
    int external = 0;
    if (!strcmp(mode, "poll"))
        flags |= MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME;
    else if (!strcmp(mode, "per-conn"))
        flags |= MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_ALLOW_SUSPEND_RESUME;
    else if (!strcmp(mode, "external"))
        flags |= MHD_ALLOW_SUSPEND_RESUME, external = 1;
    else if (!strcmp(mode, "no-suspend"))
        flags |= MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    else {
        fprintf(stderr, "usage: prog_mhd_modes_linked poll|per-conn|external|no-suspend\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)}; /* port: any */
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, app, NULL, MHD_OPTION_SOCK_ADDR, &lo,
                                            MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "prog_mhd_modes_linked: libmicrohttpd did not start in mode %s\n", mode);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    printf("port=%u\n", di ? (unsigned)di->port : 0u);
    fflush(stdout);
    while (!atomic_load(&stop)) {
        if (!external) {
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
            continue;
        }
        fd_set rs, ws, es;
        FD_ZERO(&rs);
        FD_ZERO(&ws);
        FD_ZERO(&es);
        MHD_socket max = 0;
        MHD_get_fdset(d, &rs, &ws, &es, &max);
        struct timeval tv = {0, 50000};
        select(max + 1, &rs, &ws, &es, &tv);
        MHD_run(d);
    }
    pthread_join(t, NULL);
    if (flags & MHD_ALLOW_SUSPEND_RESUME) /* it brings the ITC quiescing needs */
        MHD_quiesce_daemon(d);
    pprof_mhd_release(d); /* profiles still running end here */
    for (int i = 0; external && i < 20; i++) { /* resumed connections get their answers */
        struct timespec ts = {0, 5000000};
        MHD_run(d);
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(d);
    printf("stopped\n");
    return 0;
}
