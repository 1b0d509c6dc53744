/* otel_private.h: what otel/'s files share among themselves. */
#ifndef PP_OTEL_PRIVATE_H
#define PP_OTEL_PRIVATE_H
#include "otel.h"

/* Points the calling thread's otel_thread_ctx_v1 at `rec` (tls_symbol.c).
 * async-signal-safe */
void pp_otel_tls_attach(void *rec);

/* The key map (thread_ctx.c) and the lock that also serializes every
 * publication of the process context. */
void pp_otel_keys_lock(void);
void pp_otel_keys_unlock(void);
const char *const *pp_otel_keys_locked(size_t *n);
/* Publishes the process context again (process_ctx.c; key lock held). */
void pp_otel_republish_locked(void);
/* The child of a fork: the key lock is made new. */
void pp_otel_keys_fork_child(void);
#endif
