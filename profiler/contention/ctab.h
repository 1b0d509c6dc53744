/* ctab.h: cumulative tables of contention records (ctab.c). */
#ifndef PP_CTAB_H
#define PP_CTAB_H
#include "base/base.h"
#include "pprof.h"
#include <stddef.h>
#include <stdint.h>

#define PP_CTAB_BUCKETS (1u << 14)

typedef struct pp_crec {
    uint32_t next;               /* bucket chain, a record id; 0 ends */
    uint32_t nframes;
    uint64_t hash;
    const pprof_labels *labels;  /* kept set (pp_labels_cumulative) or NULL */
    int64_t count, delay_ns;     /* scaled when recorded, under the lock */
    uint64_t pcs[];
} pp_crec;

typedef struct pp_ctab {
    pp_mutex lock;
    char *store;                 /* mmap'd reservation, records appended */
    size_t used;
    uint32_t last;               /* the newest record's id */
    uint64_t nrecords;
    _Atomic uint64_t lost;       /* events not recorded: the table was held by a fork */
    uint32_t buckets[PP_CTAB_BUCKETS];
} pp_ctab;

typedef struct pp_ccount {
    uint32_t rec;
    int64_t count, delay_ns;
} pp_ccount;

/* Adds an event (already scaled) to the record of (pcs, labels). Never
 * calls malloc (lock hooks run inside other allocators) and never waits
 * for a fork: while one holds the table, the event is counted in `lost`.
 * malloc-safe */
void pp_ctab_add(pp_ctab *t, const uint64_t *pcs, size_t npcs, const pprof_labels *labels, int64_t count,
                 int64_t delay_ns);
/* A copy of every record's counters, in record order (malloc'd). */
int pp_ctab_snap(pp_ctab *t, pp_ccount **out, size_t *n);
const pp_crec *pp_ctab_rec(const pp_ctab *t, uint32_t id);
/* The profile of now - base (base NULL: totals), records with all-zero
 * differences dropped. Unfinished. */
pprof_profile *pp_ctab_build(const pp_ctab *t, const pp_ccount *base, size_t nbase, const pp_ccount *now,
                             size_t nnow);
void pp_ctab_fork_prepare(pp_ctab *t);
void pp_ctab_fork_parent(pp_ctab *t);
void pp_ctab_fork_child(pp_ctab *t);
#endif
