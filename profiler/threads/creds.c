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
 * signal's handler (a dispatcher user, signals/) and answers by counting
 * into a word that also carries the request's generation, so a late answer
 * never counts for a newer one. A thread of the profiler's cloned but not
 * registered yet is waited for (a second at most) and asked too; one that
 * registers later matches the thread that made the last change itself
 * (pp_threads_creds_join).
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
static struct {
    _Atomic uint32_t seq; /* odd while `want` is written */
    struct creds want;
} req;
/* The last state matched and the thread it was read from, for threads of
 * the profiler's that register later (under match_lock). */
static struct creds kept;
static int kept_valid, kept_tid;
static _Atomic int starting;      /* threads of the profiler's cloned, not yet registered */
static _Atomic uint64_t answers;  /* generation << 32 | answers so far */
static _Atomic uint32_t failures; /* answers whose change the kernel refused */
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

/* A match request: the requested state in this thread. async-signal-safe */
static int on_creds_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    uint32_t seq;
    struct creds want;
    for (int tries = 0;; tries++) { /* the writer is another thread: it finishes */
        seq = atomic_load(&req.seq);
        if (seq & 1) {
            if (tries > 100000)
                return 1;
            continue;
        }
        want = req.want;
        if (atomic_load(&req.seq) == seq)
            break;
    }
    if (take_creds(&want) != 0)
        atomic_fetch_add(&failures, 1);
    uint64_t w = atomic_load(&answers);
    while ((uint32_t)(w >> 32) == seq / 2 && !atomic_compare_exchange_weak(&answers, &w, w + 1))
        ;
    return 1;
}

static void pause_200us(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

/* Sends the request now in `req` to every own thread but the caller and
 * waits a second at most for their answers; returns how many did not
 * answer or could not match. Called with match_lock held. */
static int send_and_wait(void)
{
    /* A thread of the profiler's cloned before now may have other
     * credentials: it is asked once it registers (it registers before it
     * takes match_lock). */
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
    while (atomic_load(&starting) > 0 && pp_now_ns(CLOCK_MONOTONIC) < end)
        pause_200us();
    int tids[MAX_OWN], me = (int)syscall(SYS_gettid);
    int n = pp_threads_list_own(tids, MAX_OWN), sent = 0;
    if (n == 0 || (n == 1 && tids[0] == me))
        return atomic_load(&starting) > 0;
    if (!atomic_exchange(&registered, 1)) {
        pp_signal_register(PP_SIG_QUEUED, CREDS_MAGIC, on_creds_signal);
        pp_signal_install();
    }
    uint32_t gen = atomic_load(&req.seq) / 2;
    atomic_store(&answers, (uint64_t)gen << 32);
    atomic_store(&failures, 0);
    int unsent = 0;
    for (int i = 0; i < n; i++) {
        if (tids[i] == me)
            continue;
        if (pp_signal_queue(tids[i], CREDS_MAGIC) == 0)
            sent++;
        else if (syscall(SYS_tgkill, getpid(), tids[i], 0) == 0)
            unsent++; /* alive, not reached */
    }
    end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
    while ((int)(uint32_t)atomic_load(&answers) < sent && pp_now_ns(CLOCK_MONOTONIC) < end)
        pause_200us();
    return unsent + sent - (int)(uint32_t)atomic_load(&answers) + (int)atomic_load(&failures);
}

int pp_threads_creds_match(void)
{
    struct creds now;
    if (read_creds(0, &now) != 0)
        return 0; /* nothing to match against */
    pthread_mutex_lock(&match_lock);
    atomic_fetch_add(&req.seq, 1);
    req.want = now;
    atomic_fetch_add(&req.seq, 1);
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
}
