/* sym_cache.c: the per-address result cache and the demangled names,
 * kept within a byte budget.
 *
 * An address's answer stays cached while its Dwfl lives, so a profiler
 * that asks every few seconds pays for each code address once. The cache
 * grows with the distinct addresses profiles hold; when its memory (the
 * tables, the frames and the demangled names) passes the budget it is
 * emptied at the start of the next batch and fills again with what that
 * batch asks for: what the recent profiles use is what stays.
 */
#define _GNU_SOURCE
#include "sym_internal.h"

static uint64_t budget;             /* bytes; set once by pp_sym_cache_init */
static uint64_t evictions;          /* under the session lock */

void pp_sym_cache_init(void)
{
    budget = (uint64_t)pp_env_int("LIBPPROF_SYMBOLIZER_CACHE_MB", 64, 1, 1 << 20) << 20;
}

uint64_t pp_sym_cache_budget(void)
{
    return budget;
}

static uint64_t cache_bytes(const struct pp_sym_session *s)
{
    /* Each table keeps its entries and an index of about twice as many
     * slots. */
    return s->cache_arena.bytes + (uint64_t)pp_table_count(&s->cache) * (sizeof(cache_slot) + 16) +
           (uint64_t)pp_table_count(&s->dem) * (sizeof(demangle_slot) + 16);
}

void pp_sym_cache_keep_budget(struct pp_sym_session *s)
{
    if (cache_bytes(s) > budget) {
        pp_sym_cache_clear(s);
        evictions++;
    }
}

void pp_sym_cache_stats(const struct pp_sym_session *s, pprof_symbolizer_stats *out)
{
    out->cache_entries = pp_table_count(&s->cache);
    out->cache_bytes = cache_bytes(s);
    out->cache_budget = budget;
    out->cache_evictions = evictions;
}

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
