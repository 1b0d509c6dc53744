/* base.h: the interface of base/, what every part of the library stands on.
 *
 * Nothing here knows any profile kind. It holds PP_ASSERT (invariant.h), the
 * error codes' texts and
 * the calling thread's last failure (error.h), the futex lock that the
 * profiler uses instead of pthread mutexes, with the hook variant that never
 * waits for a fork (lock.h), the process-wide state: a fork under way and
 * the shutdown hooks and the switch to the profiler's own heap (process.h),
 * the profiler's own mappings, made and listed in one place (own_maps.h),
 * the label set of the profiler's own work, as labels/ registers it
 * (own_labels.h),
 * the descriptors the profiler owns, known by identity (fds.h),
 * the one next-symbol resolver of the
 * overrides (next.h), the names the server reserves for its
 * endpoints (names.h), the LIBPPROF_* environment (env.h), an
 * arena for builders (arena.h), hex digits and percent-encoding
 * (hex.h), protobuf varints (varint.h), and the public writers (writer.c).
 *
 * Invariants: lock.h and pp_fail are usable inside signal handlers and
 * malloc; nothing in base/ calls into another folder.
 */
#ifndef PP_BASE_H
#define PP_BASE_H
#include "arena.h"
#include "invariant.h"
#include "env.h"
#include "error.h"
#include "fds.h"
#include "hash.h"
#include "hex.h"
#include "lock.h"
#include "names.h"
#include "next.h"
#include "own_labels.h"
#include "own_maps.h"
#include "process.h"
#include "varint.h"
#endif
