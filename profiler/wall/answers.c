/* answers.c: the stacks of running threads for the wall sampler, taken by
 * the threads themselves in the profiling signal's handler.
 *
 * The sampler sends each thread it saw running the profiling signal with
 * the value WALL_MAGIC (a user of the dispatcher, signals/: no handler of
 * its own) after putting the thread's id in a request slot. The handler
 * finds its slot by its id, walks its own stack with the unwinder, takes
 * a reference to its label set and copies its span, and the last answer
 * wakes the sampler (a futex). A slot holds its tid and state in one word,
 * so a late answer cannot take a slot handed to another thread since; the
 * sampler takes back the slots of threads that did not answer in time.
 * A wait the signal broke as the thread entered it is entered again by
 * the dispatcher (signals/restart.c), as for the CPU profile's signals;
 * a thread that was ready to run but not on a CPU as it was asked had
 * left any wait it was in, and the dispatcher is told so (a poll whose
 * time ran out is entered again without waiting).
 */
#define _GNU_SOURCE
#include "wall.h"
#include "arch/arch.h"
#include "base/base.h"
#include "model/model.h"
#include "signals/signals.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WALL_MAGIC 0x7070776c
enum { IDLE, WAITING, BUSY, DONE };
#define SLOT(tid, state) ((uint64_t)(uint32_t)(tid) << 8 | (state))

static struct {
    _Atomic uint64_t slot;
    int n, end;
    int64_t at_ns; /* when the handler ran */
    int in_kernel; /* stopped right after a system call instruction */
    const void *labels;
    pp_trace_snap trace;
    uint64_t pcs[PP_WALL_FRAMES];
} slots[PP_WALL_MAX_ASK];
static _Atomic int outstanding; /* requests not answered yet (the futex word) */
static _Atomic int registered;

/* A wall request: this thread's stack into its slot. async-signal-safe */
static int on_wall_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    int tid = (int)syscall(SYS_gettid);
    for (int i = 0; i < PP_WALL_MAX_ASK; i++) {
        uint64_t expected = SLOT(tid, WAITING);
        if (!atomic_compare_exchange_strong(&slots[i].slot, &expected, SLOT(tid, BUSY)))
            continue;
        slots[i].at_ns = pp_now_ns(CLOCK_MONOTONIC);
        slots[i].in_kernel = pp_arch_after_syscall(uc);
        slots[i].n = pp_unwind_signal(uc, slots[i].pcs, PP_WALL_FRAMES, &slots[i].end);
        slots[i].labels = pp_labels_current_ref();
        pp_trace_capture(&slots[i].trace);
        atomic_store(&slots[i].slot, SLOT(tid, DONE));
        if (atomic_fetch_sub(&outstanding, 1) == 1)
            syscall(SYS_futex, &outstanding, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    } /* else a late or stray request */
    return 1;
}

static void take(pp_wall_answer *a, int i, int64_t sent_ns)
{
    a->delay_ns = slots[i].at_ns - sent_ns;
    a->in_kernel = slots[i].in_kernel;
    a->npcs = slots[i].n;
    memcpy(a->pcs, slots[i].pcs, (size_t)slots[i].n * sizeof *a->pcs);
    if (slots[i].end)
        a->pcs[a->npcs++] = pp_pc_stack_end(slots[i].end);
    a->labels = slots[i].labels;
    a->trace = slots[i].trace;
    a->ok = 1;
}

static int64_t sent_at[PP_WALL_MAX_ASK];

void pp_wall_ask_one(pp_wall_answer *a, int i)
{
    if (!atomic_exchange(&registered, 1)) {
        pp_signal_register(PP_SIG_QUEUED, WALL_MAGIC, on_wall_signal);
        pp_signal_install();
    }
    a->ok = 0;
    a->labels = NULL;
    a->npcs = 0;
    a->delay_ns = 0;
    if (i == 0)
        atomic_store(&outstanding, 0);
    atomic_fetch_add(&outstanding, 1);
    atomic_store(&slots[i].slot, SLOT(a->tid, WAITING));
    sent_at[i] = pp_now_ns(CLOCK_MONOTONIC);
    if (pp_signal_queue(a->tid, WALL_MAGIC) != 0) { /* gone, or cannot be signalled */
        uint64_t expected = SLOT(a->tid, WAITING);
        if (atomic_compare_exchange_strong(&slots[i].slot, &expected, SLOT(0, IDLE)))
            atomic_fetch_sub(&outstanding, 1);
    }
}

void pp_wall_ask_wait(pp_wall_answer *a, int n, int64_t timeout_ns)
{
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + timeout_ns;
    for (;;) {
        int left = atomic_load(&outstanding);
        int64_t now = pp_now_ns(CLOCK_MONOTONIC);
        if (left <= 0 || now >= end)
            break;
        struct timespec ts = {(end - now) / 1000000000, (end - now) % 1000000000};
        syscall(SYS_futex, &outstanding, FUTEX_WAIT_PRIVATE, left, &ts, NULL, 0);
    }
    for (int i = 0; i < n; i++) {
        uint64_t expected = SLOT(a[i].tid, WAITING);
        if (atomic_compare_exchange_strong(&slots[i].slot, &expected, SLOT(0, IDLE)))
            continue; /* no answer: a late signal finds no slot */
        if (atomic_load(&slots[i].slot) == SLOT(0, IDLE))
            continue; /* could not be signalled */
        while (atomic_load(&slots[i].slot) != SLOT(a[i].tid, DONE)) /* the handler is finishing */
            sched_yield();
        take(&a[i], i, sent_at[i]);
        atomic_store(&slots[i].slot, SLOT(0, IDLE));
    }
}
