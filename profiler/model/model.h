/* model.h: the interface of model/, the in-memory profile.
 *
 * A pprof_profile is built by appending raw samples (program counters,
 * values, labels) to an unfinished profile, then finished: addresses are
 * symbolized (symbolize/) into locations and mappings with ids 1..N.
 * Recorders (recorder/) and the profile kinds build profiles with the
 * calls in profile.h.
 *
 * The model interns once: every string a profile names is stored once in
 * its string table (id 0 is ""), as the builder meets it; finish numbers
 * the functions, distinct (name, system name, file) triples, 1..N. The
 * encoders (proto/) read a finished profile only through pprof.h's
 * accessors and the calls below, and write these tables as they are, so
 * an encoder keeps no tables of its own.
 *
 * Everything here only reads a finished profile: any number of threads
 * may call it at once.
 */
#ifndef PP_MODEL_H
#define PP_MODEL_H
#include "profile.h"

/* The string table: *n strings, ids 0..n-1, the first "". */
const char *const *pp_model_strings(const pprof_profile *p, size_t *n);
/* The id of string s (NULL counts as ""), or -1 when the profile does not
 * name it. */
int64_t pp_model_string_id(const pprof_profile *p, const char *s);
/* The function table: *n functions, ids 1..n. */
const pp_model_function *pp_model_functions(const pprof_profile *p, size_t *n);
/* The function id of line `line` of location `loc` (one of p's). */
uint32_t pp_model_line_function(const pprof_profile *p, const pprof_location *loc, size_t line);
/* Everything else an encoder reads, in one copy: pp_model_view_of fills it
 * from a profile (finished or not: `finished` says which). */
typedef struct pp_model_view {
    int finished;
    const pprof_value_type *types;
    size_t ntypes;
    int default_type; /* index into types, -1 for none */
    pprof_value_type period_type;
    int64_t period, time_nanos, duration_nanos;
    const pprof_sample *samples;
    size_t nsamples;
    const pprof_location *locs; /* ids 1..n in order */
    size_t nlocs;
    const pprof_mapping *maps;
    size_t nmaps;
    const char *const *comments;
    size_t ncomments;
} pp_model_view;
void pp_model_view_of(const pprof_profile *p, pp_model_view *v);

/* Builds the string and function tables of a finished profile whose
 * arrays were assembled by hand rather than by the builder (the encoders'
 * tests do that); strings are referenced, not copied. Returns 0 or
 * PPROF_ENOMEM. pp_model_tables_free releases what it made. */
int pp_model_index(pprof_profile *p);
void pp_model_tables_free(pprof_profile *p);

/* Names for code in files that another process mapped, from this
 * process's mappings of the same files (namer.c): what a merge of a
 * tree's profiles uses to name the addresses its members left unnamed.
 * Holds the symbolizer from begin to end; not thread-safe in between. */
typedef struct pp_model_frame {
    const char *name, *system_name, *filename; /* filename "" when unknown */
    int64_t line;
} pp_model_frame;
typedef struct pp_model_namer pp_model_namer;
/* A namer that names as `how` says; NULL for PPROF_SYMBOLIZE_NONE or when
 * the symbolizer cannot start. */
pp_model_namer *pp_model_namer_begin(pprof_symbolize how);
/* The frames (innermost first, at most max) of the code at file_offset of
 * the file mapped as `path` with `build_id` ("" for none) in the other
 * process; 0 when this process does not map that file or knows nothing
 * there. Strings stay valid until pp_model_namer_end. */
int pp_model_namer_lookup(pp_model_namer *n, const char *path, const char *build_id, uint64_t file_offset,
                          pp_model_frame *out, int max);
void pp_model_namer_end(pp_model_namer *n);
#endif
