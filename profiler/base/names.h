/* names.h: profile names that custom profiles may not take (names.c).
 *
 * The server owns its endpoint names and reserves them at start-up; a
 * custom profile is served under the same prefix, so pprof_custom_new
 * refuses a reserved name. The core keeps no list of endpoints itself.
 */
#ifndef PP_NAMES_H
#define PP_NAMES_H
#include <stddef.h>

/* The label that marks the profiler's own work (its threads, and its calls
 * on the program's threads): samples that carry it are left out of the
 * heap, allocation, mutex and block profiles and counted as the
 * profiler's own in the stats and on the index. labels/ and server/ set
 * it; the profiles' builders look for it. */
#define PP_OWN_KEY "pprof.work"
#define PP_OWN_VALUE "libpprof"

/* Reserves n names (static strings, kept by pointer). Thread-safe. */
void pp_names_reserve(const char *const *names, size_t n);
/* 1 if `name` is reserved. Thread-safe. */
int pp_name_reserved(const char *name);
#endif
