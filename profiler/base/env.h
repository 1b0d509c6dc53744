/* env.h: LIBPPROF_* environment variables (see env.c). */
#ifndef PP_ENV_H
#define PP_ENV_H
/* The integer value of `name`, or `def` when unset or invalid (reported
 * once, in one line; a switch is min 0, max 1). */
int pp_env_int(const char *name, int def, int min, int max);
/* The index in `words` (NULL-terminated) of `name`'s value, or `def` when
 * unset or none of them (reported once, in one line, with `def_text` as
 * what is used instead). */
int pp_env_word(const char *name, const char *const *words, int def, const char *def_text);
/* `name`'s value when ok() accepts it; NULL when unset or empty, or when
 * ok() refuses it (reported once, in one line: "want `want`; using
 * `def_text`"). */
const char *pp_env_text(const char *name, int (*ok)(const char *), const char *want, const char *def_text);
/* Reads the variables kept here (start-up). */
void pp_env_init(void);
/* The default CPU rate: LIBPPROF_CPU_HZ or 100. */
int pp_env_cpu_hz(void);
/* Whether CPU samples carry trace_id by default: LIBPPROF_TRACE_ID_LABEL. */
int pp_env_trace_id_label(void);
/* How profiles are symbolized by default: LIBPPROF_SYMBOLIZE (full,
 * functions or none), PPROF_SYMBOLIZE_FULL when unset. */
int pp_env_symbolize(void);
#endif
