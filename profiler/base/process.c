/* process.c: process-wide state of the core: a fork in progress and the
 * shutdown hooks (see process.h and lock.h). */
#include "lock.h"
#include "process.h"

#include <stdatomic.h>
#include <stddef.h>

_Atomic int pp_fork_pending;

#define MAX_HOOKS 8
static void (*_Atomic hooks[MAX_HOOKS])(void);
static _Atomic int shut_down;

int pp_shutdown_hook_add(void (*fn)(void))
{
    for (int i = 0; i < MAX_HOOKS; i++) {
        void (*expected)(void) = NULL;
        if (atomic_compare_exchange_strong(&hooks[i], &expected, fn) || expected == fn)
            return 0;
    }
    return -1;
}

void pp_shutdown_run(void (*first)(void))
{
    if (atomic_exchange(&shut_down, 1))
        return;
    if (first)
        first();
    for (int i = 0; i < MAX_HOOKS; i++) {
        void (*fn)(void) = atomic_load(&hooks[i]);
        if (fn)
            fn();
    }
}

int pp_shutting_down(void)
{
    return atomic_load(&shut_down);
}
