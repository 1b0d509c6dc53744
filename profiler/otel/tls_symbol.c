/* tls_symbol.c: the exported thread-local pointer otel_thread_ctx_v1.
 *
 * OTEP 4947 readers find this symbol in .dynsym (libpprof.map exports it),
 * classify how its module reaches it from the relocations against it, and
 * read it from a stopped thread. This file is built with the TLS
 * descriptor dialect where the compiler has it (the specification's
 * preferred access; CMakeLists.txt: x86-64's -mtls-dialect=gnu2, giving
 * R_X86_64_TLSDESC; arm64's -mtls-dialect=desc, its default, giving
 * R_AARCH64_TLSDESC, whose static-TLS offset is from the thread pointer
 * upward, TLS variant I), and with the general-dynamic model,
 * not the initial-exec model the rest of libpprof uses, so that the
 * relocation names the symbol. Only the owning thread writes it, once.
 */
#include "otel_private.h"

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

/* async-signal-safe */
void pp_otel_tls_attach(void *rec)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    otel_thread_ctx_v1 = rec;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
