/* pseudo.c: frames that are not code, fixed and named.
 *
 * The fixed pseudo-addresses (profile.h's PP_PC_*) say what happened to a
 * stack: cut, lost, not answered. Named frames say what a sample is where
 * no code stands for it: the memory profile's roots ("[memory: thread
 * stacks]"), a mapped file, a thread's stack. A name is interned once per
 * process (pp_frame_named) into a fixed table, and its address is
 * PP_PC_NAMED + its index, so windows and merges compare frames by address
 * across profiles; the table holds PP_NAMED_MAX names (names past it share
 * one frame that says so).
 */
#include "model.h"
#include "base/base.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PP_NAMED_MAX 65536

static const char *names[PP_NAMED_MAX];
static _Atomic uint32_t nnames;
static pp_mutex names_lock = PP_MUTEX_INIT;
static pp_index names_ix; /* index + 1, by name; names_lock */

uint64_t pp_frame_named(const char *name)
{
    static const char full[] = "[more names than the profiler keeps]";
    if (!name)
        name = "";
    uint64_t h = pp_hash_str(name);
    uint32_t id = UINT32_MAX;
    pp_mutex_lock(&names_lock);
    PP_INDEX_PROBE(&names_ix, h, j)
        if (strcmp(names[names_ix.slot[j] - 1], name) == 0) {
            id = names_ix.slot[j] - 1;
            break;
        }
    if (id == UINT32_MAX) {
        uint32_t n = atomic_load_explicit(&nnames, memory_order_relaxed);
        char *copy = n < PP_NAMED_MAX - 1 ? strdup(name) : NULL;
        if (copy && pp_index_add(&names_ix, h) == n + 1) {
            names[n] = copy;
            atomic_store_explicit(&nnames, n + 1, memory_order_release);
            id = n;
        } else {
            free(copy);
        }
    }
    pp_mutex_unlock(&names_lock);
    if (id == UINT32_MAX) {
        names[PP_NAMED_MAX - 1] = full; /* the same pointer every time */
        return PP_PC_NAMED + PP_NAMED_MAX - 1;
    }
    return PP_PC_NAMED + id;
}

/* The names' lock across fork: held from prepare to parent and child, so
 * the child never inherits it held by a thread it does not have. */
void pp_model_fork_prepare(void)
{
    pp_mutex_lock(&names_lock);
}

void pp_model_fork_parent(void)
{
    pp_mutex_unlock(&names_lock);
}

void pp_model_fork_child(void)
{
    names_lock = (pp_mutex)PP_MUTEX_INIT;
}

const char *pp_frame_name(uint64_t pc)
{
    switch (pc) {
    case PP_PC_TRUNCATED: return "[truncated]";
    case PP_PC_LOST: return "[lost samples]";
    case PP_PC_NO_ANSWER: return "[no answer: the thread blocks the profiling signal or is stopped]";
    case PP_PC_TIME_LIMIT: return "[not taken: the dump's time limit was reached]";
    case PP_PC_NO_CREATOR: return "[not created through pthread_create]";
    case PP_PC_BLOCKED: return "[not sampled: the thread blocks the profiling signal]";
    case PP_PC_BEFORE: return "[not sampled: the process's CPU time before profiling started]";
    case PP_PC_AT_EXIT: return "[not sampled: a thread's CPU time counted at its exit, on the function it started]";
    case PP_PC_STOP_NO_INFO: return "[unwinding stopped: no unwind info]";
    case PP_PC_STOP_SP: return "[unwinding stopped: the stack pointer did not grow]";
    case PP_PC_STOP_OFF_STACK: return "[unwinding stopped: a read outside the stack]";
    case PP_PC_STOP_UNLOADING: return "[unwinding stopped: objects being loaded or unloaded]";
    default: break;
    }
    if (pc >= PP_PC_NAMED && pc - PP_PC_NAMED < PP_NAMED_MAX) {
        uint32_t i = (uint32_t)(pc - PP_PC_NAMED);
        if (i == PP_NAMED_MAX - 1 && names[i])
            return names[i];
        if (i < atomic_load_explicit(&nnames, memory_order_acquire))
            return names[i];
    }
    return "[unknown]";
}
