/* torture.h: what the two parts of prog_torture_linked share: the main
 * program (prog_torture_linked.cpp: the profiler, the checks, the report)
 * and its workers (torture_workers.cpp: dlopen, threads, fork and spawn,
 * exceptions, burning CPU). */
#ifndef PP_TORTURE_H
#define PP_TORTURE_H
#include <atomic>
#include <chrono>
#include <cstdint>

namespace torture {

using Clock = std::chrono::steady_clock;

extern std::atomic<bool> stopping; /* the workers end their loops */
extern std::atomic<int> failures;
extern const char *plugin_path;

/* Prints "torture: FAIL: ..." and counts a failure. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One activity's progress counter. */
struct Activity {
    const char *name;
    const char *group;        /* the worker behind it, for TORTURE_ONLY */
    bool enabled = true;
    std::atomic<uint64_t> count{0};
    uint64_t seen = 0;        /* count at the last progress check */
    int idle_seconds = 0;     /* seconds without progress */
    bool reported = false;
};

enum {
    A_PLUGIN, A_SYSLIB, A_PTHREAD, A_DETACHED, A_STDTHREAD, A_FORK_EXEC, A_FORK_ONLY,
    A_SPAWN, A_THROW, A_THROW_PLUGIN, A_BURN, A_COUNT
};
extern Activity acts[A_COUNT];

double seconds_since(Clock::time_point t0);

/* A little CPU work that the optimizer cannot drop. */
uint64_t mix(uint64_t n, uint64_t seed);

/* The workers (torture_workers.cpp); each loops until `stopping`. */
void find_sys_libs();
void dlopen_worker(int idx);
void threads_worker();
void fork_worker();
void spawn_worker();
void throw_worker(int idx);
void burn_worker();
extern std::atomic<int> detached_live;  /* detached threads still running */
extern std::atomic<int64_t> max_fork_us; /* the slowest fork */

} // namespace torture
#endif
