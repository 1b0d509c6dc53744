/* test_threads_span.c: the span of a thread that waits in the kernel,
 * copied from outside it (threads/'s pp_thread_walk_waiting, through the
 * thread's trace-context slot), and the labels it gives.
 * test-labels: quick
 *
 * A thread enters a span, takes its own copy with pp_trace_capture, and
 * waits in read(); the walk from /proc must give the same copy: the IDs,
 * the flags, the span name (cut at PP_SPAN_NAME_MAX - 1 bytes; a name
 * that ends just before an unmapped page, which one read of the whole
 * length would fail on; one across two pages; "" for none), nothing for a
 * trace ID of all zeros, for no context or without a slot. A name that
 * cannot be read at all gives the span with no name. pp_trace_pairs
 * merges the span into copied pairs as pp_trace_labels does into a set,
 * and a unit of work's label only when asked for.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "labels/labels.h"
#include "threads/threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NCASES 9
static pprof_trace_context ctx[NCASES];
static const pprof_trace_context *use[NCASES]; /* NULL: no context */
static const char *want_name[NCASES];
static int want_on[NCASES];
static int no_slot[NCASES];    /* walked without the trace slot */
static int unreadable[NCASES]; /* a name the thread itself could not read */

static int wake[2];
static _Atomic int tid, at = -1; /* the waiter's id, the case it waits in */
static void *const *volatile tslot;
static pp_trace_snap own[NCASES];

static void *waiter(void *arg)
{
    (void)arg;
    tslot = pp_trace_slot();
    atomic_store(&tid, (int)syscall(SYS_gettid));
    for (int i = 0; i < NCASES; i++) {
        const pprof_trace_context *prev = pprof_trace_enter(use[i]);
        if (!unreadable[i])
            pp_trace_capture(&own[i]);
        atomic_store(&at, i);
        char c;
        while (read(wake[0], &c, 1) != 1)
            ;
        pprof_trace_leave(prev);
    }
    return NULL;
}

/* Waits until the waiter sits in read() in case i. */
static int wait_in_read(int i)
{
    for (int k = 0; k < 5000; k++) {
        int nr;
        uint64_t sp, pc;
        if (atomic_load(&at) == i && pp_thread_syscall(atomic_load(&tid), &nr, &sp, &pc) && nr == SYS_read)
            return 1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void set_ids(pprof_trace_context *c, uint8_t seed)
{
    for (int i = 0; i < 16; i++)
        c->trace_id[i] = (uint8_t)(seed + i);
    for (int i = 0; i < 8; i++)
        c->span_id[i] = (uint8_t)(0xa0 + seed + i);
    c->trace_flags = seed & 1;
}

static void remote(void)
{
    long page = sysconf(_SC_PAGESIZE);
    /* [rw][rw][none]: names placed against the page boundaries */
    char *m = mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return;
    CHECK(mprotect(m + 2 * page, (size_t)page, PROT_NONE) == 0);
    char *tail = m + 2 * page - 5; /* "tail" and its NUL end the readable memory */
    memcpy(tail, "tail", 5);
    char *across = m + page - 3; /* "across pages" starts 3 bytes before a boundary */
    memcpy(across, "across pages", 13);
    static char longname[100];
    memset(longname, 'x', sizeof longname - 1);
    static char cut[PP_SPAN_NAME_MAX];
    memset(cut, 'x', sizeof cut - 1);

    static const char *const names[NCASES] = {"GET /wait", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    for (int i = 0; i < NCASES; i++) {
        set_ids(&ctx[i], (uint8_t)(16 * i + 1));
        use[i] = &ctx[i];
        want_on[i] = 1;
        ctx[i].span_name = names[i];
    }
    want_name[0] = "GET /wait";
    ctx[1].span_name = tail, want_name[1] = "tail";
    ctx[2].span_name = across, want_name[2] = "across pages";
    ctx[3].span_name = longname, want_name[3] = cut;
    want_name[4] = ""; /* no name */
    memset(ctx[5].trace_id, 0, sizeof ctx[5].trace_id), want_on[5] = 0; /* no trace: ignored */
    use[6] = NULL, want_on[6] = 0;
    ctx[7].span_name = "no slot", no_slot[7] = 1, want_on[7] = 0;
    ctx[8].span_name = m + 2 * page, want_name[8] = "", unreadable[8] = 1; /* the span, no name */

    CHECK(pipe(wake) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
    for (int i = 0; i < NCASES; i++) {
        check_case_begin();
        CHECKF(wait_in_read(i), "case %d: the thread is not seen in read()", i);
        pp_thread_stack st;
        memset(&st, 0, sizeof st);
        int rc = pp_thread_walk_waiting(atomic_load(&tid), &st, NULL, no_slot[i] ? NULL : tslot);
        CHECKF(rc == 1, "case %d: rc %d", i, rc);
        CHECKF(st.how == PP_DUMP_SYSCALL && st.syscall == SYS_read, "case %d: how %d syscall %d", i, st.how,
               st.syscall);
        CHECKF(st.trace.on == want_on[i], "case %d: on %d", i, st.trace.on);
        if (want_on[i] && st.trace.on) {
            CHECKF(!memcmp(st.trace.trace_id, ctx[i].trace_id, 16) && !memcmp(st.trace.span_id, ctx[i].span_id, 8) &&
                       st.trace.flags == ctx[i].trace_flags,
                   "case %d: IDs or flags differ", i);
            CHECKF(!strcmp(st.trace.span_name, want_name[i]), "case %d: span_name \"%s\", want \"%s\"", i,
                   st.trace.span_name, want_name[i]);
        }
        if (!unreadable[i] && !no_slot[i]) /* the same copy as the thread's own */
            CHECKF(own[i].on == st.trace.on &&
                       (!own[i].on || (!strcmp(own[i].span_name, st.trace.span_name) &&
                                       !memcmp(own[i].trace_id, st.trace.trace_id, 16) &&
                                       !memcmp(own[i].span_id, st.trace.span_id, 8) && own[i].flags == st.trace.flags)),
                   "case %d: the thread's own copy differs (on %d, \"%s\")", i, own[i].on, own[i].span_name);
        pp_thread_stack_free_labels(&st);
        char name[32];
        snprintf(name, sizeof name, "remote case %d", i);
        check_case_end(name);
        CHECK(write(wake[1], "w", 1) == 1);
    }
    pthread_join(t, NULL);
    munmap(m, 3 * (size_t)page);
}

static void pairs(void)
{
    pp_trace_snap t = {.on = 1, .span_id = {1, 2, 3, 4, 5, 6, 7, 8}, .span_name = "s"};
    t.trace_id[15] = 9;
    const pprof_label in[] = {{"a", "1"}, {"span_name", "old"}, {"z", "2"}};
    pp_trace_text text = {.heap = NULL};
    pprof_label *out;
    size_t n = pp_trace_pairs(in, 3, &t, 1, &text, &out);
    CHECKF(n == 5, "%zu pairs", n);
    const char *want[][2] = {{"a", "1"}, {"span_id", "0102030405060708"}, {"span_name", "s"},
                             {"trace_id", "00000000000000000000000000000009"}, {"z", "2"}};
    for (size_t i = 0; i < n && i < 5; i++)
        CHECKF(!strcmp(out[i].key, want[i][0]) && !strcmp(out[i].value, want[i][1]), "pair %zu: %s=%s", i,
               out[i].key, out[i].value);
    pp_trace_text_free(&text);
    t.on = 0;
    n = pp_trace_pairs(in, 3, &t, 1, &text, &out);
    CHECK(n == 3 && out == in);
    n = pp_trace_labels(NULL, &t, 1, &text, &out);
    CHECK(n == 0);
    /* a unit of work: its label only when asked for, first by key */
    t.unit = 0x1234;
    n = pp_trace_pairs(in, 3, &t, PP_TRACE_ID_LABEL, &text, &out);
    CHECK(n == 3 && out == in);
    n = pp_trace_pairs(in, 3, &t, PP_TRACE_UNIT_LABEL, &text, &out);
    CHECKF(n == 4 && !strcmp(out[1].key, PP_UNIT_KEY) && !strcmp(out[1].value, "0000000000001234") &&
               !strcmp(out[0].key, "a") && !strcmp(out[3].key, "z"),
           "%zu pairs, the second %s=%s", n, n > 1 ? out[1].key : "", n > 1 ? out[1].value : "");
    pp_trace_text_free(&text);
    t.on = 1;
    n = pp_trace_pairs(in, 3, &t, PP_TRACE_UNIT_LABEL, &text, &out);
    CHECKF(n == 5 && !strcmp(out[1].key, PP_UNIT_KEY) && !strcmp(out[2].key, "span_id"), "%zu pairs with the span",
           n);
    pp_trace_text_free(&text);
}

int main(void)
{
    remote();
    pairs();
    return check_summary("test_threads_span");
}
