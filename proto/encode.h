/* encode.h: serializers of the in-memory profile (profiler/model/).
 *
 * pprof_profile_write (include/pprof.h) is the public entry point and
 * dispatches to the functions below; they are declared here for the parts
 * of the library that want one format directly.
 *
 * Every encoder reads a finished profile only (p->b == NULL) and never
 * changes it, so several threads may encode one profile at once. Output is
 * handed to the writer in chunks of at most PP_ENCODE_CHUNK bytes; on a
 * failure part of the output may already have been written.
 */
#ifndef PP_ENCODE_H
#define PP_ENCODE_H

#include "pprof.h"

/* Largest chunk passed to a writer in one call. */
#define PP_ENCODE_CHUNK 65536

/* Writes `p` as a pprof protobuf (perftools.profiles.Profile), gzipped at
 * zlib level 1 when `gzip` is non-zero (as Go's runtime/pprof does).
 * Returns 0, PPROF_EINVAL (bad arguments or an unfinished or inconsistent
 * profile, e.g. a sample whose value count differs from the number of
 * sample types), PPROF_ENOMEM, or PPROF_EIO when the writer fails. */
int pp_encode_proto(const pprof_profile *p, int gzip, pprof_writer w);

/* Writes a whole unpacked Profile (perftools__profiles__profile, as merge.c
 * assembles one) through the same staging, sample writer and gzip as
 * pp_encode_proto. Returns 0, PPROF_ENOMEM or PPROF_EIO. */
int pp_encode_merged(const void *profile, int gzip, pprof_writer w);

/* Writes a profile's view (profiler/model/) as folded stacks: the body of
 * pprof_profile_write_folded, also for profiles decoded from protobufs
 * (read_view.c). */
struct pp_model_view;
int pp_write_folded_view(const struct pp_model_view *v, const pprof_folded_config *cfg, pprof_writer w);

/* Largest per-element counts, for sizing reused scratch arrays. */
typedef struct pp_encode_maxima {
    size_t lines;
} pp_encode_maxima;

/* Checks that a view is of a finished, self-consistent profile, so that
 * encoding can only fail on memory or the writer; fills *mx. `need_values`:
 * every sample has one value per sample type (the protobuf requires it).
 * 0 or PPROF_EINVAL with a detail (encode.c). */
int pp_encode_validate(const struct pp_model_view *v, int need_values, pp_encode_maxima *mx);

/* Gunzips in into *out (malloc'd, *owned = 1), or gives in back as it is
 * when it is not gzip (*owned = 0) (merge.c). 0, PPROF_ENOMEM, or
 * PPROF_EINVAL for bad gzip data. */
int pp_gunzip(const unsigned char *in, size_t len, unsigned char **out, size_t *outlen, int *owned);

/* Writes `p` in Go's debug=1 text format (text.c): heap and count
 * profiles; with `dump`, Go's debug=2 per-thread format. Others give
 * PPROF_ENOTSUP. */
int pp_encode_text(const pprof_profile *p, pprof_writer w, int dump);

#endif
