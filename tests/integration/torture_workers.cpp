/* torture_workers.cpp: the workers of prog_torture_linked (see its
 * comment): each loops over one thing that tends to break in-process
 * profilers until `stopping`, counting its progress in acts[], and reports
 * what went wrong through fail().
 */
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

#include <cmath>
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

/* ------------------------------------------------------------- plugin */

using work_fn = uint64_t (*)(uint64_t);
using calls_fn = uint64_t (*)(void);
using call_fn = int (*)(void (*)(void *), void *);

/* What torture_plugin_work(n) returns. */
uint64_t expected_work(uint64_t n)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++)
        acc += i * i * 31u;
    return acc;
}

void *must_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p)
        fail("dlsym %s in %s: %s", name, plugin_path, dlerror());
    return p;
}

/* System libraries to load and unload, with a symbol each must export. The
 * ones that are missing here are skipped (found at start-up). */
struct SysLib {
    const char *name, *symbol;
};
const SysLib sys_candidates[] = {
    {"libm.so.6", "cos"},
    {"libz.so.1", "zlibVersion"},
    {"libexpat.so.1", "XML_ExpatVersion"},
    {"libgmp.so.10", "__gmpz_init"},
    {"libsqlite3.so.0", "sqlite3_libversion"},
    {"libcrypt.so.1", "crypt"},
    {"libbz2.so.1.0", "BZ2_bzlibVersion"},
    {"libxml2.so.2", "xmlCheckVersion"},
};
std::vector<SysLib> sys_libs;

void find_sys_libs()
{
    for (const SysLib &l : sys_candidates) {
        void *h = dlopen(l.name, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        if (dlsym(h, l.symbol))
            sys_libs.push_back(l);
        dlclose(h);
    }
    std::string names;
    for (const SysLib &l : sys_libs)
        names += std::string(" ") + l.name;
    printf("torture: system libraries to cycle:%s\n", names.c_str());
}

void dlopen_worker(int idx)
{
    uint64_t iter = (uint64_t)idx * 3;
    while (!stopping.load(std::memory_order_relaxed)) {
        iter++;
        void *h = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fail("dlopen %s: %s", plugin_path, dlerror());
            return;
        }
        auto work = (work_fn)must_sym(h, "torture_plugin_work");
        auto calls = (calls_fn)must_sym(h, "torture_plugin_calls");
        if (!work || !calls) {
            dlclose(h);
            return;
        }
        uint64_t n = 20000 + (iter % 7) * 3000;
        uint64_t got = work(n);
        if (got != expected_work(n))
            fail("torture_plugin_work(%llu) = %llu, want %llu", (unsigned long long)n,
                 (unsigned long long)got, (unsigned long long)expected_work(n));
        if (calls() < 1)
            fail("the plugin's thread-local counter did not count a call");
        if (dlclose(h)) {
            fail("dlclose %s: %s", plugin_path, dlerror());
            return;
        }
        acts[A_PLUGIN].count++;

        if (!sys_libs.empty()) {
            const SysLib &l = sys_libs[iter % sys_libs.size()];
            void *s = dlopen(l.name, RTLD_NOW | RTLD_LOCAL);
            if (!s) {
                fail("dlopen %s: %s", l.name, dlerror());
                return;
            }
            if (!dlsym(s, l.symbol))
                fail("dlsym %s in %s: %s", l.symbol, l.name, dlerror());
            if (dlclose(s)) {
                fail("dlclose %s: %s", l.name, dlerror());
                return;
            }
            acts[A_SYSLIB].count++;
        }
    }
}

/* ------------------------------------------------------------ threads */

std::atomic<int> detached_live{0};

__attribute__((noinline)) uint64_t churn_work(uint64_t seed)
{
    return mix(20000 + seed % 10000, seed);
}

void *churn_thread(void *arg)
{
    churn_work((uint64_t)(uintptr_t)arg);
    return arg;
}

void *detached_thread(void *arg)
{
    churn_work((uint64_t)(uintptr_t)arg);
    acts[A_DETACHED].count++;
    detached_live--;
    return nullptr;
}

void threads_worker()
{
    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    uint64_t seed = 1;
    while (!stopping.load(std::memory_order_relaxed)) {
        pthread_t t[4];
        int started = 0;
        for (int i = 0; i < 4; i++, started++) {
            int rc = pthread_create(&t[i], nullptr, churn_thread, (void *)(uintptr_t)seed++);
            if (rc) {
                fail("pthread_create: %s", strerror(rc));
                break;
            }
        }
        for (int i = 0; i < 2; i++) {
            pthread_t d;
            detached_live++;
            int rc = pthread_create(&d, &detached, detached_thread, (void *)(uintptr_t)seed++);
            if (rc) {
                detached_live--;
                fail("pthread_create (detached): %s", strerror(rc));
            }
        }
        try {
            std::vector<std::thread> st;
            for (int i = 0; i < 4; i++)
                st.emplace_back([s = seed++] { churn_work(s); });
            for (std::thread &x : st)
                x.join();
            acts[A_STDTHREAD].count += 4;
        } catch (const std::system_error &e) {
            fail("std::thread: %s", e.what());
        }
        for (int i = 0; i < started; i++) {
            void *ret = nullptr;
            int rc = pthread_join(t[i], &ret);
            if (rc)
                fail("pthread_join: %s", strerror(rc));
            else
                acts[A_PTHREAD].count++;
        }
        if (started < 4)
            break;
        /* Keep the detached threads from piling up faster than they end. */
        while (detached_live.load() > 64 && !stopping.load())
            std::this_thread::yield();
    }
    pthread_attr_destroy(&detached);
}

/* --------------------------------------------------------- fork, spawn */

/* Waits for pid; 0 when it exited with status 0. */
int reap(pid_t pid, const char *what)
{
    int st;
    pid_t r;
    do
        r = waitpid(pid, &st, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        fail("%s: waitpid: %s", what, strerror(errno));
        return -1;
    }
    if (WIFSIGNALED(st)) {
        fail("%s: child killed by signal %d (%s)", what, WTERMSIG(st), strsignal(WTERMSIG(st)));
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fail("%s: child exited with status %d", what, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return -1;
    }
    return 0;
}

std::atomic<int64_t> max_fork_us{0};

void note_fork_time(Clock::time_point t0)
{
    int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
    int64_t m = max_fork_us.load();
    while (us > m && !max_fork_us.compare_exchange_weak(m, us)) {
    }
}

void fork_worker()
{
    uint64_t iter = 0;
    while (!stopping.load(std::memory_order_relaxed)) {
        iter++;
        auto t0 = Clock::now();
        pid_t pid = fork();
        if (pid < 0) {
            fail("fork: %s", strerror(errno));
            return;
        }
        if (pid == 0) {
            execl("/bin/true", "true", (char *)nullptr);
            _exit(127);
        }
        note_fork_time(t0);
        if (reap(pid, "fork+exec /bin/true") == 0)
            acts[A_FORK_EXEC].count++;

        /* A child that stays in this image for a moment: it inherits the
         * profiling signal handler but must not get a profiling signal. */
        t0 = Clock::now();
        pid = fork();
        if (pid < 0) {
            fail("fork: %s", strerror(errno));
            return;
        }
        if (pid == 0) {
            uint64_t a = mix(200000 + iter % 1000, iter);
            uint64_t b = mix(200000 + iter % 1000, iter);
            _exit(a == b ? 0 : 3);
        }
        note_fork_time(t0);
        if (reap(pid, "fork (no exec)") == 0)
            acts[A_FORK_ONLY].count++;
    }
}

void spawn_worker()
{
    char arg0[] = "true";
    char *argv[] = {arg0, nullptr};
    while (!stopping.load(std::memory_order_relaxed)) {
        pid_t pid;
        int rc = posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ);
        if (rc) {
            fail("posix_spawn /bin/true: %s", strerror(rc));
            return;
        }
        if (reap(pid, "posix_spawn /bin/true") == 0)
            acts[A_SPAWN].count++;
    }
}

/* --------------------------------------------------------- exceptions */

struct TortureError : std::runtime_error {
    uint64_t token;
    explicit TortureError(uint64_t t) : std::runtime_error("torture"), token(t) {}
};

volatile uint64_t sink;

__attribute__((noinline)) uint64_t throw_down(int depth, uint64_t token)
{
    std::string guard = "frame-";   /* a destructor for the unwinder to run */
    guard += (char)('a' + depth);
    uint64_t local = mix(300, token + (uint64_t)depth);
    if (depth == 0)
        throw TortureError(token);
    if (depth == 3) {
        try {
            return throw_down(depth - 1, token) + local + guard.size();
        } catch (const TortureError &) {
            sink = local;
            throw; /* rethrow from a frame in the middle */
        }
    }
    return throw_down(depth - 1, token) + local + guard.size();
}

void throw_from_callback(void *arg)
{
    uint64_t token = *(uint64_t *)arg;
    sink = throw_down(2, token);
}

void throw_worker(int idx)
{
    uint64_t token = (uint64_t)idx << 48;
    while (!stopping.load(std::memory_order_relaxed)) {
        token++;
        try {
            sink = throw_down(6 + (int)(token % 4), token);
            fail("an exception was not thrown");
        } catch (const TortureError &e) {
            if (e.token != token)
                fail("caught token %llu, want %llu", (unsigned long long)e.token,
                     (unsigned long long)token);
            else
                acts[A_THROW].count++;
        }
        sink = mix(2000, token);

        if (token % 16 == 0) {
            /* Through the plugin's frames, while other threads load and
             * unload it. */
            void *h = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
            if (!h) {
                fail("dlopen %s: %s", plugin_path, dlerror());
                return;
            }
            auto call = (call_fn)must_sym(h, "torture_plugin_call");
            if (call) {
                try {
                    call(throw_from_callback, &token);
                    fail("an exception did not cross the plugin");
                } catch (const TortureError &e) {
                    if (e.token != token)
                        fail("caught token %llu through the plugin, want %llu",
                             (unsigned long long)e.token, (unsigned long long)token);
                    else
                        acts[A_THROW_PLUGIN].count++;
                }
            }
            if (dlclose(h))
                fail("dlclose %s: %s", plugin_path, dlerror());
        }
    }
}

/* --------------------------------------------------------------- burn */

extern "C" __attribute__((noinline)) uint64_t torture_burn_primes(uint64_t lo, uint64_t n)
{
    uint64_t found = 0;
    for (uint64_t k = lo; k < lo + n; k++) {
        bool prime = k > 1;
        for (uint64_t d = 2; d * d <= k && prime; d++)
            prime = k % d != 0;
        found += prime;
    }
    return found;
}

extern "C" __attribute__((noinline)) double torture_burn_float(int n)
{
    double acc = 0;
    for (int i = 1; i <= n; i++)
        acc += std::sin((double)i) / i;
    return acc;
}

void burn_worker()
{
    uint64_t lo = 1000000;
    while (!stopping.load(std::memory_order_relaxed)) {
        sink = torture_burn_primes(lo, 2000);
        sink = (uint64_t)(torture_burn_float(20000) * 1000);
        lo += 2000;
        acts[A_BURN].count++;
    }
}

} // namespace torture
