/* malloc_overhead.c: what heap profiling costs the profiled program.
 *
 * The driver re-executes itself (fork + exec of /proc/self/exe with a
 * "worker" argv), so every run is a fresh process, under each of these
 * configurations (a configuration whose library file is missing is skipped
 * with the reason printed):
 *
 *   glibc               no preload
 *   libpprof            LD_PRELOAD=libpprof.so, default LIBPPROF_HEAP_RATE
 *                       (524288), no LIBPPROF_ADDR (no server)
 *   forward-only        LD_PRELOAD=libmalloc_forward.so: malloc, free,
 *                       calloc and realloc interposed, each forwarding to
 *                       glibc's through a pointer and doing nothing else
 *                       (malloc_forward.c): the floor of any interposer,
 *                       against which libpprof's fast paths and sampling
 *                       are the rest (mix and pair only)
 *   tcmalloc            LD_PRELOAD=libtcmalloc.so.4 (gperftools)
 *   tcmalloc-heapprof   the same + HEAPPROFILE=/tmp/malloc_overhead.<pid>.heapprof
 *                       (files removed after each run). It records every
 *                       allocation and is hundreds of times slower, so it
 *                       runs 1/HEAPPROF_DIV of the operations and its
 *                       threads stop at HEAPPROF_CAP_MS; every figure is
 *                       per operation, so it stays comparable.
 *   tcmalloc-sampler    tcmalloc + TCMALLOC_SAMPLE_PARAMETER=524288
 *   jemalloc            LD_PRELOAD=libjemalloc.so.2
 *   jemalloc-prof       the same + MALLOC_CONF=prof:true,lg_prof_sample:19
 *                       (mean 512 KiB); reported as unsupported when the
 *                       library does not turn profiling on (checked with
 *                       mallctl("opt.prof") and for "Invalid conf pair")
 *   libpprof+jemalloc   LD_PRELOAD=libpprof.so:libjemalloc.so.2 (libpprof
 *                       first, so it wraps jemalloc)
 *
 * A probe run per configuration prints which library provides malloc in
 * that process and whether the allocator's own profiler is on, so a
 * preload that does not take effect is visible.
 *
 * Benchmarks, each run in every round, configurations in an order that
 * rotates by one position per round:
 *
 *  - mix: a server-like allocation mix. T threads (default 2), each with a
 *    ring of 4096 live objects; an operation picks a slot at random, frees
 *    its object and allocates a new one (80% malloc, 10% calloc, 10%
 *    realloc of the old object). Sizes: 97% 16..512 B skewed small (half
 *    16..64, 30% 65..128, 15% 129..256, 5% 257..512), 3% 4..64 KiB; mean
 *    about 1.1 KiB. Per-thread xorshift64 with a fixed seed, so every
 *    configuration sees the same sequence. The first byte of every object
 *    is written, and read back before it is freed. The rings are filled
 *    before the clock starts and emptied after it stops (threads meet at
 *    barriers). Figures: wall and process CPU time of the timed part, as ns
 *    per operation (wall x T / ops, CPU / ops); the process CPU includes a
 *    profiler's own threads.
 *  - pair ("unsampled pair"): one thread, ns per malloc(64) + write of its
 *    first byte + free, over 10 x ops_per_thread pairs (50M by default),
 *    under the default sampling rates, so nearly every pair is unsampled;
 *    the occasional sampled one is included as it comes.
 *  - sampled ("sampled path"): one thread at the bottom of a 10-frame call
 *    chain; each of 200,000 malloc(64)+free pairs is timed by itself with
 *    two clock_gettime(CLOCK_MONOTONIC) calls; median, p90 and p99, the
 *    timer's own cost (median of empty timings) included and printed
 *    beside them. libpprof runs with LIBPPROF_HEAP_RATE=1, so every
 *    allocation takes the sampled path; for comparison jemalloc-prof runs
 *    with lg_prof_sample:0 (every allocation) and tcmalloc-heapprof as
 *    above; the plain allocators are the reference.
 *
 * Output: every run's raw numbers as they come, then per configuration the
 * median over the rounds, and the ratios (median of the per-round ratios,
 * min..max): libpprof/glibc (target <= 1.05), tcmalloc-heapprof/tcmalloc,
 * tcmalloc-sampler/tcmalloc, jemalloc-prof/jemalloc, libpprof+jemalloc/
 * jemalloc; for the pair, libpprof minus the allocator under it (target
 * <= 5 ns); for the sampled path, libpprof's median (target <= 1 us).
 *
 * Usage: malloc_overhead [rounds] [ops_per_thread] [threads]
 *                                              (defaults 5 5000000 2)
 *        malloc_overhead worker probe|mix|pair|sampled ...   (one run)
 */
#define _GNU_SOURCE
#include "malloc_overhead.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PPROF_LIB
#error "build with -DPPROF_LIB=\"/path/to/libpprof.so\" (bench/CMakeLists.txt does)"
#endif
#ifndef TCMALLOC_LIB
#define TCMALLOC_LIB "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
#endif
#ifndef JEMALLOC_LIB
#define JEMALLOC_LIB "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
#endif

#define DEFAULT_ROUNDS 5
#define DEFAULT_OPS 5000000L    /* mix operations per thread */
#define DEFAULT_THREADS 2
#define HEAPPROF_DIV 20         /* tcmalloc-heapprof runs ops / HEAPPROF_DIV */
#define HEAPPROF_CAP_MS 3000    /* ... and stops after this long */
#define PAIRS_PER_OP 10         /* pair benchmark: 10 x ops_per_thread pairs */
#define MAX_ROUNDS 100


/* ---------------------------------------------------------------- driver */

static const char *verdict(int unhooked, int met)
{
    return unhooked ? "n/a (libpprof does not interpose malloc in this build)" : met ? "met" : "MISSED";
}

enum { C_GLIBC, C_FWD, C_PPROF, C_TC, C_TC_HEAP, C_TC_SAMPLE, C_JE, C_JE_PROF, C_PPROF_JE, NCFG };
enum { B_MIX, B_PAIR, B_SAMPLED, NBENCH };

static char heapprof_prefix[128];

typedef struct config {
    const char *name;
    const char *preload;      /* NULL: no preload */
    const char *need[2];      /* files that must exist */
    const char *env[NBENCH];  /* one NAME=VALUE per benchmark; NULL: none */
    int in[NBENCH];           /* runs in this benchmark */
    int skip;                 /* 1: skipped (reason in why) */
    int unhooked;             /* a libpprof config whose malloc is not libpprof's */
    char why[256];
} config;

static config cfgs[NCFG] = {
    [C_GLIBC] = {.name = "glibc", .env = {NULL}, .in = {1, 1, 1}},
    [C_FWD] = {.name = "forward-only", .preload = FWD_LIB, .need = {FWD_LIB}, .in = {1, 1, 0}},
    [C_PPROF] = {.name = "libpprof", .preload = PPROF_LIB, .need = {PPROF_LIB},
                 .env = {NULL, NULL, "LIBPPROF_HEAP_RATE=1"}, .in = {1, 1, 1}},
    [C_TC] = {.name = "tcmalloc", .preload = TCMALLOC_LIB, .need = {TCMALLOC_LIB}, .in = {1, 1, 1}},
    [C_TC_HEAP] = {.name = "tcmalloc-heapprof", .preload = TCMALLOC_LIB, .need = {TCMALLOC_LIB},
                   .env = {"HEAPPROFILE=", NULL, "HEAPPROFILE="}, .in = {1, 0, 1}},
    [C_TC_SAMPLE] = {.name = "tcmalloc-sampler", .preload = TCMALLOC_LIB, .need = {TCMALLOC_LIB},
                     .env = {"TCMALLOC_SAMPLE_PARAMETER=524288", "TCMALLOC_SAMPLE_PARAMETER=524288"},
                     .in = {1, 1, 0}},
    [C_JE] = {.name = "jemalloc", .preload = JEMALLOC_LIB, .need = {JEMALLOC_LIB}, .in = {1, 1, 1}},
    [C_JE_PROF] = {.name = "jemalloc-prof", .preload = JEMALLOC_LIB, .need = {JEMALLOC_LIB},
                   .env = {"MALLOC_CONF=prof:true,lg_prof_sample:19", "MALLOC_CONF=prof:true,lg_prof_sample:19",
                           "MALLOC_CONF=prof:true,lg_prof_sample:0"},
                   .in = {1, 1, 1}},
    [C_PPROF_JE] = {.name = "libpprof+jemalloc", .preload = PPROF_LIB ":" JEMALLOC_LIB,
                    .need = {PPROF_LIB, JEMALLOC_LIB}, .env = {NULL, NULL, "LIBPPROF_HEAP_RATE=1"},
                    .in = {1, 1, 1}},
};

static const char *const scrub[] = {"LD_PRELOAD", "HEAPPROFILE", "HEAPCHECK", "CPUPROFILE",
                                    "TCMALLOC_SAMPLE_PARAMETER", "MALLOC_CONF", "LIBPPROF_HEAP_RATE",
                                    "LIBPPROF_ADDR", NULL};

static void cleanup_heapprof(void)
{
    char pat[160];
    glob_t g;
    snprintf(pat, sizeof pat, "%s*", heapprof_prefix);
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            unlink(g.gl_pathv[i]);
        globfree(&g);
    }
}

/* A worker's configuration and benchmark, for child_env. */
typedef struct child_setup {
    const config *c;
    int bench;
} child_setup;

/* In the worker, before its exec: the environment of its configuration. */
static void child_env(void *arg)
{
    const child_setup *cs = arg;
    for (int i = 0; scrub[i]; i++)
        unsetenv(scrub[i]);
    if (cs->c->preload)
        setenv("LD_PRELOAD", cs->c->preload, 1);
    const char *e = cs->c->env[cs->bench];
    if (e) {
        char name[64];
        size_t n = strcspn(e, "=");
        snprintf(name, sizeof name, "%.*s", (int)n, e);
        setenv(name, !strcmp(name, "HEAPPROFILE") ? heapprof_prefix : e + n + 1, 1);
    }
}

/* Runs one worker under a configuration: its stdout line into out, its
 * stderr into err. Returns 0 when it exited 0 and printed a line. */
static int run_child(const config *c, int bench, char *const argv[], char *out, size_t outsz, char *err,
                     size_t errsz)
{
    char errpath[] = "/tmp/malloc_overhead.err.XXXXXX";
    int efd = mkstemp(errpath);
    if (efd < 0)
        return -1;
    unlink(errpath);
    child_setup cs = {c, bench};
    int rc = bench_run_self(argv, child_env, &cs, efd, out, outsz);
    size_t len = 0;
    ssize_t k;
    if (lseek(efd, 0, SEEK_SET) == 0)
        while (len < errsz - 1 && (k = read(efd, err + len, errsz - 1 - len)) > 0)
            len += (size_t)k;
    err[len] = 0;
    close(efd);
    if (c == &cfgs[C_TC_HEAP])
        cleanup_heapprof();
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = 0;
    return rc == 0 && nl ? 0 : -1;
}

static double field(const char *line, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = line; (p = strstr(p, key)); p += n)
        if ((p == line || p[-1] == ' ') && p[n] == '=')
            return atof(p + n + 1);
    return -1;
}

static void field_str(const char *line, const char *key, char *out, size_t outsz)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    snprintf(out, outsz, "%.*s", p ? (int)strcspn(p + strlen(pat), " ") : 1, p ? p + strlen(pat) : "?");
}

/* Prints up to max lines of a run's stderr, prefixed. */
static void show_stderr(const char *who, const char *err, int max)
{
    for (int i = 0; *err && i < max; i++) {
        size_t n = strcspn(err, "\n");
        printf("#   %s stderr: %.*s\n", who, (int)n, err);
        err += n + (err[n] == '\n');
    }
}

/* results[bench][round][config][figure]; figure < 0: no result */
#define NFIG 4
static double res[NBENCH][MAX_ROUNDS][NCFG][NFIG];
static int have[NBENCH][MAX_ROUNDS][NCFG];

/* Median over rounds of figure f of config c, and of c/base per round. */
static int med_of(int b, int rounds, int c, int f, double *med)
{
    double v[MAX_ROUNDS];
    int n = 0;
    for (int r = 0; r < rounds; r++)
        if (have[b][r][c])
            v[n++] = res[b][r][c][f];
    if (n)
        *med = bench_median(v, n);
    return n;
}

/* kind 0: ratio c/base; kind 1: difference c-base. Median, min, max. */
static int relate(int b, int rounds, int c, int base, int f, int kind, double *med, double *lo, double *hi)
{
    double v[MAX_ROUNDS];
    int n = 0;
    for (int r = 0; r < rounds; r++)
        if (have[b][r][c] && have[b][r][base])
            v[n++] = kind ? res[b][r][c][f] - res[b][r][base][f] : res[b][r][c][f] / res[b][r][base][f];
    if (!n)
        return 0;
    *med = bench_median(v, n);
    *lo = v[0];
    *hi = v[n - 1];
    return n;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "worker"))
        return mo_worker(argc, argv);
    int rounds = argc > 1 ? atoi(argv[1]) : DEFAULT_ROUNDS;
    long ops = argc > 2 ? atol(argv[2]) : DEFAULT_OPS;
    int threads = argc > 3 ? atoi(argv[3]) : DEFAULT_THREADS;
    if (argc > 4 || rounds < 1 || rounds > MAX_ROUNDS || ops < HEAPPROF_DIV * 100 || threads < 1 ||
        threads > 64) {
        fprintf(stderr, "usage: %s [rounds (1..%d)] [ops_per_thread (>= %d)] [threads (1..64)]\n", argv[0],
                MAX_ROUNDS, HEAPPROF_DIV * 100);
        return 2;
    }
    snprintf(heapprof_prefix, sizeof heapprof_prefix, "/tmp/malloc_overhead.%d.heapprof", (int)getpid());
    long heap_ops = ops / HEAPPROF_DIV, pairs = ops * PAIRS_PER_OP;

    printf("# malloc_overhead: %d rounds; mix: %d threads x %ld ops, ring %d objects/thread; "
           "pair: %ld x malloc(64)+free; sampled: %d pairs at depth %d\n",
           rounds, threads, ops, RING, pairs, SAMPLED_PAIRS, SAMPLED_DEPTH);
    printf("# libpprof: %s\n", PPROF_LIB);
    printf("# tcmalloc-heapprof in mix: %ld ops/thread (1/%d), threads stop after %d ms; "
           "all mix figures are per operation\n",
           heap_ops, HEAPPROF_DIV, HEAPPROF_CAP_MS);

    /* Skip configurations whose files are missing; probe the rest. */
    char out[4096], err[8192], from[128];
    for (int c = 0; c < NCFG; c++) {
        config *cf = &cfgs[c];
        for (int i = 0; i < 2 && cf->need[i]; i++)
            if (access(cf->need[i], R_OK)) {
                cf->skip = 1;
                snprintf(cf->why, sizeof cf->why, "%s is missing", cf->need[i]);
            }
        if (cf->skip) {
            printf("# skip %-18s %s\n", cf->name, cf->why);
            continue;
        }
        char *pargv[] = {"malloc_overhead", "worker", "probe", NULL};
        /* probe with the mix environment: the one the main figures use */
        if (run_child(cf, B_MIX, pargv, out, sizeof out, err, sizeof err)) {
            cf->skip = 1;
            snprintf(cf->why, sizeof cf->why, "probe run failed");
            printf("# skip %-18s probe run failed\n", cf->name);
            show_stderr(cf->name, err, 5);
            continue;
        }
        field_str(out, "malloc_from", from, sizeof from);
        int prof = (int)field(out, "prof");
        printf("# probe %-18s malloc from %s, allocator profiler %s\n", cf->name, from,
               prof < 0 ? "n/a" : prof ? "on" : "off");
        show_stderr(cf->name, err, 3);
        if (c == C_JE_PROF && (prof != 1 || strstr(err, "Invalid conf pair"))) {
            cf->skip = 2;
            snprintf(cf->why, sizeof cf->why, "unsupported: this jemalloc does not turn profiling on");
            printf("# skip %-18s %s\n", cf->name, cf->why);
        } else if (c == C_JE_PROF) {
            printf("#   jemalloc profiling is compiled in: mallctl opt.prof=1 under MALLOC_CONF=prof:true, "
                   "no \"Invalid conf pair\"\n");
        }
        if ((c == C_PPROF || c == C_PPROF_JE) && !strstr(from, "pprof")) {
            cf->unhooked = 1;
            printf("#   note: malloc is not libpprof's here: libpprof has no heap hooks in this build\n");
        }
    }

    int shown[NBENCH][NCFG] = {{0}};
    static const char *bname[NBENCH] = {"mix", "pair", "sampled"};
    for (int r = 0; r < rounds; r++)
        for (int b = 0; b < NBENCH; b++) {
            int list[NCFG], n = 0;
            for (int c = 0; c < NCFG; c++)
                if (cfgs[c].in[b] && !cfgs[c].skip)
                    list[n++] = c;
            for (int i = 0; i < n; i++) {
                int c = list[(i + r) % n];
                config *cf = &cfgs[c];
                char a1[32], a2[32], a3[32];
                char *wargv[8] = {"malloc_overhead", "worker", (char *)bname[b], a1, a2, a3, NULL};
                if (b == B_MIX) {
                    snprintf(a1, sizeof a1, "%d", threads);
                    snprintf(a2, sizeof a2, "%ld", c == C_TC_HEAP ? heap_ops : ops);
                    snprintf(a3, sizeof a3, "%d", c == C_TC_HEAP ? HEAPPROF_CAP_MS : CAP_MS);
                } else if (b == B_PAIR) {
                    snprintf(a1, sizeof a1, "%ld", pairs);
                    wargv[4] = NULL;
                } else {
                    snprintf(a1, sizeof a1, "%d", SAMPLED_PAIRS);
                    snprintf(a2, sizeof a2, "%d", c == C_TC_HEAP ? HEAPPROF_CAP_MS * 3 : CAP_MS);
                    wargv[5] = NULL;
                }
                if (run_child(cf, b, wargv, out, sizeof out, err, sizeof err)) {
                    printf("raw %-7s %2d %-18s FAILED\n", bname[b], r, cf->name);
                    show_stderr(cf->name, err, 10);
                    continue;
                }
                double *f = res[b][r][c];
                field_str(out, "malloc_from", from, sizeof from);
                if (b == B_MIX) {
                    double done = field(out, "ops"), wall = field(out, "wall"), cpu = field(out, "cpu");
                    f[0] = wall * 1e9 * threads / done;
                    f[1] = cpu * 1e9 / done;
                    f[2] = done;
                    printf("raw mix     %2d %-18s ops=%.0f wall=%.4f cpu=%.4f wall_ns_op=%.1f cpu_ns_op=%.1f "
                           "malloc_from=%s\n",
                           r, cf->name, done, wall, cpu, f[0], f[1], from);
                } else if (b == B_PAIR) {
                    f[0] = field(out, "ns_per_pair");
                    f[1] = field(out, "cpu") * 1e9 / field(out, "pairs");
                    printf("raw pair    %2d %-18s pairs=%.0f wall=%.4f ns_pair=%.2f cpu_ns_pair=%.2f "
                           "malloc_from=%s\n",
                           r, cf->name, field(out, "pairs"), field(out, "wall"), f[0], f[1], from);
                } else {
                    f[0] = field(out, "median_ns");
                    f[1] = field(out, "p90_ns");
                    f[2] = field(out, "p99_ns");
                    f[3] = field(out, "timer_ns");
                    printf("raw sampled %2d %-18s pairs=%.0f median_ns=%.0f p90_ns=%.0f p99_ns=%.0f timer_ns=%.0f "
                           "env=%s malloc_from=%s\n",
                           r, cf->name, field(out, "pairs"), f[0], f[1], f[2], f[3],
                           c == C_TC_HEAP ? heapprof_prefix : cf->env[b] ? cf->env[b] : "-", from);
                }
                have[b][r][c] = 1;
                if (!shown[b][c]++)
                    show_stderr(cf->name, err, 2);
                fflush(stdout);
            }
        }

    /* ------------------------------------------------ summary */
    double m, m2, lo, hi;
    printf("\n== mix: %d threads, ns per operation, median over rounds ==\n", threads);
    printf("%-20s %12s %12s %12s\n", "config", "ops/thread", "wall ns/op", "cpu ns/op");
    for (int c = 0; c < NCFG; c++) {
        if (cfgs[c].skip) {
            printf("%-20s %s\n", cfgs[c].name, cfgs[c].why);
            continue;
        }
        if (!med_of(B_MIX, rounds, c, 0, &m) || !med_of(B_MIX, rounds, c, 1, &m2)) {
            printf("%-20s no successful run\n", cfgs[c].name);
            continue;
        }
        double done;
        med_of(B_MIX, rounds, c, 2, &done);
        char opsdesc[64];
        if (c == C_TC_HEAP)
            snprintf(opsdesc, sizeof opsdesc, "%.0f*", done / threads);
        else
            snprintf(opsdesc, sizeof opsdesc, "%ld", ops);
        printf("%-20s %12s %12.1f %12.1f\n", cfgs[c].name, opsdesc, m, m2);
    }
    if (!cfgs[C_TC_HEAP].skip)
        printf("* tcmalloc-heapprof: median ops actually done per thread (asked %ld, capped at %d ms)\n", heap_ops,
               HEAPPROF_CAP_MS);

    static const struct { int c, base; const char *target; } ratios[] = {
        {C_PPROF, C_GLIBC, "<= 1.05"},  {C_FWD, C_GLIBC, NULL},        {C_PPROF, C_FWD, NULL},
        {C_TC_HEAP, C_TC, NULL},        {C_TC_SAMPLE, C_TC, NULL},     {C_JE_PROF, C_JE, NULL},
        {C_PPROF_JE, C_JE, "<= 1.05"},
    };
    printf("\n== mix: slowdown, median of per-round ratios (min..max) ==\n");
    printf("%-32s %24s %24s %s\n", "ratio", "wall ns/op", "cpu ns/op", "target (wall)");
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
        int c = ratios[i].c, base = ratios[i].base;
        char label[64];
        snprintf(label, sizeof label, "%s / %s", cfgs[c].name, cfgs[base].name);
        if (cfgs[c].skip || cfgs[base].skip) {
            printf("%-32s n/a: %s\n", label, cfgs[c].skip ? cfgs[c].why : cfgs[base].why);
            continue;
        }
        double cm, clo, chi;
        if (!relate(B_MIX, rounds, c, base, 0, 0, &m, &lo, &hi) ||
            !relate(B_MIX, rounds, c, base, 1, 0, &cm, &clo, &chi)) {
            printf("%-32s n/a: no successful pair of runs\n", label);
            continue;
        }
        char w[64], cp[64];
        snprintf(w, sizeof w, "%.3f (%.3f..%.3f)", m, lo, hi);
        snprintf(cp, sizeof cp, "%.3f (%.3f..%.3f)", cm, clo, chi);
        printf("%-32s %24s %24s %s%s%s\n", label, w, cp, ratios[i].target ? ratios[i].target : "",
               ratios[i].target ? ": " : "", ratios[i].target ? verdict(cfgs[c].unhooked, m <= 1.05) : "");
    }

    printf("\n== unsampled pair: malloc(64)+free, ns per pair (wall), median over rounds ==\n");
    static const struct { int c, base; } pdiff[] = {
        {C_GLIBC, -1}, {C_FWD, C_GLIBC}, {C_PPROF, C_GLIBC}, {C_TC, -1}, {C_TC_SAMPLE, C_TC},
        {C_JE, -1},    {C_JE_PROF, C_JE},  {C_PPROF_JE, C_JE},
    };
    for (size_t i = 0; i < sizeof pdiff / sizeof pdiff[0]; i++) {
        int c = pdiff[i].c, base = pdiff[i].base;
        if (cfgs[c].skip) {
            printf("%-20s %s\n", cfgs[c].name, cfgs[c].why);
            continue;
        }
        if (!med_of(B_PAIR, rounds, c, 0, &m)) {
            printf("%-20s no successful run\n", cfgs[c].name);
            continue;
        }
        printf("%-20s %8.2f ns", cfgs[c].name, m);
        if (base >= 0 && !cfgs[base].skip && relate(B_PAIR, rounds, c, base, 0, 1, &m2, &lo, &hi)) {
            printf("   %+.2f ns vs %s (per-round differences %+.2f..%+.2f)", m2, cfgs[base].name, lo, hi);
            if (c == C_PPROF || c == C_PPROF_JE)
                printf("; target <= +5 ns: %s", verdict(cfgs[c].unhooked, m2 <= 5));
        }
        printf("\n");
    }

    printf("\n== sampled path: one malloc(64)+free timed by itself, 10 frames deep, median over rounds ==\n");
    printf("%-20s %-40s %10s %10s %10s %10s\n", "config", "environment", "median ns", "p90 ns", "p99 ns",
           "timer ns");
    for (int c = 0; c < NCFG; c++) {
        if (!cfgs[c].in[B_SAMPLED])
            continue;
        if (cfgs[c].skip) {
            printf("%-20s %s\n", cfgs[c].name, cfgs[c].why);
            continue;
        }
        double p90, p99, tm;
        if (!med_of(B_SAMPLED, rounds, c, 0, &m)) {
            printf("%-20s no successful run\n", cfgs[c].name);
            continue;
        }
        med_of(B_SAMPLED, rounds, c, 1, &p90);
        med_of(B_SAMPLED, rounds, c, 2, &p99);
        med_of(B_SAMPLED, rounds, c, 3, &tm);
        const char *e = cfgs[c].env[B_SAMPLED];
        char env[64];
        snprintf(env, sizeof env, "%s", !e ? "-" : c == C_TC_HEAP ? "HEAPPROFILE=<prefix>" : e);
        printf("%-20s %-40s %10.0f %10.0f %10.0f %10.0f", cfgs[c].name, env, m, p90, p99, tm);
        if (c == C_PPROF || c == C_PPROF_JE)
            printf("  target median <= 1000 ns: %s", verdict(cfgs[c].unhooked, m <= 1000));
        printf("\n");
    }
    printf("(each timing includes the two clock_gettime calls, whose own median is the timer column)\n");
    cleanup_heapprof();
    return 0;
}
