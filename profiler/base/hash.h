/* hash.h: the one hash function and the one hash-table index of the code
 * that runs outside signal handlers and hooks (builders, the symbolizer).
 *
 * A pp_index maps hashes to ids 1..n of entries that the caller keeps in
 * its own array, in insertion order: open addressing with linear probing
 * at a load of at most one half, each id's hash kept so growing needs no
 * callback. A lookup walks PP_INDEX_PROBE from the key's hash, compares the
 * caller's entry for each id it meets, and on a miss adds at the slot where
 * the walk stopped:
 *
 *     uint64_t h = pp_hash_str(s);
 *     PP_INDEX_PROBE(&ix, h, j)
 *         if (strcmp(strs[ix.slot[j] - 1], s) == 0) return ix.slot[j];
 *     uint32_t id = pp_index_add(&ix, h);  // 0 when out of memory
 *     if (id) strs[id - 1] = s;            // (room for ix.n entries)
 *
 * Not thread-safe; allocates with malloc, so never used from a signal
 * handler or a malloc hook.
 */
#ifndef PP_HASH_H
#define PP_HASH_H
#include <stddef.h>
#include <stdint.h>

struct pp_arena;

/* Mixes v into the running hash h. */
static inline uint64_t pp_hash_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* FNV-1a of a NUL-terminated string, mixed. */
static inline uint64_t pp_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return pp_hash_mix(0, h);
}

/* Makes room for element n (0-based) in the array *arrp of `size`-byte
 * elements whose capacity is *cap, doubling it (from 64). 0, or -1 when
 * out of memory (the array is unchanged then). */
int pp_reserve(void *arrp, size_t *cap, size_t n, size_t size);

/* In an array of n `size`-byte entries sorted by the uint64_t at byte
 * offset `off` of each, the number of leading entries whose key is <= key
 * (bisection). */
size_t pp_upper_bound(const void *arr, size_t n, size_t size, size_t off, uint64_t key);

typedef struct pp_index {
    uint32_t *slot;  /* id, 0 when free; NULL until the first add */
    uint32_t *hash;  /* id - 1 -> its hash */
    size_t mask;     /* slots - 1 */
    size_t n, cap;   /* ids in use, room in hash */
} pp_index;

/* Walks the probe sequence of hash h; the body sees slot index j while the
 * slot holds an id. An empty index runs the body never (j is then 0). */
#define PP_INDEX_PROBE(ix, h, j)                                                              \
    for (size_t j = (ix)->slot ? (uint32_t)(h) & (ix)->mask : 0; (ix)->slot && (ix)->slot[j]; \
         j = (j + 1) & (ix)->mask)

/* Adds id n + 1 with hash h (not yet present), growing at half load.
 * Returns the id, or 0 when out of memory (the index is unchanged then). */
uint32_t pp_index_add(pp_index *ix, uint64_t h);
/* Frees the index's memory and leaves it empty. */
void pp_index_free(pp_index *ix);

/* A table of entries keyed by a uint64_t, the entry's first member (an
 * address, or a pointer as an integer): the common case of a pp_index,
 * with the entries in insertion order. Initialize with PP_TABLE_INIT. */
typedef struct pp_table {
    unsigned char *e; /* entries, `size` bytes each */
    size_t size, cap;
    pp_index ix;
} pp_table;
#define PP_TABLE_INIT(type) {.size = sizeof(type)}

static inline uint64_t pp_hash_u64(uint64_t x)
{
    return pp_hash_mix(0, x);
}
/* The entry with key `key`, or NULL. */
void *pp_table_find(const pp_table *t, uint64_t key);
/* A new zeroed entry with key `key` (not yet present), the last of the
 * table; NULL when out of memory. Pointers to entries stay valid until the
 * next add. */
void *pp_table_add(pp_table *t, uint64_t key);
/* The number of entries, and entry i (0 <= i < count). */
static inline size_t pp_table_count(const pp_table *t) { return t->ix.n; }
static inline void *pp_table_at(const pp_table *t, size_t i) { return t->e + i * t->size; }
/* Frees the entries and the index; the table stays usable, empty. */
void pp_table_free(pp_table *t);

/* A string table: ids 0.. in first-use order, each string once (the
 * profile's, model/; the merge's, proto/). Zeroed is empty. */
typedef struct pp_strtab {
    const char **strs; /* id -> string */
    size_t cap;
    pp_index ix;
} pp_strtab;
/* The id of s (NULL counts as ""), added when new: copied into `copy`
 * when it is not NULL, else referenced. -1 when out of memory. */
int64_t pp_strtab_id(pp_strtab *t, const char *s, struct pp_arena *copy);
/* The id of s (NULL counts as ""), or -1 when it is not there. */
int64_t pp_strtab_find(const pp_strtab *t, const char *s);
static inline size_t pp_strtab_count(const pp_strtab *t) { return t->ix.n; }
void pp_strtab_free(pp_strtab *t);
#endif
