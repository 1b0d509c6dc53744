/* sym_cache.c: the per-address result cache and the demangled names. */
#define _GNU_SOURCE
#include "sym_internal.h"

void pp_sym_cache_clear(struct pp_sym_session *s)
{
    pp_table_free(&s->cache);
    pp_table_free(&s->dem);
    pp_arena_release(&s->cache_arena);
}

/* Demangled form of `raw`, cached by pointer (names live in the Dwfl's
 * string tables, so one symbol always comes back as one pointer). */
const char *pp_sym_demangle(struct pp_sym_session *s, const char *raw)
{
    if (raw == NULL || pp_sym_demangler == NULL || raw[0] != '_' || raw[1] != 'Z')
        return raw;
    uint64_t key = (uint64_t)(uintptr_t)raw;
    demangle_slot *e = pp_table_find(&s->dem, key);
    if (e)
        return e->demangled;
    int status = -1;
    char *d = pp_sym_demangler(raw, NULL, NULL, &status);
    const char *out = raw;
    if (d && status == 0) {
        const char *copy = pp_arena_strdup(&s->cache_arena, d);
        if (copy)
            out = copy;
    }
    free(d);
    if ((e = pp_table_add(&s->dem, key)) != NULL)
        e->demangled = out;
    return out;
}
