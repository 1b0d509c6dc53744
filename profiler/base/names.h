/* names.h: profile names that custom profiles may not take (names.c).
 *
 * The server owns its endpoint names and reserves them at start-up; a
 * custom profile is served under the same prefix, so pprof_custom_new
 * refuses a reserved name. The core keeps no list of endpoints itself.
 */
#ifndef PP_NAMES_H
#define PP_NAMES_H
#include <stddef.h>

/* Reserves n names (static strings, kept by pointer). Thread-safe. */
void pp_names_reserve(const char *const *names, size_t n);
/* 1 if `name` is reserved. Thread-safe. */
int pp_name_reserved(const char *name);
#endif
