/* test_base.c: base/, what every part of the library stands on.
 * test-labels: quick
 *
 * Errors: pprof_strerror is the code's fixed text whatever failed before;
 * pprof_err_name is each code's name as the header spells it, a distinct
 * one for every code, and "PPROF_E?" for a code the header does not define;
 * pprof_last_error is "" before any failure, carries a failing call's
 * detail, and a later failure without detail replaces it (no stale
 * detail), while successful calls leave it alone; each thread has its own.
 * Statistics: every *_stats_get zeroes the struct's reserved space, and
 * the structs keep their sizes (a new counter takes reserved space).
 * The hook lock: taken and released like the plain lock, it gives up only
 * when the lock is held while a fork is under way, and a waiter notices a
 * fork that begins while it waits. Shutdown hooks run once, in order,
 * after the function passed first, and a hook added twice runs once.
 * Reserved names are found, others not. LIBPPROF_* integers out of range
 * or malformed fall back to the default. PP_ASSERT, where the build checks
 * invariants (PPROF_ASSERTS): a broken one in the library (pp_fd_create_end
 * without its begin) ends a child with a trap and its one line on stderr.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "base/base.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

/* Runs pp_fd_create_end with no begin in a child: the status it ended with,
 * its standard error in err. */
static int broken_invariant(char *err, size_t n)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        pp_fd_create_end();
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fds[0], err + got, n - 1 - got)) > 0)
        got += (size_t)r;
    err[got] = 0;
    close(fds[0]);
    int status = -1;
    waitpid(pid, &status, 0);
    return status;
}

static char other_thread_error[256];

static void *fail_elsewhere(void *arg)
{
    (void)arg;
    pprof_custom *c;
    CHECK(pprof_custom_new("not/a/name", &c) == PPROF_EINVAL);
    snprintf(other_thread_error, sizeof other_thread_error, "%s", pprof_last_error());
    return NULL;
}

static pp_mutex held = PP_MUTEX_INIT;
static _Atomic int waiter_result = -1;

static void *wait_for_held(void *arg)
{
    (void)arg;
    int got = pp_mutex_lock_hook(&held);
    if (got)
        pp_mutex_unlock(&held);
    atomic_store(&waiter_result, got);
    return NULL;
}

static char order[8];
static int norder;
static void first(void) { order[norder++] = 'f'; }
static void hook_a(void) { order[norder++] = 'a'; }
static void hook_b(void) { order[norder++] = 'b'; }

int main(void)
{
    /* errors */
    CHECK(!strcmp(pprof_last_error(), ""));
    CHECK(!strcmp(pprof_strerror(PPROF_ENOTFOUND), "not found"));
    CHECK(!strcmp(pprof_strerror(12345), "unknown error"));
    static const struct { int code; const char *name; } codes[] = {
#define CODE(c) {c, #c}
        CODE(PPROF_OK), CODE(PPROF_EINVAL), CODE(PPROF_ENOMEM), CODE(PPROF_EBUSY),
        CODE(PPROF_ERATE), CODE(PPROF_ESTATE), CODE(PPROF_ESYS), CODE(PPROF_EIO),
        CODE(PPROF_ENOTSUP), CODE(PPROF_EADDR), CODE(PPROF_ELIMIT), CODE(PPROF_ENOTFOUND),
#undef CODE
    };
    size_t ncodes = sizeof codes / sizeof *codes;
    for (size_t i = 0; i < ncodes; i++) {
        CHECK(!strcmp(pprof_err_name(codes[i].code), codes[i].name));
        CHECK(strcmp(pprof_strerror(codes[i].code), "unknown error") != 0);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(pprof_err_name(codes[i].code), pprof_err_name(codes[j].code)) != 0);
    }
    for (int code = 0; code >= PPROF_ENOTFOUND; code--) /* the codes run 0, -1, ... with no gap */
        CHECK(strcmp(pprof_err_name(code), "PPROF_E?") != 0);
    CHECK(!strcmp(pprof_err_name(PPROF_ENOTFOUND - 1), "PPROF_E?"));
    CHECK(!strcmp(pprof_err_name(1), "PPROF_E?"));
    CHECK(!strcmp(pprof_err_name(12345), "PPROF_E?"));
    pprof_recorder *r;
    CHECK(pprof_cpu_recorder_new(&(pprof_cpu_config){.hz = -5}, &r) == PPROF_EINVAL);
    CHECK(strstr(pprof_last_error(), "invalid argument: hz must be") == pprof_last_error());
    CHECK(!strcmp(pprof_strerror(PPROF_EINVAL), "invalid argument"));
    pprof_labels *set;
    CHECK(pprof_labels_new(&(pprof_label){"k", "v"}, 1, &set) == 0); /* success leaves it */
    CHECK(strstr(pprof_last_error(), "hz must be") != NULL);
    CHECK(pprof_cpu_recorder_new(NULL, NULL) == PPROF_EINVAL); /* no detail: none shown */
    CHECK(!strcmp(pprof_last_error(), "invalid argument"));
    pthread_t t;
    pthread_create(&t, NULL, fail_elsewhere, NULL);
    pthread_join(t, NULL);
    CHECK(strstr(other_thread_error, "a profile name is") != NULL);
    CHECK(!strcmp(pprof_last_error(), "invalid argument")); /* this thread's own */
    pprof_labels_unref(set);

    /* statistics: reserved space zeroed, sizes fixed (LP64) */
#define STATS(type, get, size)                                                        \
    do {                                                                              \
        type st;                                                                      \
        memset(&st, 0xa5, sizeof st);                                                 \
        get(&st);                                                                     \
        int zero = 1;                                                                 \
        for (size_t i = 0; i < sizeof st.reserved / sizeof st.reserved[0]; i++)       \
            zero &= st.reserved[i] == 0;                                              \
        CHECKF(zero, "%s leaves reserved space unzeroed", #get);                      \
        CHECKF(sizeof(void *) != 8 || sizeof st == (size), "sizeof(%s) is %zu, not %d", \
               #type, sizeof st, (size));                                             \
    } while (0)
    STATS(pprof_labels_stats, pprof_labels_stats_get, 104);
    STATS(pprof_otel_stats, pprof_otel_stats_get, 112);
    STATS(pprof_cpu_stats, pprof_cpu_stats_get, 664);
    STATS(pprof_heap_stats, pprof_heap_stats_get, 160);
    STATS(pprof_contention_stats, pprof_contention_stats_get, 120);
    STATS(pprof_symbolizer_stats, pprof_symbolizer_stats_get, 128);
    STATS(pprof_history_stats, pprof_history_stats_get, 128);
#undef STATS

    /* the hook lock */
    CHECK(pp_mutex_lock_hook(&held) == 1);
    atomic_fetch_add(&pp_fork_pending, 1);
    CHECK(pp_mutex_lock_hook(&held) == 0); /* held during a fork: gives up */
    pp_mutex_unlock(&held);
    CHECK(pp_mutex_lock_hook(&held) == 1); /* free during a fork: taken */
    atomic_fetch_sub(&pp_fork_pending, 1);
    pthread_create(&t, NULL, wait_for_held, NULL);
    struct timespec ms20 = {0, 20000000};
    nanosleep(&ms20, NULL);
    CHECK(atomic_load(&waiter_result) == -1); /* waiting, no fork */
    atomic_fetch_add(&pp_fork_pending, 1);   /* a fork begins while it waits */
    pthread_join(t, NULL);
    CHECK(atomic_load(&waiter_result) == 0);
    atomic_fetch_sub(&pp_fork_pending, 1);
    pp_mutex_unlock(&held);

    /* shutdown hooks */
    CHECK(pp_shutdown_hook_add(hook_a) == 0 && pp_shutdown_hook_add(hook_b) == 0);
    CHECK(pp_shutdown_hook_add(hook_a) == 0);
    CHECK(!pp_shutting_down());
    pp_shutdown_run(first);
    pp_shutdown_run(first);
    CHECK(pp_shutting_down());
    CHECKF(norder == 3 && !memcmp(order, "fab", 3), "order %.*s", norder, order);

    /* names */
    static const char *const names[] = {"alpha", "beta"};
    pp_names_reserve(names, 2);
    CHECK(pp_name_reserved("beta") && !pp_name_reserved("gamma") && !pp_name_reserved("alph"));

    /* environment */
    setenv("PP_TEST_INT", "42", 1);
    CHECK(pp_env_int("PP_TEST_INT", 7, 0, 100) == 42);
    setenv("PP_TEST_INT", "420", 1);
    CHECK(pp_env_int("PP_TEST_INT", 7, 0, 100) == 7);
    setenv("PP_TEST_INT", "4x", 1);
    CHECK(pp_env_int("PP_TEST_INT", 7, 0, 100) == 7);
    unsetenv("PP_TEST_INT");
    CHECK(pp_env_int("PP_TEST_INT", 7, 0, 100) == 7);

    /* invariants */
    char err[512];
    int status = broken_invariant(err, sizeof err);
#ifdef PPROF_ASSERTS
    CHECKF(WIFSIGNALED(status) && (WTERMSIG(status) == SIGILL || WTERMSIG(status) == SIGTRAP),
           "status %#x\n", status);
    CHECKF(strstr(err, "libpprof: ") == err && strstr(err, "fds.c:") &&
               strstr(err, ": assertion failed: creating_here > 0\n"),
           "stderr: %s\n", err);
#else
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0 && !err[0], "status %#x, stderr: %s\n", status, err);
#endif
    return check_summary("test_base");
}
