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
 */
#define _GNU_SOURCE
#include "threads.h"
#include "base/base.h"
#include "signals/signals.h"

#include <linux/capability.h>
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
        hdr.pid = 0;
        rc = syscall(SYS_capset, &hdr, data);
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
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + 1000000000;
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
    memset(req.data, 0, sizeof req.data);
    memcpy(req.data, data, words * sizeof req.data[0]);
    finish();
}

void pp_threads_mirror_prctl(int option, unsigned long arg)
{
    begin(OP_PRCTL);
    req.option = option;
    req.arg = arg;
    finish();
}
