/* creds.c: the profiler's threads keep the program's capabilities.
 *
 * Capabilities and the securebits (with "keep capabilities") are per
 * thread in Linux, while the C library makes setuid, setgid and setgroups
 * in every thread of the process and aborts it when one thread's result
 * differs from the caller's. A thread of the profiler's that still has
 * other capabilities than the program's thread (it missed a capset, or was
 * cloned before a setresuid gave the program's thread its permitted set
 * back) would make such a call fail and the C library abort the program.
 *
 * So the profiler's threads match the calling thread's state, as it is
 * then, read with capget and PR_GET_SECUREBITS: after the program's capset
 * and prctl(PR_SET_KEEPCAPS, PR_SET_SECUREBITS), so that they never keep a
 * capability the program dropped, and before each of its setuid, setgid
 * and setgroups family calls (interpose/creds_hooks.c), whatever changed
 * since. Each thread of the profiler's takes the request in the profiling
 * signal's handler (a dispatcher user, signals/) and marks its entry in
 * the request answered. The kernel keeps one pending signal of a kind per
 * thread: a request sent while the thread's CPU timer signal waits for it
 * to run is lost, so the request goes again every 2 ms to the threads that
 * have not answered (a real-time profiling signal is queued every time:
 * it goes again only when it could not be sent). A request is open only
 * while its caller waits: an answer that comes after (a thread that
 * blocked the signal past the second the caller waits) changes nothing,
 * since the caller's state has changed since. A thread of the profiler's
 * cloned but not registered yet is waited for (a second at most) and
 * asked too; one that registers later matches the thread that made the
 * last change itself (pp_threads_creds_join).
 */
#define _GNU_SOURCE
#include "threads.h"
#include "base/base.h"
#include "signals/signals.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CREDS_MAGIC 0x70706372
#define MAX_OWN 256

/* A thread's capabilities and securebits. */
struct creds {
    struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
    int securebits;
};

static pthread_mutex_t match_lock = PTHREAD_MUTEX_INITIALIZER;
/* The request being answered: written under match_lock while `open` is
 * 0, read by the handlers while it is 1. */
static struct {
    _Atomic int open; /* the caller waits for answers */
    _Atomic int busy; /* handlers that may be reading or answering it */
    struct creds want;
    int n;
    int tids[MAX_OWN];                  /* the threads asked */
    _Atomic unsigned char state[MAX_OWN]; /* ASKED, then MATCHED, REFUSED or GONE */
    unsigned char sent[MAX_OWN];        /* the caller's: queued at least once */
} req;
enum { ASKED, MATCHED, REFUSED, GONE };
/* The last state matched and the thread it was read from, for threads of
 * the profiler's that register later (under match_lock). */
static struct creds kept;
static int kept_valid, kept_tid;
static _Atomic int starting;      /* threads of the profiler's cloned, not yet registered */
static _Atomic int registered;

/* Thread tid's capabilities (0: the calling thread's, with its securebits;
 * another thread's securebits cannot be read and are left). async-signal-safe */
static int read_creds(int tid, struct creds *c)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, tid};
    if (syscall(SYS_capget, &h, c->caps) != 0)
        return -1;
    if (tid == 0) {
        long b = syscall(SYS_prctl, PR_GET_SECUREBITS, 0UL, 0UL, 0UL, 0UL);
        if (b < 0)
            return -1;
        c->securebits = (int)b;
    }
    return 0;
}

/* Gives the calling thread the state `want`: securebits first (setting
 * them needs CAP_SETPCAP, which the capset may drop), then capabilities;
 * only what differs. -1 when the kernel refused. async-signal-safe */
static int take_creds(const struct creds *want)
{
    struct creds have;
    if (read_creds(0, &have) != 0)
        return -1;
    long rc = 0;
    if (have.securebits != want->securebits) {
        if ((have.securebits ^ want->securebits) == SECBIT_KEEP_CAPS)
            rc = syscall(SYS_prctl, PR_SET_KEEPCAPS, (unsigned long)!!(want->securebits & SECBIT_KEEP_CAPS), 0UL,
                         0UL, 0UL);
        else
            rc = syscall(SYS_prctl, PR_SET_SECUREBITS, (unsigned long)want->securebits, 0UL, 0UL, 0UL);
    }
    if (memcmp(have.caps, want->caps, sizeof have.caps) != 0) {
        struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
        memcpy(caps, want->caps, sizeof caps);
        rc |= syscall(SYS_capset, &h, caps);
    }
    return rc != 0 ? -1 : 0;
}

/* A match request: the requested state in this thread, once.
 * async-signal-safe */
static int on_creds_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    atomic_fetch_add(&req.busy, 1); /* before `open` is read: the caller waits for it to fall */
    if (atomic_load(&req.open)) {
        int me = (int)syscall(SYS_gettid);
        for (int i = 0; i < req.n; i++)
            if (req.tids[i] == me && atomic_load(&req.state[i]) == ASKED) {
                atomic_store(&req.state[i], take_creds(&req.want) == 0 ? MATCHED : REFUSED);
                break;
            }
    }
    atomic_fetch_sub(&req.busy, 1);
    return 1;
}

static void pause_200us(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

/* Sends the request to thread i of the request, unless it is gone. */
static void ask(int i)
{
    if (pp_signal_queue(req.tids[i], CREDS_MAGIC) == 0)
        req.sent[i] = 1;
    else if (syscall(SYS_tgkill, getpid(), req.tids[i], 0) != 0)
        atomic_store(&req.state[i], GONE); /* it exited since it was listed */
}

/* Sends the request in req.want to every own thread but the caller, again
 * every 2 ms to those that have not answered, and waits a second at most
 * for their answers; returns how many did not answer or could not match.
 * Called with match_lock held. */
static int send_and_wait(void)
{
    /* A thread of the profiler's cloned before now may have other
     * credentials: it is asked once it registers (it registers before it
     * takes match_lock). */
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
    while (atomic_load(&starting) > 0 && pp_now_ns(CLOCK_MONOTONIC) < end)
        pause_200us();
    int tids[MAX_OWN], me = (int)syscall(SYS_gettid);
    int n = pp_threads_list_own(tids, MAX_OWN);
    req.n = 0;
    for (int i = 0; i < n; i++)
        if (tids[i] != me) {
            req.tids[req.n] = tids[i];
            req.sent[req.n] = 0;
            atomic_store(&req.state[req.n++], ASKED);
        }
    if (req.n == 0)
        return atomic_load(&starting) > 0;
    if (!atomic_exchange(&registered, 1)) {
        pp_signal_register(PP_SIG_QUEUED, CREDS_MAGIC, on_creds_signal);
        pp_signal_install();
    }
    atomic_store(&req.open, 1);
    int drops = pp_signal_drops();
    end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
    for (int round = 0;; round++) {
        int waiting = 0;
        for (int i = 0; i < req.n; i++)
            if (atomic_load(&req.state[i]) == ASKED) {
                waiting++;
                if (round % 10 == 0 && (drops || !req.sent[i]))
                    ask(i);
            }
        if (!waiting || pp_now_ns(CLOCK_MONOTONIC) >= end)
            break;
        pause_200us();
    }
    atomic_store(&req.open, 0);
    /* A handler that saw it open finishes (a few system calls; a second
     * at most, for a thread stopped inside one). */
    end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
    while (atomic_load(&req.busy) && pp_now_ns(CLOCK_MONOTONIC) < end)
        pause_200us();
    int unmatched = 0;
    for (int i = 0; i < req.n; i++) {
        int st = atomic_load(&req.state[i]);
        unmatched += st == ASKED || st == REFUSED;
    }
    return unmatched;
}

int pp_threads_creds_match(void)
{
    struct creds now;
    if (read_creds(0, &now) != 0)
        return 0; /* nothing to match against */
    pthread_mutex_lock(&match_lock);
    req.want = now;
    kept = now;
    kept_valid = 1;
    kept_tid = (int)syscall(SYS_gettid);
    int unmatched = send_and_wait();
    pthread_mutex_unlock(&match_lock);
    return unmatched;
}

void pp_threads_creds_starting(int delta)
{
    atomic_fetch_add(&starting, delta);
}

void pp_threads_creds_join(void)
{
    pthread_mutex_lock(&match_lock); /* after a match in progress */
    if (kept_valid) {
        /* The thread that made the last change, as it is now (a setresuid
         * since may have given it its permitted set back), else the main
         * thread, else the state then. */
        struct creds want = kept;
        int alive = syscall(SYS_tgkill, getpid(), kept_tid, 0) == 0; /* a thread of this process */
        if (!(alive && read_creds(kept_tid, &want) == 0) && read_creds(getpid(), &want) != 0)
            want = kept;
        take_creds(&want);
    }
    pthread_mutex_unlock(&match_lock);
}

void pp_threads_creds_fork_child(void)
{
    match_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    atomic_store(&starting, 0); /* the parent's starting threads are not the child's */
    atomic_store(&req.open, 0);  /* nor its request, nor the handlers on it */
    atomic_store(&req.busy, 0);
}
