/* check.h: the tiny assertion helpers the C and C++ unit tests share. */
#ifndef PP_CHECK_H
#define PP_CHECK_H
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_passed, check_failed;

/* Runs the test program again with LIBPPROF_HEAP_RATE=rate (read once, at
 * start-up) unless it already runs with it. */
static inline void rerun_with_heap_rate(const char *rate, char **argv)
{
    const char *now = getenv("LIBPPROF_HEAP_RATE");
    if (now && !strcmp(now, rate))
        return;
    setenv("LIBPPROF_HEAP_RATE", rate, 1);
    execv("/proc/self/exe", argv);
    perror("execv /proc/self/exe");
    exit(1);
}

/* Counts one check; a failed one is reported with its place, its
 * condition and, when fmt is not NULL, a message. */
__attribute__((format(printf, 5, 6))) static inline void check_report(int ok, const char *file, int line,
                                                                      const char *cond, const char *fmt, ...)
{
    if (ok) {
        check_passed++;
        return;
    }
    check_failed++;
    fprintf(stderr, "%s:%d: check failed: %s%s", file, line, cond, fmt ? ": " : "\n");
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
}

/* Installs fn as the handler of sig (SA_SIGINFO | SA_RESTART, no other
 * signal blocked while it runs). */
static inline void check_handle(int sig, void (*fn)(int, siginfo_t *, void *))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

#define CHECK(cond) check_report((cond) != 0, __FILE__, __LINE__, #cond, NULL)
#define CHECKF(cond, ...) check_report((cond) != 0, __FILE__, __LINE__, #cond, __VA_ARGS__)

/* Named cases, for tests that report per case rather than per check: the
 * checks between check_case_begin() and check_case_end(name) count as one
 * check, passed when none of them failed; a failed case is also named on
 * stderr. check_case_ok() says whether none has failed yet. */
static int check_case_passed, check_case_failed;

static inline void check_case_begin(void)
{
    check_case_passed = check_passed;
    check_case_failed = check_failed;
}

static inline int check_case_ok(void)
{
    return check_failed == check_case_failed;
}

static inline void check_case_end(const char *name)
{
    int ok = check_case_ok();
    check_passed = check_case_passed + ok;
    check_failed = check_case_failed + !ok;
    if (!ok)
        fprintf(stderr, "FAIL %s\n", name);
}

#ifdef PPROF_H
/* 1 if the sample's stack has a frame whose function is fn (inlined
 * frames included). */
static inline int sample_has(const pprof_sample *s, const char *fn)
{
    for (size_t j = 0; j < s->nlocations; j++) {
        const pprof_location *l = s->locations[j];
        for (size_t k = 0; k < l->nlines; k++)
            if (!strcmp(l->lines[k].function, fn))
                return 1;
    }
    return 0;
}

/* The sum of value `v` over the samples whose stack has fn. */
static inline int64_t sum_of(const pprof_profile *p, const char *fn, size_t v)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (sample_has(&s[i], fn))
            total += s[i].values[v];
    return total;
}

/* The sum of every sample's first value (the sample count of a CPU profile). */
static inline int64_t profile_total(const pprof_profile *p)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    int64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += s[i].values[0];
    return total;
}
#endif

/* Prints "name: N passed, M failed" and returns the exit status. */
static inline int check_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed ? 1 : 0;
}
#endif
