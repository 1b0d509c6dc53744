/* profile.h: the in-memory profile and the builder recorders use to make one.
 *
 * A recorder adds raw samples (addresses + values + labels); pp_profile_finish
 * then symbolizes every distinct address once, builds the location and
 * mapping tables with IDs 1..N, and freezes the profile. After finish the
 * public structs of pprof.h are exactly what is stored here, so walking a
 * profile costs nothing and the encoder reads the same arrays.
 *
 * Memory: every string and array of a profile lives in its arena and is
 * freed at once by pprof_profile_free.
 */
#ifndef PP_PROFILE_H
#define PP_PROFILE_H

#include "pprof.h"
#include <stdbool.h>

/* Pseudo-addresses for frames that are not code; they become locations
 * with no mapping whose function says what happened. */
#define PP_PC_TRUNCATED 1   /* "[truncated]": the stack went deeper than max_frames */
#define PP_PC_LOST 2        /* "[lost samples]": the ring was full */
#define PP_PC_UNKNOWN 3     /* "[unknown]": no stack could be taken */
#define PP_PC_NO_ANSWER 4   /* a thread did not answer a dump's signal */
#define PP_PC_TIME_LIMIT 5  /* a thread dump ran out of time before this thread */
#define PP_PC_NO_CREATOR 6  /* a thread not created through pthread_create */
#define PP_PC_BLOCKED 7     /* CPU time of threads that block the profiling signal */
#define PP_PC_BEFORE 12     /* CPU time of a process before its recorder started (it joined mid-window) */
#define PP_PC_AT_EXIT 13    /* root of the CPU time of a thread that exited before its first sample */
/* The last frame of a stack the unwinder could not follow to its
 * outermost frame (unwind.h's enum pp_unwind_end says why), on every
 * processor: "[unwinding stopped: <why>]". */
#define PP_PC_STOP_NO_INFO 8   /* "no unwind info": no CFI for the pc, no frame-pointer record */
#define PP_PC_STOP_SP 9        /* "the stack pointer did not grow" */
#define PP_PC_STOP_OFF_STACK 10 /* "a read outside the stack" */
#define PP_PC_STOP_UNLOADING 11 /* "objects being loaded or unloaded": only the first frame taken */
#define PP_PC_PSEUDO_MAX 15
/* Named frames (pseudo.c): PP_PC_NAMED + the name's index, above every
 * user-space address. */
#define PP_PC_NAMED (1ull << 62)

/* Whether pc is a pseudo-frame, fixed or named. async-signal-safe */
static inline int pp_pc_is_pseudo(uint64_t pc)
{
    return pc <= PP_PC_PSEUDO_MAX || pc >= PP_PC_NAMED;
}
/* The frame that stands for `name` (interned once per process; copied):
 * the same address in every profile. Thread-safe; allocates. */
uint64_t pp_frame_named(const char *name);
/* fork handlers (lifecycle.c): the named frames' lock */
void pp_model_fork_prepare(void);
void pp_model_fork_parent(void);
void pp_model_fork_child(void);
/* The text of a pseudo-frame, fixed or named ("[unknown]" for any other
 * address). Thread-safe. */
const char *pp_frame_name(uint64_t pc);

#include "base/base.h"
#include "unwind/unwind.h"

/* The pseudo-frame that ends a stack whose walk ended with `end` (enum
 * pp_unwind_end): PP_PC_TRUNCATED or one of PP_PC_STOP_*; 0 for a whole
 * stack (nothing to append). async-signal-safe */
static inline uint64_t pp_pc_stack_end(int end)
{
    switch (end) {
    case PP_UNWIND_WHOLE: return 0;
    case PP_UNWIND_TRUNCATED: return PP_PC_TRUNCATED;
    case PP_UNWIND_SP_STUCK: return PP_PC_STOP_SP;
    case PP_UNWIND_OFF_STACK: return PP_PC_STOP_OFF_STACK;
    case PP_UNWIND_UNLOADING: return PP_PC_STOP_UNLOADING;
    default: return PP_PC_STOP_NO_INFO;
    }
}

/* A function of the profile's function table: string ids (model.h). */
typedef struct pp_model_function {
    uint32_t name, system_name, filename;
} pp_model_function;

struct pprof_profile {
    pp_arena *arena;
    pprof_value_type *types;
    size_t ntypes;
    pprof_value_type period_type;
    int64_t period;
    int64_t time_nanos;
    int64_t duration_nanos;
    int default_type;           /* index into types, -1 for none */
    const char **comments;
    size_t ncomments;

    pprof_sample *samples;
    size_t nsamples, samples_cap;

    pprof_location *locations;  /* sorted by id; id = index + 1 */
    size_t nlocations;
    pprof_mapping *mappings;    /* id = index + 1 */
    size_t nmappings;

    /* The string table: strs[id], strs[0] = "", each string once. The
     * builder interns into it as samples arrive; it stays after finish for
     * the encoders (model.h). */
    pp_strtab strtab;
    /* The function table, built at finish: fns[id - 1]; line_fn holds the
     * function id of every line, location by location (line0[i] is the
     * first of location i's lines). */
    pp_model_function *fns;
    size_t fns_cap;
    pp_index fn_ix;
    uint32_t *line_fn;
    size_t *line0;

    /* builder state, NULL after finish */
    struct pp_builder *b;
};

/* Creates an empty profile with the given sample types (copied). */
pprof_profile *pp_profile_new(const pprof_value_type *types, size_t ntypes,
                              pprof_value_type period_type, int64_t period);

/* Adds a sample: `pcs` leaf first, already adjusted to call sites (see
 * pprof_location.address); values has ntypes entries; labels are copied.
 * Samples with equal stacks and labels are merged by adding values.
 * Returns 0 or PPROF_ENOMEM. Not thread-safe (one builder, one thread). */
int pp_profile_add(pprof_profile *p, const uint64_t *pcs, size_t npcs, const int64_t *values,
                   const pprof_label *labels, size_t nlabels);

/* As pp_profile_add, with numeric labels (copied; part of the merge key). */
int pp_profile_add_num(pprof_profile *p, const uint64_t *pcs, size_t npcs, const int64_t *values,
                       const pprof_label *labels, size_t nlabels, const pprof_num_label *num,
                       size_t nnum);

/* Appends a sample known to be distinct from every other (no merging):
 * `pcs` is not copied and must stay valid until pp_profile_finish; labels
 * are copied. A profile is filled either with this or with the adding
 * functions above, not both. */
int pp_profile_append(pprof_profile *p, const uint64_t *pcs, size_t npcs, const int64_t *values,
                      const pprof_label *labels, size_t nlabels, const pprof_num_label *num, size_t nnum);

/* Adds every sample of the unfinished profile src (same sample types) to
 * dst with its values multiplied by sign: a difference of two snapshots. */
int pp_profile_add_profile(pprof_profile *dst, const pprof_profile *src, int64_t sign);
/* An empty profile of src's sample and period types and default type. */
pprof_profile *pp_profile_new_like(const pprof_profile *src);
/* The same for the values whose bit is set in mask (bit k: value k); the
 * others add 0. */
int pp_profile_add_values(pprof_profile *dst, const pprof_profile *src, int64_t sign, uint32_t mask);
/* The same, src's values going to dst's types first.. (dst's others 0). */
int pp_profile_add_profile_at(pprof_profile *dst, const pprof_profile *src, int64_t sign, size_t first);
/* Removes samples whose values are all zero; nothing may be added after. */
void pp_profile_drop_zero(pprof_profile *p);

/* Adds a free-form comment (copied). */
int pp_profile_add_comment(pprof_profile *p, const char *comment);
/* Says in a comment at what rates a window's samples were taken (from
 * hz_min to hz_max; 0: none yet) when that was not only the `hz` it asked
 * for (another window asked for more); `exact` names the value that
 * stays exact ("cpu/nanoseconds is exact"). 0 or PPROF_ENOMEM. */
int pp_profile_say_rates(pprof_profile *p, int hz, int hz_min, int hz_max, const char *exact);
/* Adds the samples of src (still building) that keep() keeps (NULL: all)
 * to dst, which has the same sample types, leaving out their labels keyed
 * `drop` (NULL: none). 0, PPROF_EINVAL or PPROF_ENOMEM. */
int pp_profile_add_profile_if(pprof_profile *dst, const pprof_profile *src, int (*keep)(const pprof_sample *s, void *arg),
                              void *arg, const char *drop);
/* About the memory p holds (its arena and arrays), in bytes. */
size_t pp_profile_bytes(const pprof_profile *p);
/* The profile's own copy of s (interned), or NULL when out of memory. */
const char *pp_profile_intern(pprof_profile *p, const char *s);
/* profile_sym.c: names the nloc distinct addresses of am (a pp_table of
 * uint64_t, in first-seen order) into p->locations and p->mappings as
 * `how` says; files that the process of leave_maps maps too are left to
 * it. May wait for debug files being fetched (LIBPPROF_DEBUGINFOD_WAIT_MS).
 * 0 or PPROF_ENOMEM. */
int pp_profile_name_addresses(pprof_profile *p, const pp_table *am, uint32_t nloc, pprof_symbolize how,
                              const char *leave_maps);

/* Symbolizes the profile as `how` says (pprof.h's pprof_symbolize;
 * DEFAULT: as LIBPPROF_SYMBOLIZE says) and freezes it. The addresses in
 * files that another process maps too, as leave_maps (its
 * /proc/<pid>/maps text; NULL: none) says, keep their mapping and no
 * names, and a comment says how many: a tree's member answering its hub,
 * which names them (symbolize/sym_shared.c). Returns 0, PPROF_EINVAL or
 * PPROF_ENOMEM. */
int pp_profile_finish(pprof_profile *p, pprof_symbolize how, const char *leave_maps);

#endif
