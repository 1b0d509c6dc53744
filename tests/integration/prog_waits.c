/* prog_waits.c: every kind of wait with a timeout, timed.
 *
 * It knows nothing of libpprof (test_waits.sh preloads it, and runs it
 * without as the control). One thread per kind waits for something that
 * never comes, with a timeout of MS milliseconds, again and again for
 * SECONDS (poll_inf and epoll_inf: with no timeout, for a timerfd of
 * their own that fires MS milliseconds after the wait began); a second thread per kind burns a little CPU between its waits
 * (so that profilers find it running and signal it). Each wait's result
 * and time are checked against what the call promises: a timeout result
 * (0, or ETIMEDOUT/EAGAIN where the call says so), never EINTR, never
 * before the deadline, and the time past the deadline is recorded. One
 * line per kind at the end:
 *   kind=NAME waits=N eintr=N wrong=N early=N late=N over_us_max=N
 * late counts waits that ended more than 2 ms past their deadline.
 * Usage: prog_waits SECONDS MS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { POLL, PPOLL, SELECT, PSELECT, EPOLL_WAIT, EPOLL_PWAIT, EPOLL_PWAIT2, NANOSLEEP, NANOSLEEP_REM,
       CLOCK_NANOSLEEP, USLEEP, FUTEX, SEM_TIMEDWAIT, COND_TIMEDWAIT, SIGTIMEDWAIT, RECV_TIMEO, POLL_INF,
       EPOLL_INF, NKINDS };
static const char *names[NKINDS] = {"poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait",
                                    "epoll_pwait2", "nanosleep", "nanosleep_rem", "clock_nanosleep", "usleep",
                                    "futex", "sem_timedwait", "cond_timedwait", "sigtimedwait", "recv_timeo",
                                    "poll_inf", "epoll_inf"};

typedef struct {
    _Atomic long waits, eintr, wrong, early, late, over_max;
} stats;

static stats st[NKINDS];
static double seconds;
static int ms;
static int pipefd[2], ep, sock[2];
static sem_t sem;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static _Atomic int futex_word;
static struct timespec start;

static int64_t now_ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static struct timespec add_ns(struct timespec t, int64_t ns)
{
    int64_t v = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec + ns;
    return (struct timespec){v / 1000000000, v % 1000000000};
}

/* The calling thread's timerfd, armed to fire in MS ms, and an epoll
 * set that holds it (made on first use); -1 when they cannot be made. */
static int arm_timer(int *epfd)
{
    static __thread int tfd = -1, tep = -1;
    if (tfd < 0) {
        struct epoll_event ev = {.events = EPOLLIN};
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        tep = epoll_create1(EPOLL_CLOEXEC);
        if (tfd < 0 || tep < 0 || epoll_ctl(tep, EPOLL_CTL_ADD, tfd, &ev))
            return -1;
    }
    struct itimerspec its = {{0, 0}, {0, (long)ms * 1000000}};
    if (timerfd_settime(tfd, 0, &its, NULL))
        return -1;
    *epfd = tep;
    return tfd;
}

/* A wait with no timeout that ended with rc: 1 when its timer fired (and
 * was read), 0 for another result, -1 for EINTR. */
static int fired(int rc, int tfd)
{
    uint64_t n;
    if (rc < 0)
        return errno == EINTR ? -1 : 0;
    return rc == 1 && read(tfd, &n, sizeof n) == (ssize_t)sizeof n && n == 1;
}

/* One wait of kind k. Returns 1 when the result is the timeout's, 0 for
 * another result, -1 for EINTR. */
static int wait_once(int k)
{
    struct pollfd p = {pipefd[0], POLLIN, 0};
    struct timespec ts = {0, (long)ms * 1000000}, rem;
    struct timeval tv = {0, ms * 1000};
    struct epoll_event ev;
    fd_set set;
    sigset_t none, usr;
    sigemptyset(&none);
    int rc;
    switch (k) {
    case POLL:
        rc = poll(&p, 1, ms);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case PPOLL:
        rc = ppoll(&p, 1, &ts, NULL);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case SELECT:
        FD_ZERO(&set);
        FD_SET(pipefd[0], &set);
        rc = select(pipefd[0] + 1, &set, NULL, NULL, &tv);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case PSELECT:
        FD_ZERO(&set);
        FD_SET(pipefd[0], &set);
        rc = pselect(pipefd[0] + 1, &set, NULL, NULL, &ts, NULL);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case EPOLL_WAIT:
        rc = epoll_wait(ep, &ev, 1, ms);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case EPOLL_PWAIT:
        rc = epoll_pwait(ep, &ev, 1, ms, &none);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case EPOLL_PWAIT2:
        rc = epoll_pwait2(ep, &ev, 1, &ts, &none);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case NANOSLEEP:
        rc = nanosleep(&ts, NULL);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case NANOSLEEP_REM:
        rc = nanosleep(&ts, &rem);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case CLOCK_NANOSLEEP:
        rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        return rc == 0 ? 1 : rc == EINTR ? -1 : 0;
    case USLEEP:
        rc = usleep((useconds_t)ms * 1000);
        return rc == 0 ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case FUTEX:
        rc = (int)syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        return rc < 0 && errno == ETIMEDOUT ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case SEM_TIMEDWAIT: {
        struct timespec dl = add_ns((struct timespec){0, 0}, now_ns(CLOCK_REALTIME) + (int64_t)ms * 1000000);
        rc = sem_timedwait(&sem, &dl);
        return rc < 0 && errno == ETIMEDOUT ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    }
    case COND_TIMEDWAIT: {
        struct timespec dl = add_ns((struct timespec){0, 0}, now_ns(CLOCK_REALTIME) + (int64_t)ms * 1000000);
        pthread_mutex_lock(&mu);
        rc = pthread_cond_timedwait(&cv, &mu, &dl);
        pthread_mutex_unlock(&mu);
        return rc == ETIMEDOUT ? 1 : rc == EINTR ? -1 : 0;
    }
    case SIGTIMEDWAIT:
        sigemptyset(&usr);
        sigaddset(&usr, SIGUSR2); /* blocked in every thread, never sent */
        rc = sigtimedwait(&usr, NULL, &ts);
        return rc < 0 && errno == EAGAIN ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    case RECV_TIMEO: {
        char c;
        rc = (int)recv(sock[0], &c, 1, 0);
        return rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 1 : rc < 0 && errno == EINTR ? -1 : 0;
    }
    case POLL_INF:
    case EPOLL_INF: {
        int tep, tfd = arm_timer(&tep);
        if (tfd < 0)
            return 0;
        struct pollfd tp = {tfd, POLLIN, 0};
        rc = k == POLL_INF ? poll(&tp, 1, -1) : epoll_wait(tep, &ev, 1, -1);
        return fired(rc, tfd);
    }
    }
    return 0;
}

static volatile double sink;

static void *waiter(void *arg)
{
    intptr_t v = (intptr_t)arg;
    int k = (int)(v >> 1), busy = (int)(v & 1);
    stats *s = &st[k];
    while ((now_ns(CLOCK_MONOTONIC) - ((int64_t)start.tv_sec * 1000000000 + start.tv_nsec)) / 1e9 < seconds) {
        if (busy) { /* a little CPU between waits: found running, signalled */
            double x = 1;
            for (int i = 0; i < 20000; i++)
                x = x * 1.0000001 + 1e-9;
            sink = x;
        }
        int64_t clk = k == SEM_TIMEDWAIT || k == COND_TIMEDWAIT ? CLOCK_REALTIME : CLOCK_MONOTONIC;
        int64_t t0 = now_ns((clockid_t)clk);
        int r = wait_once(k);
        int64_t took = now_ns((clockid_t)clk) - t0, over = took - (int64_t)ms * 1000000;
        s->waits++;
        if (r < 0)
            s->eintr++;
        else if (r == 0)
            s->wrong++;
        else if (over < -50000) /* 50 us: the clocks' reads around the call */
            s->early++;
        else if (over > 2000000)
            s->late++;
        if (r > 0 && over > s->over_max)
            s->over_max = over;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    seconds = argc > 1 ? atof(argv[1]) : 5;
    ms = argc > 2 ? atoi(argv[2]) : 3;
    sigset_t usr;
    sigemptyset(&usr);
    sigaddset(&usr, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr, NULL);
    if (pipe(pipefd) || (ep = epoll_create1(0)) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sock)) {
        perror("setup");
        return 1;
    }
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev);
    struct timeval tv = {0, ms * 1000};
    setsockopt(sock[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sem_init(&sem, 0, 0);
    clock_gettime(CLOCK_MONOTONIC, &start);
    pthread_t t[2 * NKINDS];
    for (int k = 0; k < NKINDS; k++)
        for (int b = 0; b < 2; b++)
            pthread_create(&t[2 * k + b], NULL, waiter, (void *)(intptr_t)(k << 1 | b));
    printf("ready pid=%d\n", getpid());
    fflush(stdout);
    for (int i = 0; i < 2 * NKINDS; i++)
        pthread_join(t[i], NULL);
    for (int k = 0; k < NKINDS; k++)
        printf("kind=%s waits=%ld eintr=%ld wrong=%ld early=%ld late=%ld over_us_max=%ld\n", names[k],
               (long)st[k].waits, (long)st[k].eintr, (long)st[k].wrong, (long)st[k].early, (long)st[k].late,
               (long)st[k].over_max / 1000);
    fflush(stdout);
    return 0;
}
