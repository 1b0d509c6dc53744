/* creds.c: the program's changes to its own thread's credentials, made in
 * the profiler's threads too.
 *
 * Capabilities and the "keep capabilities" bits are per thread in Linux,
 * while the C library makes setuid, setgid and setgroups in every thread
 * of the process and aborts it when one thread's result differs from the
 * caller's. A program that drops root the way setpriv(1) does (keep
 * capabilities, setresuid, capset to raise CAP_SETGID again, setresgid)
 * would be killed by the first thread of the profiler's that still follows
 * the old rules. interpose/creds_hooks.c sees the program's capset and
 * prctl calls; this file repeats each in the profiler's own threads, which
 * take the request in the profiling signal's handler (a dispatcher user,
 * signals/) and answer by counting into a word that also carries the
 * request's generation, so a late answer never counts for a newer one.
 * A thread of the profiler's that was cloned before a change copied its
 * creator's credentials then: a mirror waits until every such thread has
 * registered, and asks it. One that registers after a mirror listed the
 * threads (a child of a thread of the profiler's that had not answered
 * yet) makes the changes kept so far itself (pp_threads_creds_join).
 */
#define _GNU_SOURCE
#include "threads.h"
#include "base/base.h"
#include "signals/signals.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CREDS_MAGIC 0x70706372
#define MAX_OWN 256

enum { OP_CAPSET = 1, OP_PRCTL = 2 };

static pthread_mutex_t mirror_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    _Atomic uint32_t seq; /* odd while the request below is written */
    int op;
    struct __user_cap_header_struct hdr;
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    int option;
    unsigned long arg;
} req;
/* The program's changes so far, for the profiler's threads that start
 * later: a thread copies its creator's credentials when it is cloned, and
 * one cloned before a change but registered after it was not asked.
 * Under mirror_lock. */
static struct {
    int capset;                       /* the last capset, below */
    struct __user_cap_header_struct hdr;
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    int keepcaps, securebits;         /* set: the last value, below */
    unsigned long keepcaps_arg, securebits_arg;
    int keepcaps_last;                /* PR_SET_KEEPCAPS came after PR_SET_SECUREBITS */
} kept;
static _Atomic int starting;      /* threads of the profiler's cloned, not yet registered */
static _Atomic uint64_t answers;  /* generation << 32 | answers so far */
static _Atomic uint32_t failures; /* answers whose change the kernel refused */
static _Atomic int registered;

/* A mirror request: the same change in this thread. async-signal-safe */
static int on_creds_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    uint32_t seq;
    int op, option;
    unsigned long arg;
    struct __user_cap_header_struct hdr;
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    for (int tries = 0;; tries++) { /* the writer is another thread: it finishes */
        seq = atomic_load(&req.seq);
        if (seq & 1) {
            if (tries > 100000)
                return 1;
            continue;
        }
        op = req.op;
        hdr = req.hdr;
        memcpy(data, req.data, sizeof data);
        option = req.option;
        arg = req.arg;
        if (atomic_load(&req.seq) == seq)
            break;
    }
    long rc = 0;
    if (op == OP_CAPSET) {
        rc = syscall(SYS_capset, &hdr, data); /* hdr.pid 0: this thread */
    } else if (op == OP_PRCTL) {
        rc = syscall(SYS_prctl, option, arg, 0UL, 0UL, 0UL);
    }
    if (rc != 0)
        atomic_fetch_add(&failures, 1);
    uint64_t w = atomic_load(&answers);
    while ((uint32_t)(w >> 32) == seq / 2 && !atomic_compare_exchange_weak(&answers, &w, w + 1))
        ;
    return 1;
}

/* Sends the request now in `req` to every own thread but the caller and
 * waits for their answers. Called with mirror_lock held. */
static void send_and_wait(void)
{
    /* A thread of the profiler's cloned before the change has the old
     * credentials: it is asked once it registers (it registers before it
     * takes mirror_lock). */
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
    while (atomic_load(&starting) > 0 && pp_now_ns(CLOCK_MONOTONIC) < end) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    int tids[MAX_OWN], me = (int)syscall(SYS_gettid);
    int n = pp_threads_list_own(tids, MAX_OWN), sent = 0;
    if (n == 0 || (n == 1 && tids[0] == me))
        return;
    if (!atomic_exchange(&registered, 1)) {
        pp_signal_register(PP_SIG_QUEUED, CREDS_MAGIC, on_creds_signal);
        pp_signal_install();
    }
    uint32_t gen = atomic_load(&req.seq) / 2;
    atomic_store(&answers, (uint64_t)gen << 32);
    atomic_store(&failures, 0);
    for (int i = 0; i < n; i++)
        if (tids[i] != me && pp_signal_queue(tids[i], CREDS_MAGIC) == 0)
            sent++;
    end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
    while ((int)(uint32_t)atomic_load(&answers) < sent && pp_now_ns(CLOCK_MONOTONIC) < end) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    int answered = (int)(uint32_t)atomic_load(&answers);
    if (answered < sent || atomic_load(&failures))
        fprintf(stderr,
                "libpprof: %d of the profiler's %d threads did not take the program's change of "
                "capabilities; a later setuid or setgid may abort the program\n",
                sent - answered + (int)atomic_load(&failures), sent);
}

/* Starts writing a request (seq odd). */
static void begin(int op)
{
    pthread_mutex_lock(&mirror_lock);
    atomic_fetch_add(&req.seq, 1);
    req.op = op;
}

/* Ends writing it (seq even: a new generation), sends it and waits. */
static void finish(void)
{
    atomic_fetch_add(&req.seq, 1);
    send_and_wait();
    pthread_mutex_unlock(&mirror_lock);
}

void pp_threads_mirror_capset(const void *hdr, const void *data)
{
    const struct __user_cap_header_struct *h = hdr;
    size_t words = h->version == _LINUX_CAPABILITY_VERSION_1 ? 1 : _LINUX_CAPABILITY_U32S_3;
    begin(OP_CAPSET);
    req.hdr = *h;
    req.hdr.pid = 0;
    memset(req.data, 0, sizeof req.data);
    memcpy(req.data, data, words * sizeof req.data[0]);
    kept.capset = 1;
    kept.hdr = req.hdr;
    memcpy(kept.data, req.data, sizeof kept.data);
    finish();
}

void pp_threads_mirror_prctl(int option, unsigned long arg)
{
    begin(OP_PRCTL);
    req.option = option;
    req.arg = arg;
    if (option == PR_SET_KEEPCAPS) {
        kept.keepcaps = 1;
        kept.keepcaps_arg = arg;
    } else {
        kept.securebits = 1;
        kept.securebits_arg = arg;
    }
    kept.keepcaps_last = option == PR_SET_KEEPCAPS;
    finish();
}

void pp_threads_creds_starting(int delta)
{
    atomic_fetch_add(&starting, delta);
}

void pp_threads_creds_join(void)
{
    pthread_mutex_lock(&mirror_lock); /* after a mirror in progress */
    if (kept.securebits && !kept.keepcaps_last)
        syscall(SYS_prctl, PR_SET_SECUREBITS, kept.securebits_arg, 0UL, 0UL, 0UL);
    if (kept.keepcaps)
        syscall(SYS_prctl, PR_SET_KEEPCAPS, kept.keepcaps_arg, 0UL, 0UL, 0UL);
    if (kept.securebits && kept.keepcaps_last)
        syscall(SYS_prctl, PR_SET_SECUREBITS, kept.securebits_arg, 0UL, 0UL, 0UL);
    if (kept.capset) {
        struct __user_cap_header_struct hdr = kept.hdr;
        syscall(SYS_capset, &hdr, kept.data);
    }
    pthread_mutex_unlock(&mirror_lock);
}

void pp_threads_creds_fork_child(void)
{
    mirror_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    atomic_store(&starting, 0); /* the parent's starting threads are not the child's */
}
