/* next.h: the one next-symbol resolver of the library's overrides (next.c).
 *
 * Every function libpprof overrides (malloc and its family, the C++
 * operators, pthread locks and waits, pthread_create, dlclose, exit,
 * __libc_start_main) forwards to the definition that follows libpprof's
 * own in the lookup order: glibc's, or another preloaded allocator's.
 */
#ifndef PP_NEXT_H
#define PP_NEXT_H

/* The next definition of `name` after libpprof's (dlsym RTLD_NEXT), in
 * symbol version `version` when not NULL (dlvsym); NULL when there is none.
 * Not malloc-safe by itself (the loader may allocate): the heap hooks call
 * it with their guard up or from their bootstrap buffer. */
void *pp_next_symbol(const char *name, const char *version);
#endif
