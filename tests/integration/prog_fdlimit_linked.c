/* prog_fdlimit_linked.c: a program that serves /debug/pprof/ and takes
 * every file descriptor it may have.
 *
 * Its limit is lowered to 256 descriptors at start. SIGUSR1: it opens
 * /dev/null until open fails with EMFILE, prints "full=N" (N descriptors
 * taken), and from then on takes every descriptor that frees up, every
 * millisecond. SIGUSR2: it stops taking them, gives back the number given
 * as its first argument (default 8), prints "freed=K", and a thread starts
 * spinning in spin_for_profile so that a CPU profile has samples. SIGTERM
 * ends it.
 */
#define _GNU_SOURCE
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static atomic_int spinning, taking;
static int fds[256];
static int nfds; /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Opens /dev/null until no descriptor is left. */
static void take_all(void)
{
    int fd;
    pthread_mutex_lock(&lock);
    while (nfds < 256 && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        fds[nfds++] = fd;
    pthread_mutex_unlock(&lock);
}

static void *taker(void *arg)
{
    (void)arg;
    for (;;) {
        if (atomic_load(&taking))
            take_all();
        usleep(1000);
    }
    return NULL;
}
static volatile double sink;

__attribute__((noinline)) static void spin_for_profile(void)
{
    double x = 1;
    for (int i = 0; i < 100000; i++)
        x = x * 1.0000001 + 1.0 / (x + i);
    sink += x;
}

static void *spinner(void *arg)
{
    (void)arg;
    for (;;) {
        if (atomic_load(&spinning))
            spin_for_profile();
        else
            usleep(10000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int give_back = argc > 1 ? atoi(argv[1]) : 8;
    struct rlimit rl = {256, 256};
    setrlimit(RLIMIT_NOFILE, &rl);
    sigset_t set;
    int more[] = {SIGUSR1, SIGUSR2};
    serve_prepare(&set, more, 2);
    pprof_server_config cfg = {.addr = "127.0.0.1:0"};
    if (serve_start("prog_fdlimit_linked", &cfg) != 0)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, spinner, NULL);
    pthread_create(&t, NULL, taker, NULL);
    serve_announce();
    for (;;) {
        int sig = serve_wait(&set);
        if (sig == SIGUSR1) {
            take_all();
            atomic_store(&taking, 1);
            printf("full=%d\n", nfds);
        } else if (sig == SIGUSR2) {
            atomic_store(&taking, 0);
            usleep(5000); /* the taker's last pass is over */
            pthread_mutex_lock(&lock);
            int k = 0;
            for (; k < give_back && nfds > 0; k++)
                close(fds[--nfds]);
            pthread_mutex_unlock(&lock);
            atomic_store(&spinning, 1);
            printf("freed=%d\n", k);
        } else {
            break;
        }
        fflush(stdout);
    }
    return 0;
}
