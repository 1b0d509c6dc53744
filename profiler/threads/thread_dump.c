/* thread_dump.c: the stacks of all live threads, without breaking their
 * system calls.
 *
 * A signal makes poll, epoll_wait, nanosleep, sem_wait and others return
 * EINTR even under SA_RESTART, so a dump must not signal a thread that is
 * waiting in the kernel. For each thread of /proc/self/task:
 *   - waiting in a system call (/proc/self/task/<tid>/syscall gives its
 *     number, user stack pointer and pc): walked from that pc and stack
 *     pointer, reading its stack through process_vm_readv; the frame
 *     pointer, which /proc does not show, is found by scanning the stack
 *     for the first saved-frame-pointer/return-address pair. No signal.
 *     Its labels are copied the same way from its label slot (and for the
 *     wall sampler its span from its trace-context slot), and kept only if
 *     the thread was still in the same call afterwards. Dumps show no
 *     span (a thread that answers the signal gives none either).
 *   - running or runnable: sent the profiling signal with a dump request
 *     (rt_tgsigqueueinfo, SI_QUEUE and a magic value); its handler walks
 *     the stack into the one answer slot. The dump waits up to 100 ms per
 *     thread and about 1 s in all; a thread that does not answer (it
 *     blocks the signal, or is stopped) gets a frame that says so, and the
 *     late signal is ignored when it arrives.
 * A thread seen running may enter a waiting call before the signal
 * arrives; the dispatcher sends it back into the call (pp_signal_restart_wait)
 * rather than let it fail with EINTR; one whose CPU clock stood still as it
 * was asked (ready to run, maybe woken from a wait) is told apart, so that
 * a poll whose time had run out does not wait its timeout again.
 * The profiler's own threads (its server, collector, samplers) are not
 * walked: they are listed by name, for the profile's one summary line.
 * One dump runs at a time.
 */
#define _GNU_SOURCE
#include "thread_dump.h"
#include "base/base.h"
#include "signals/signals.h"
#include "labels/labels.h"
#include "model/model.h"
#include "threads.h"
#include "unwind/unwind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define DUMP_MAGIC 0x70706474
#define PER_THREAD_NS 100000000ll
#define TOTAL_NS 1000000000ll
#define SCAN_WINDOW 4096
#define GUESSES 4 /* frame pointers a waiting thread's walk tries */

enum { IDLE, WAITING, BUSY, DONE };

/* The answer slot's tid and state in one word, so that a late handler
 * cannot take a slot that was handed to another thread meanwhile. */
#define SLOT(tid, state) ((uint64_t)(uint32_t)(tid) << 8 | (state))

static pp_mutex dump_lock = PP_MUTEX_INIT;
static struct {
    _Atomic uint64_t slot;
    int n, end;
    const void *labels;
    uint64_t pcs[PP_DUMP_FRAMES];
} answer;

/* A dump request (the signal dispatcher's user for DUMP_MAGIC): the
 * asked thread's stack into the answer slot. async-signal-safe */
static int on_dump_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    int tid = (int)syscall(SYS_gettid);
    uint64_t expected = SLOT(tid, WAITING);
    if (atomic_compare_exchange_strong(&answer.slot, &expected, SLOT(tid, BUSY))) {
        answer.n = pp_unwind_signal(uc, answer.pcs, PP_DUMP_FRAMES, &answer.end);
        answer.labels = pp_labels_current_ref();
        atomic_store(&answer.slot, SLOT(tid, DONE));
    } /* else a late or stray request */
    return 1;
}

static void free_stack(pp_thread_stack *t);

static int read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

/* Reads len bytes of this process's memory, or fails where a load would
 * fault (one iovec: a read that crosses into an unmapped page fails as a
 * whole). */
static int peek_bytes(uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* Reads 8 bytes of this process's memory, or fails where a load would fault. */
static int peek(uint64_t addr, uint64_t *v)
{
    return peek_bytes(addr, v, 8);
}

/* Copies the string at addr into buf, at most cap - 1 bytes, and ends it
 * with a NUL. It is read up to the end of its page first, then a page at
 * a time while no NUL came (a page boundary is where readable memory may
 * end); a string that runs into memory that cannot be read ends there.
 * Returns 0, or -1 (buf "") when not even its first byte can be read. */
static int copy_string(uint64_t addr, char *buf, size_t cap)
{
    size_t got = 0;
    buf[0] = '\0';
    while (got < cap - 1) {
        uint64_t at = addr + got;
        size_t len = 4096 - (at & 4095);
        if (len > cap - 1 - got)
            len = cap - 1 - got;
        if (!peek_bytes(at, buf + got, len))
            break;
        if (memchr(buf + got, 0, len))
            return 0;
        got += len;
    }
    buf[got] = '\0';
    return got ? 0 : -1;
}

/* Guesses at the frame pointer of a thread stopped at sp: the slots above
 * sp that hold a plausible saved frame pointer followed by a return
 * address just after a call, nearest first; at most max of them, their
 * count returned. The window is read one page at a time (a few system
 * calls, not one per word); the scan ends where the stack does. */
static int guess_fps(uint64_t sp, uint64_t *fps, int max)
{
    uint64_t win[SCAN_WINDOW / 8 + 1];
    uint64_t base = sp & ~7ull;
    size_t got = 0;
    while (got < sizeof win) {
        uint64_t at = base + got;
        size_t len = 4096 - (at & 4095);
        if (len > sizeof win - got)
            len = sizeof win - got;
        /* cppcheck-suppress legacyUninitvar ; win is where the read writes */
        struct iovec local = {(char *)win + got, len}, remote = {(void *)(uintptr_t)at, len};
        ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        if ((size_t)n < len)
            break;
    }
    int n = 0;
    for (size_t i = 0; i + 1 < got / 8 && n < max; i++) {
        uint64_t x = base + 8 * i, saved = win[i], ra = win[i + 1];
        if ((saved == 0 || (saved > x && saved < x + (1 << 20) && !(saved & 7))) && pp_unwind_after_call(ra))
            fps[n++] = x;
    }
    return n;
}

/* Frees a copied label array of n pairs. */
static void free_labels(pprof_label *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++) {
        free((char *)l[i].key);
        free((char *)l[i].value);
    }
    free(l);
}

/* Copies the pairs of the set a thread's labels slot points to. */
static void copy_labels(void *const *slot, pp_thread_stack *t)
{
    uint64_t set, head;
    if (!slot || !peek((uint64_t)(uintptr_t)slot, &set) || !set || !peek(set, &head))
        return;
    _Static_assert(PP_LABELS_N_OFFSET == 4, "the count is the upper half of the first word (x86-64)");
    uint32_t n = (uint32_t)(head >> 32);
    if (n == 0 || n > 64)
        return;
    pprof_label *l = calloc(n, sizeof *l);
    if (!l)
        return;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t kv[2];
        uint64_t pair = set + PP_LABELS_PAIRS_OFFSET + sizeof(pprof_label) * i;
        if (!peek(pair + offsetof(pprof_label, key), &kv[0]) || !peek(pair + offsetof(pprof_label, value), &kv[1]))
            goto fail;
        for (int k = 0; k < 2; k++) {
            char buf[256];
            if (copy_string(kv[k], buf, sizeof buf) < 0)
                goto fail;
            char *copy = strdup(buf);
            if (!copy)
                goto fail;
            if (k == 0)
                l[i].key = copy;
            else
                l[i].value = copy;
        }
    }
    t->labels = l;
    t->nlabels = n;
    return;
fail:
    free_labels(l, n);
}

/* Copies the trace context a thread's trace slot points to, by
 * pp_trace_capture's rules: none when there is none or its trace ID is
 * all zero; the span name cut at PP_SPAN_NAME_MAX - 1 bytes, "" when it
 * cannot be read. */
static void copy_trace(void *const *slot, pp_trace_snap *out)
{
    uint64_t at;
    pprof_trace_context c;
    out->on = 0;
    out->unit = 0;
    if (slot && !peek((uint64_t)(uintptr_t)(slot + 1), &out->unit)) /* the unit of work after it (labels.h) */
        out->unit = 0;
    if (!slot || !peek((uint64_t)(uintptr_t)slot, &at) || !at || !peek_bytes(at, &c, sizeof c))
        return;
    uint8_t any = 0;
    for (size_t i = 0; i < sizeof c.trace_id; i++)
        any |= c.trace_id[i];
    if (!any)
        return;
    memcpy(out->trace_id, c.trace_id, sizeof out->trace_id);
    memcpy(out->span_id, c.span_id, sizeof out->span_id);
    out->flags = c.trace_flags;
    out->span_name[0] = '\0';
    if (c.span_name)
        copy_string((uint64_t)(uintptr_t)c.span_name, out->span_name, sizeof out->span_name);
    out->on = 1;
}

static void copy_set(const void *set, pp_thread_stack *t)
{
    const pprof_label *pairs;
    size_t n = set ? pp_labels_pairs(set, &pairs) : 0;
    if (!n || !(t->labels = calloc(n, sizeof *t->labels)))
        return;
    for (size_t i = 0; i < n; i++) {
        t->labels[i].key = strdup(pairs[i].key);
        t->labels[i].value = strdup(pairs[i].value);
        if (!t->labels[i].key || !t->labels[i].value) { /* out of memory: no labels rather than half */
            free_labels(t->labels, i + 1);
            t->labels = NULL;
            return;
        }
    }
    t->nlabels = n;
}

static const pp_thread_entry *entry_of(const pp_thread_entry *reg, size_t nreg, int tid)
{
    for (size_t i = 0; i < nreg; i++)
        if (reg[i].tid == tid)
            return &reg[i];
    return NULL;
}

/* A thread waiting in the kernel: walked from /proc, no signal. Returns 0
 * if the thread is not waiting (it must be asked with a signal). */
/* Parses a /proc/<tid>/syscall line: 1 with the call's number, stack
 * pointer and pc when it waits in one, else 0. */
static int parse_syscall(const char *text, int *nr, uint64_t *sp, uint64_t *pc)
{
    char line[512];
    snprintf(line, sizeof line, "%s", text);
    if (!strncmp(line, "running", 7))
        return 0;
    char *fields[9];
    int nf = 0;
    for (char *save, *f = strtok_r(line, " \n", &save); f && nf < 9; f = strtok_r(NULL, " \n", &save))
        fields[nf++] = f;
    if (nf < 3)
        return 0;
    *nr = atoi(fields[0]);
    *sp = strtoull(fields[nf - 2], NULL, 0);
    *pc = strtoull(fields[nf - 1], NULL, 0);
    return *sp && *pc;
}

int pp_thread_syscall(int tid, int *nr, uint64_t *sp, uint64_t *pc)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    return read_file(path, line, sizeof line) > 0 && parse_syscall(line, nr, sp, pc);
}

int pp_thread_cpu(int tid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    if (read_file(path, line, sizeof line) <= 0)
        return -1;
    const char *p = strrchr(line, ')'); /* after the name, which may hold anything */
    if (!p)
        return -1;
    for (int field = 2; field < 39; field++) { /* field 39: the CPU it is on or queued for */
        p = strchr(p + 1, ' ');
        if (!p)
            return -1;
    }
    return atoi(p + 1);
}

int pp_thread_walk_waiting(int tid, pp_thread_stack *t, void *const *slot, void *const *trace_slot)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int nr;
    uint64_t sp, pc;
    if (read_file(path, line, sizeof line) <= 0 || !parse_syscall(line, &nr, &sp, &pc))
        return 0;
    char orig[512];
    memcpy(orig, line, sizeof orig);
    /* The frame pointer matters only to frames whose CFI finds their
     * caller through it: the nearest guess first, and while the walk
     * stops short of the thread's outermost frame (a pointer into a
     * frame's locals can look like a saved frame pointer), the next ones. */
    uint64_t fps[GUESSES], other[PP_DUMP_FRAMES];
    int nfps = guess_fps(sp, fps, GUESSES), end;
    t->npcs = pp_unwind_remote(pc, sp, nfps ? fps[0] : 0, t->pcs, PP_DUMP_FRAMES, &end);
    for (int i = 1; i < nfps && end != PP_UNWIND_WHOLE && end != PP_UNWIND_TRUNCATED; i++) {
        int e, n = pp_unwind_remote(pc, sp, fps[i], other, PP_DUMP_FRAMES, &e);
        if (e == PP_UNWIND_WHOLE || e == PP_UNWIND_TRUNCATED) {
            memcpy(t->pcs, other, (size_t)n * sizeof *other);
            t->npcs = n;
            end = e;
        }
    }
    if (end)
        t->pcs[t->npcs++] = pp_pc_stack_end(end);
    t->how = PP_DUMP_SYSCALL;
    t->syscall = nr;
    t->sp = sp;
    t->pc = pc;
    copy_labels(slot, t);
    copy_trace(trace_slot, &t->trace);
    /* Labels read while the thread ran on may belong to a set being freed,
     * a span to a scope that ended: keep them only if it is still in the
     * same call. */
    if ((t->nlabels || t->trace.on || t->trace.unit) &&
        (read_file(path, line, sizeof line) <= 0 || strcmp(line, orig))) {
        free_labels(t->labels, t->nlabels);
        t->labels = NULL;
        t->nlabels = 0;
        t->trace.on = 0;
        t->trace.unit = 0;
        return 2;
    }
    return 1;
}

/* A running thread: asked with a signal; waits up to `budget_ns`.
 * Returns 0 if the thread no longer exists. */
static int ask(int tid, pp_thread_stack *t, int64_t budget_ns)
{
    atomic_store(&answer.slot, SLOT(tid, WAITING));
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + (budget_ns < PER_THREAD_NS ? budget_ns : PER_THREAD_NS);
    int gone = 0;
    if (pp_signal_queue(tid, DUMP_MAGIC) == 0) {
        /* A request the kernel dropped (pp_signal_queue) goes again
         * every 2 ms until answered; a late copy finds no slot waiting. */
        int drops = pp_signal_drops();
        for (int i = 1; atomic_load(&answer.slot) != SLOT(tid, DONE) && pp_now_ns(CLOCK_MONOTONIC) < end; i++) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
            if (drops && i % 10 == 0 && atomic_load(&answer.slot) == SLOT(tid, WAITING))
                pp_signal_queue(tid, DUMP_MAGIC);
        }
    } else {
        gone = errno == ESRCH; /* it exited since the directory was read */
    }
    uint64_t expected = SLOT(tid, WAITING);
    if (atomic_compare_exchange_strong(&answer.slot, &expected, SLOT(0, IDLE))) {
        t->how = PP_DUMP_NO_ANSWER;
        t->pcs[0] = PP_PC_NO_ANSWER;
        t->npcs = 1;
        return !gone;
    }
    while (atomic_load(&answer.slot) != SLOT(tid, DONE)) /* the handler is finishing */
        sched_yield();
    memcpy(t->pcs, answer.pcs, (size_t)answer.n * sizeof *t->pcs);
    t->npcs = answer.n;
    if (answer.end)
        t->pcs[t->npcs++] = pp_pc_stack_end(answer.end);
    t->how = PP_DUMP_SIGNAL;
    copy_set(answer.labels, t);
    if (answer.labels)
        pp_labels_unref(answer.labels);
    atomic_store(&answer.slot, SLOT(0, IDLE));
    return 1;
}

void pp_thread_dump_fork_child(void)
{
    /* A dump that was running on another thread does not exist here. */
    dump_lock = (pp_mutex)PP_MUTEX_INIT;
    atomic_store(&answer.slot, SLOT(0, IDLE));
}

static void read_meta(int tid, pp_thread_stack *t)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    if (read_file(path, buf, sizeof buf) > 0) {
        buf[strcspn(buf, "\n")] = '\0';
        buf[sizeof t->name - 1] = '\0';
        memcpy(t->name, buf, sizeof t->name);
    }
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    if (read_file(path, buf, sizeof buf) > 0) {
        char *p = strrchr(buf, ')');
        if (p && p[1] == ' ')
            t->state = p[2];
    }
}

/* The process's thread ids: /proc/self/task, or when it cannot be read (a
 * chroot without /proc, no descriptor left) the registered threads.
 * Returns a malloc'd array and its length in *n, or NULL. */
static int *thread_ids(const pp_thread_entry *reg, size_t nreg, size_t *n)
{
    size_t cap = nreg + 64;
    int *ids = malloc(cap * sizeof *ids);
    *n = 0;
    if (!ids)
        return NULL;
    DIR *d = pp_fd_opendir("/proc/self/task");
    if (!d) {
        for (size_t i = 0; i < nreg; i++)
            ids[(*n)++] = reg[i].tid;
        return ids;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        int tid = atoi(e->d_name);
        if (tid <= 0)
            continue;
        if (*n == cap) {
            int *bigger = realloc(ids, 2 * cap * sizeof *ids);
            if (!bigger)
                break;
            ids = bigger;
            cap *= 2;
        }
        ids[(*n)++] = tid;
    }
    pp_fd_closedir(d);
    return ids;
}

__attribute__((noinline)) int pp_thread_dump(pp_thread_stack **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pp_signal_register(PP_SIG_QUEUED, DUMP_MAGIC, on_dump_signal);
    pp_signal_install();
    size_t nreg = 0, nids;
    pp_thread_entry *reg = pp_threads_copy(&nreg);
    if (!reg) /* out of memory: the threads from /proc alone */
        nreg = 0;
    int *ids = thread_ids(reg, nreg, &nids);
    pp_thread_stack *t = ids ? calloc(nids ? nids : 1, sizeof *t) : NULL;
    if (!t) {
        free(ids);
        free(reg);
        return pp_fail(PPROF_ENOMEM);
    }
    size_t count = 0;
    pp_mutex_lock(&dump_lock);
    int64_t end = pp_now_ns(CLOCK_MONOTONIC) + TOTAL_NS;
    int self = (int)syscall(SYS_gettid);
    uint64_t caller = (uint64_t)(uintptr_t)__builtin_return_address(0);
    for (size_t k = 0; k < nids; k++) {
        int tid = ids[k];
        pp_thread_stack *s = &t[count++];
        s->tid = tid;
        s->syscall = -1;
        read_meta(tid, s);
        const pp_thread_entry *e = entry_of(reg, nreg, tid);
        if (e && e->own) { /* the profiler's: named, not walked */
            s->own = 1;
            continue;
        }
        int64_t left = end - pp_now_ns(CLOCK_MONOTONIC);
        if (tid == self) { /* this thread: its own stack, from the caller on */
            int why_end;
            s->npcs = pp_unwind_here(caller, s->pcs, PP_DUMP_FRAMES, &why_end);
            if (why_end)
                s->pcs[s->npcs++] = pp_pc_stack_end(why_end);
            s->how = PP_DUMP_SIGNAL;
            copy_set(pp_labels_current_peek(), s);
            continue;
        }
        if (pp_thread_walk_waiting(tid, s, e ? e->labels_slot : NULL, NULL)) /* no span: dumps show none */
            continue;
        if (left <= 0) {
            s->how = PP_DUMP_TIME_LIMIT;
            s->pcs[0] = PP_PC_TIME_LIMIT;
            s->npcs = 1;
            continue;
        }
        if (!ask(tid, s, left)) {
            free_stack(s);
            count--;
        }
    }
    pp_mutex_unlock(&dump_lock);
    free(ids);
    free(reg);
    *out = t;
    *n = count;
    return 0;
}

void pp_thread_stack_free_labels(pp_thread_stack *t)
{
    free_labels(t->labels, t->nlabels);
    t->labels = NULL;
    t->nlabels = 0;
}

static void free_stack(pp_thread_stack *t)
{
    free_labels(t->labels, t->nlabels);
    memset(t, 0, sizeof *t);
}

void pp_thread_dump_free(pp_thread_stack *t, size_t n)
{
    for (size_t i = 0; t && i < n; i++)
        free_stack(&t[i]);
    free(t);
}
