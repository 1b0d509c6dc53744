/* prog_eventloop_linked.c: threads that wait as event loops do, with 1 ms
 * timeouts, so a thread dump often finds them between two waits; and one
 * thread whose long wait the program breaks with its own signal.
 *
 *   loop-poll, loop-epoll, loop-sleep, loop-sem
 *       poll, epoll_wait, nanosleep and sem_timedwait for 1 ms, over and
 *       over; each EINTR is counted (none should come: nothing signals
 *       them but the dumps)
 *   own-signal
 *       polls with a 10 s timeout; every 20 ms, once the previous signal
 *       has broken its wait (two pending signals would be one) and the
 *       thread is inside poll again (/proc's syscall file says so: a signal
 *       sent before the call would be handled before it, and the call then
 *       waits its 10 s, with or without libpprof), the main thread sends it
 *       SIGUSR1 (a handler without SA_RESTART), and each must break the
 *       wait with EINTR; one whose EINTR has not come after 2 s is counted
 *       lost
 * Serves /debug/pprof/ and prints "port=P"; on SIGTERM prints
 * "eintr=N waits=W own_sent=S own_eintr=E own_lost=L" and exits.
 */
#define _GNU_SOURCE
#include "serve.h"

#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic long eintr, waits, own_sent, own_eintr;
static _Atomic int own_tid;
static sem_t never;

__attribute__((noinline)) static void loop_poll(void)
{
    for (;;)
        if (poll(NULL, 0, 1) < 0 && errno == EINTR)
            eintr++;
        else
            waits++;
}

__attribute__((noinline)) static void loop_epoll(void)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;
    for (;;)
        if (epoll_wait(ep, &ev, 1, 1) < 0 && errno == EINTR)
            eintr++;
        else
            waits++;
}

__attribute__((noinline)) static void loop_sleep(void)
{
    for (;;) {
        struct timespec ts = {0, 1000000};
        if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
            eintr++;
        else
            waits++;
    }
}

__attribute__((noinline)) static void loop_sem(void)
{
    for (;;) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        if (sem_timedwait(&never, &ts) < 0 && errno == EINTR)
            eintr++;
        else
            waits++;
    }
}

static void on_usr1(int sig)
{
    (void)sig;
}

__attribute__((noinline)) static void own_signal(void)
{
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
    atomic_store(&own_tid, (int)syscall(SYS_gettid));
    for (;;)
        if (poll(NULL, 0, 10000) < 0 && errno == EINTR)
            own_eintr++;
}

/* 1 if thread tid is inside poll (x86-64 system call 7). */
static int in_poll(int tid)
{
    char path[64], buf[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    int ok = f && fgets(buf, sizeof buf, f) && !strncmp(buf, "7 ", 2);
    if (f)
        fclose(f);
    return ok;
}

static void *run(void *arg)
{
    static const char *const names[] = {"loop-poll", "loop-epoll", "loop-sleep", "loop-sem", "own-signal"};
    static void (*const fns[])(void) = {loop_poll, loop_epoll, loop_sleep, loop_sem, own_signal};
    long i = (long)arg;
    pthread_setname_np(pthread_self(), names[i]);
    fns[i]();
    return NULL;
}

int main(int argc, char **argv)
{
    sigset_t set;
    int more[] = {SIGUSR1};
    serve_prepare(&set, more, 1); /* only own-signal unblocks SIGUSR1 */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART: the wait must end */
    sigaction(SIGUSR1, &sa, NULL);
    sem_init(&never, 0, 0);
    pprof_server_config cfg = {.addr = argc > 1 ? argv[1] : "127.0.0.1:0"};
    if (serve_start("prog_eventloop_linked", &cfg) != 0)
        return 1;
    pthread_t t[5];
    for (long i = 0; i < 5; i++)
        pthread_create(&t[i], NULL, run, (void *)i);
    serve_announce();
    sigdelset(&set, SIGUSR1);
    /* ticks the last signal's EINTR is late; signals lost; the count of
     * EINTRs the last signal is waited for to make */
    long behind = 0, own_lost = 0, expect = 0;
    for (;;) {
        struct timespec tick = {0, 20000000};
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT)
            break;
        if (atomic_load(&own_eintr) < expect) {
            if (++behind < 100)
                continue;
            own_lost++;
            expect = atomic_load(&own_eintr);
        }
        behind = 0;
        if (!atomic_load(&own_tid) || !in_poll(atomic_load(&own_tid)))
            continue;
        expect = atomic_load(&own_eintr) + 1;
        pthread_kill(t[4], SIGUSR1);
        own_sent++;
    }
    usleep(50000); /* the last signal's EINTR */
    printf("eintr=%ld waits=%ld own_sent=%ld own_eintr=%ld own_lost=%ld\n", atomic_load(&eintr),
           atomic_load(&waits), atomic_load(&own_sent), atomic_load(&own_eintr), own_lost);
    fflush(stdout);
    _exit(0);
}
