/* env.h: LIBPPROF_* environment variables (see env.c). */
#ifndef PP_ENV_H
#define PP_ENV_H
/* The integer value of `name`, or `def` when unset or invalid (reported). */
int pp_env_int(const char *name, int def, int min, int max);
/* The default CPU rate: LIBPPROF_CPU_HZ or 100 (lifecycle.c). */
int pp_env_cpu_hz(void);
/* Whether the process is exiting (lifecycle.c): nothing new starts. */
int pp_shutting_down(void);
#endif
