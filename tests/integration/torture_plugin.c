/* torture_plugin.c: a small shared object that prog_torture_linked loads and
 * unloads in a loop while CPU profiling runs at 1000 Hz.
 *
 * It burns CPU in its own code (so profiling signals land in an object that
 * comes and goes, possibly before the profiler has registered its unwind
 * tables), keeps a thread-local counter (dynamic TLS, allocated on first
 * touch by each thread), and calls back into its host so that a C++
 * exception can be thrown through its frames. Build it with -fexceptions so
 * those frames have unwind tables.
 */
#include <stdint.h>

static __thread uint64_t calls_here; /* dynamic TLS of a dlopened object */
static volatile uint64_t loads;

__attribute__((constructor)) static void plugin_loaded(void)
{
    loads++;
}

/* Sum of i*i*31 for i in [0, n), modulo 2^64; the host recomputes it. */
__attribute__((visibility("default"), noinline)) uint64_t torture_plugin_work(uint64_t n)
{
    volatile uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++)
        acc += i * i * 31u;
    calls_here++;
    return acc;
}

/* Calls cb(arg) from a couple of frames inside this object; the callback may
 * throw, and the exception then unwinds through these frames. */
__attribute__((noinline)) static int plugin_inner(void (*cb)(void *), void *arg, int depth)
{
    volatile int pad = depth;
    if (depth > 0)
        return plugin_inner(cb, arg, depth - 1) + pad;
    cb(arg);
    return pad;
}

__attribute__((visibility("default"), noinline)) int torture_plugin_call(void (*cb)(void *), void *arg)
{
    return plugin_inner(cb, arg, 3);
}

/* How many times this thread called torture_plugin_work since the object
 * was loaded (0 again after each unload). */
__attribute__((visibility("default"))) uint64_t torture_plugin_calls(void)
{
    return calls_here;
}
