/* prog_torture_linked.cpp: the program behind test_torture.sh.
 *
 * Serves /debug/pprof/ on 127.0.0.1 and profiles itself at 1000 Hz for the
 * whole run, snapshotting its CPU recorder every second and serializing each
 * snapshot, while worker threads loop over what tends to break in-process
 * profilers:
 *   dlopen     dlopen/dlsym/call/dlclose of a small plugin (two threads at
 *              once) and of system libraries
 *   threads    short-lived pthreads (joinable and detached) and std::threads
 *              that do a little CPU work and exit
 *   fork       fork+exec of /bin/true, and fork with a child that computes
 *              and _exits; every child must exit with status 0
 *   spawn      posix_spawn of /bin/true
 *   throw      C++ exceptions thrown through several frames (with cleanups
 *              and a rethrow) and caught, and thrown through the plugin's
 *              frames
 *   burn       plain CPU work in named functions
 * Every activity must keep making progress. At the end the recorder stops,
 * its last window must hold samples, and the program prints a count of each
 * activity and "torture: ok"; any failure prints "torture: FAIL: ..." and
 * the exit status is 1.
 *
 * The workers are in torture_workers.cpp.
 *
 * Usage: prog_torture_linked PORT PLUGIN.so [SECONDS]
 *   PORT 0 picks a free port; the line "torture: serving on 127.0.0.1:N
 *   (pid P)" tells which. SECONDS defaults to 30 (or TORTURE_SECONDS).
 * For diagnosis: TORTURE_ONLY=dlopen,threads,fork,spawn,throw,burn runs only
 * the listed workers; TORTURE_NO_PROFILE=1 runs them without profiling, to
 * compare timings.
 */
#include <pprof.h>
#include "torture.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

extern char **environ;

namespace torture {

std::atomic<bool> stopping{false};
std::atomic<int> failures{0};
const char *plugin_path;

void fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "torture: FAIL: %s\n", msg);
    fflush(stderr);
    failures.fetch_add(1);
}

Activity acts[A_COUNT];

void init_activities(const char *only)
{
    static const char *const names[A_COUNT][2] = {
        {"plugin-dlopen", "dlopen"}, {"syslib-dlopen", "dlopen"}, {"pthreads", "threads"},
        {"detached-pthreads", "threads"}, {"std-threads", "threads"}, {"fork-exec", "fork"},
        {"fork-child", "fork"}, {"posix-spawn", "spawn"}, {"exceptions", "throw"},
        {"plugin-exceptions", "throw"}, {"burn", "burn"},
    };
    for (int i = 0; i < A_COUNT; i++) {
        acts[i].name = names[i][0];
        acts[i].group = names[i][1];
        if (only && *only) {
            std::string list = std::string(",") + only + ",";
            acts[i].enabled = list.find(std::string(",") + acts[i].group + ",") != std::string::npos;
        }
    }
}

bool group_enabled(const char *group)
{
    for (const Activity &a : acts)
        if (strcmp(a.group, group) == 0 && a.enabled)
            return true;
    return false;
}

double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/* A little CPU work that the optimizer cannot drop. */
__attribute__((noinline)) uint64_t mix(uint64_t n, uint64_t seed)
{
    volatile uint64_t x = seed | 1;
    for (uint64_t i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

} // namespace torture

using namespace torture;

namespace {

/* ----------------------------------------------------------- profiling */

struct ProfileInfo {
    int64_t samples = 0;
    bool has_burn = false;
    bool has_lost = false;
};

ProfileInfo inspect(const pprof_profile *p)
{
    ProfileInfo info;
    size_t ns = 0;
    const pprof_sample *s = pprof_profile_samples(p, &ns);
    for (size_t i = 0; i < ns; i++) {
        if (s[i].nvalues > 0)
            info.samples += s[i].values[0];
        for (size_t k = 0; k < s[i].nlocations; k++) {
            const pprof_location *loc = s[i].locations[k];
            for (size_t l = 0; l < loc->nlines; l++) {
                const char *fn = loc->lines[l].function;
                if (fn && strstr(fn, "torture_burn_"))
                    info.has_burn = true;
                if (fn && strcmp(fn, "[lost samples]") == 0)
                    info.has_lost = true;
            }
        }
    }
    return info;
}

/* Serializes p as /debug/pprof/profile would; false on failure. */
bool encode(const pprof_profile *p, size_t *len)
{
    pprof_buffer buf = {};
    int rc = pprof_profile_write(p, PPROF_FORMAT_PROTO_GZIP, pprof_writer_buffer(&buf));
    bool ok = rc == 0 && buf.len > 2 && (unsigned char)buf.data[0] == 0x1f &&
              (unsigned char)buf.data[1] == 0x8b;
    if (!ok)
        fail("pprof_profile_write: rc %d (%s), %zu bytes", rc, rc ? pprof_last_error() : "",
             buf.len);
    *len = buf.len;
    pprof_buffer_free(&buf);
    return ok;
}

/* CPU time (user + system) of this process so far, in seconds. */
double process_cpu_seconds()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int count_tasks()
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    while (struct dirent *e = readdir(d))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Counts seconds without progress; an activity idle for 10 s has hung. */
void check_progress()
{
    for (Activity &a : acts) {
        uint64_t c = a.count.load();
        if (!a.enabled)
            continue;
        if (c != a.seen) {
            a.seen = c;
            a.idle_seconds = 0;
            continue;
        }
        if (++a.idle_seconds >= 10 && !a.reported) {
            a.reported = true;
            fail("no progress in %s for %d s (count stays at %llu)", a.name, a.idle_seconds,
                 (unsigned long long)c);
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PORT PLUGIN.so [SECONDS]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]);
    plugin_path = argv[2];
    const char *env_secs = getenv("TORTURE_SECONDS");
    int seconds = argc > 3 ? atoi(argv[3]) : env_secs ? atoi(env_secs) : 30;
    if (seconds < 2)
        seconds = 2;
    setvbuf(stdout, nullptr, _IOLBF, 0);
    init_activities(getenv("TORTURE_ONLY"));
    const char *no_prof = getenv("TORTURE_NO_PROFILE");
    bool profiling = !(no_prof && *no_prof && strcmp(no_prof, "0") != 0);

    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    pprof_server_config scfg = {};
    scfg.addr = addr;
    int rc = pprof_server_start(&scfg);
    if (rc) {
        fprintf(stderr, "torture: FAIL: pprof_server_start %s: %s\n", addr, pprof_last_error());
        return 1;
    }
    printf("torture: serving on 127.0.0.1:%d (pid %d)\n", pprof_server_port(), (int)getpid());

    pprof_cpu_config ccfg = {};
    ccfg.hz = 1000;
    pprof_recorder *rec = nullptr;
    if ((rc = pprof_cpu_recorder_new(&ccfg, &rec)) || (profiling && (rc = pprof_recorder_start(rec)))) {
        fprintf(stderr, "torture: FAIL: CPU recorder: %s\n", pprof_last_error());
        return 1;
    }
    if (profiling && pprof_recorder_rate(rec) != 1000)
        fail("the recorder samples at %lld Hz, want 1000", (long long)pprof_recorder_rate(rec));

    void *probe = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
        fprintf(stderr, "torture: FAIL: dlopen %s: %s\n", plugin_path, dlerror());
        return 1;
    }
    dlclose(probe);
    find_sys_libs();

    printf("torture: running for %d s %s\n", seconds, profiling ? "at 1000 Hz" : "without profiling");
    auto t0 = Clock::now();
    double cpu0 = process_cpu_seconds();
    std::vector<std::thread> workers;
    if (group_enabled("dlopen")) {
        workers.emplace_back(dlopen_worker, 0);
        workers.emplace_back(dlopen_worker, 1);
    }
    if (group_enabled("threads"))
        workers.emplace_back(threads_worker);
    if (group_enabled("fork"))
        workers.emplace_back(fork_worker);
    if (group_enabled("spawn"))
        workers.emplace_back(spawn_worker);
    if (group_enabled("throw")) {
        workers.emplace_back(throw_worker, 0);
        workers.emplace_back(throw_worker, 1);
    }
    if (group_enabled("burn"))
        workers.emplace_back(burn_worker);

    int64_t total_samples = 0;
    int windows = 0, windows_with_burn = 0, lost_windows = 0;
    size_t max_bytes = 0;
    double max_snapshot_s = 0;
    int max_excess_timers = 0;
    pprof_profile *last = nullptr;
    for (int s = 1; s <= seconds; s++) {
        std::this_thread::sleep_until(t0 + std::chrono::seconds(s));
        auto ts = Clock::now();
        if (!profiling) {
            check_progress();
            continue;
        }
        pprof_profile *p = nullptr;
        /* The last window ends with stop, while the workers still run. */
        rc = s < seconds ? pprof_recorder_snapshot(rec, &p) : pprof_recorder_stop(rec, &p);
        if (rc || !p) {
            fail("%s at %d s: %s", s < seconds ? "snapshot" : "stop", s, pprof_last_error());
            continue;
        }
        ProfileInfo info = inspect(p);
        size_t len = 0;
        encode(p, &len);
        double dt = seconds_since(ts);
        if (dt > max_snapshot_s)
            max_snapshot_s = dt;
        if (len > max_bytes)
            max_bytes = len;
        total_samples += info.samples;
        windows++;
        windows_with_burn += info.has_burn;
        lost_windows += info.has_lost;
        if (s < seconds)
            pprof_profile_free(p);
        else
            last = p;

        pprof_cpu_stats st;
        pprof_cpu_stats_get(&st);
        int tasks = count_tasks();
        if (s < seconds && tasks > 0 && st.threads_timed - tasks > max_excess_timers)
            max_excess_timers = st.threads_timed - tasks;
        check_progress();
        if (s % 5 == 0 || s == seconds)
            printf("torture: %2d s: %lld samples in the window (%.0f ms to snapshot and encode), "
                   "%d threads, %d timed, %d failures\n",
                   s, (long long)info.samples, dt * 1000, tasks, st.threads_timed, failures.load());
    }

    double cpu_used = process_cpu_seconds() - cpu0;
    stopping = true;
    for (std::thread &w : workers)
        w.join();
    auto t_join = Clock::now();
    while (detached_live.load() > 0 && seconds_since(t_join) < 10)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (detached_live.load() > 0)
        fail("%d detached threads did not finish", detached_live.load());

    ProfileInfo fin = last ? inspect(last) : ProfileInfo{};
    if (!profiling)
        ; /* nothing sampled */
    else if (!last)
        fail("no final profile");
    else if (fin.samples <= 0)
        fail("the last profile has no samples");
    if (profiling && group_enabled("burn") && windows_with_burn == 0)
        fail("no profile window shows torture_burn_* (symbolization)");
    if (max_excess_timers > 256)
        fail("%d more CPU timers than threads: timers of exited threads leak", max_excess_timers);
    pprof_profile_free(last);
    pprof_recorder_free(rec);

    pprof_cpu_stats st;
    pprof_cpu_stats_get(&st);
    if (profiling)
        printf("torture: the profiles account for %.1f s of the %.1f s of CPU the process used\n",
               (double)total_samples / 1000, cpu_used);
    printf("torture: activity counts:");
    for (Activity &a : acts)
        if (a.enabled)
            printf(" %s=%llu", a.name, (unsigned long long)a.count.load());
    printf("\n");
    printf("torture: %d windows, %lld samples (last window %lld), %d windows show "
           "torture_burn_*, %d show lost samples; largest profile %zu bytes; slowest "
           "snapshot+encode %.0f ms; slowest fork %lld us; timers-minus-threads peak %d\n",
           windows, (long long)total_samples, (long long)fin.samples, windows_with_burn,
           lost_windows, max_bytes, max_snapshot_s * 1000, (long long)max_fork_us.load(),
           max_excess_timers);
    uint64_t slow = st.handler_hist[PPROF_CPU_HIST_BUCKETS - 1], median_ns = 0, seen = 0;
    for (int i = 0; i < PPROF_CPU_HIST_BUCKETS && st.signals; i++) {
        seen += st.handler_hist[i];
        if (!median_ns && seen * 2 >= st.signals)
            median_ns = (uint64_t)(i + 1) * 100;
    }
    printf("torture: sampler: %llu signals, %llu samples, %llu lost, %llu truncated; handler "
           "mean %.0f ns, median < %llu ns, %llu over %d us\n",
           (unsigned long long)st.signals, (unsigned long long)st.samples,
           (unsigned long long)st.lost, (unsigned long long)st.truncated,
           st.signals ? (double)st.handler_ns / (double)st.signals : 0.0,
           (unsigned long long)median_ns, (unsigned long long)slow,
           (PPROF_CPU_HIST_BUCKETS - 1) / 10);
    for (Activity &a : acts)
        if (a.enabled && a.count.load() == 0)
            fail("%s never completed", a.name);

    rc = pprof_server_stop();
    if (rc)
        fail("pprof_server_stop: %s", pprof_last_error());
    if (failures.load()) {
        printf("torture: FAILED (%d failures)\n", failures.load());
        return 1;
    }
    printf("torture: ok\n");
    return 0;
}

