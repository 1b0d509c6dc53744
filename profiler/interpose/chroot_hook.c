/* chroot_hook.c: chroot, interposed, so that profiles taken after a
 * daemon confines itself keep their function names.
 *
 * Before the program's chroot, the symbolizer keeps /proc/self/maps and
 * every object mapped now open (symbolize/sym_keep.c: files only, never a
 * directory, so the new root still confines the program). What stays out
 * of reach inside a root without /proc: the thread list (threads started
 * through pthread_create are still sampled, and the profile says so) and
 * the reads that thread dumps make from /proc (docs/daemons.md).
 */
#define _GNU_SOURCE
#include "symbolize/symbolize.h"
#include "base/base.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PPROF_NO_HOOKS
#define API __attribute__((visibility("default")))

typedef int (*chroot_fn)(const char *);
static chroot_fn real_chroot;

API int chroot(const char *path)
{
    if (!real_chroot)
        real_chroot = (chroot_fn)pp_next_symbol("chroot", NULL);
    pp_sym_keep_files();
    return real_chroot ? real_chroot(path) : (int)syscall(SYS_chroot, path);
}
#endif
