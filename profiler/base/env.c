/* env.c: reading LIBPPROF_* environment variables.
 *
 * Read once at start-up. An invalid value is reported on stderr in one line
 * and the default is used; explicit configuration through the API always
 * wins over the environment.
 */
#include "env.h"
#include "pprof.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pp_env_int(const char *name, int def, int min, int max)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) {
        fprintf(stderr, "libpprof: ignoring %s=%s: want an integer from %d to %d; using %d\n",
                name, s, min, max, def);
        return def;
    }
    return (int)v;
}

static int cpu_hz = PPROF_CPU_DEFAULT_HZ;
static int symbolize = PPROF_SYMBOLIZE_FULL;
static int trace_id_label;

void pp_env_init(void)
{
    cpu_hz = pp_env_int("LIBPPROF_CPU_HZ", PPROF_CPU_DEFAULT_HZ, 0, PPROF_CPU_MAX_HZ);
    trace_id_label = pp_env_int("LIBPPROF_TRACE_ID_LABEL", 0, 0, 1);
    const char *s = getenv("LIBPPROF_SYMBOLIZE");
    if (!s || !*s || !strcmp(s, "full"))
        symbolize = PPROF_SYMBOLIZE_FULL;
    else if (!strcmp(s, "functions"))
        symbolize = PPROF_SYMBOLIZE_FUNCTIONS;
    else if (!strcmp(s, "none"))
        symbolize = PPROF_SYMBOLIZE_NONE;
    else
        fprintf(stderr, "libpprof: ignoring LIBPPROF_SYMBOLIZE=%s: want full, functions or none; using full\n", s);
}

int pp_env_trace_id_label(void)
{
    return trace_id_label;
}

int pp_env_symbolize(void)
{
    return symbolize;
}

int pp_env_cpu_hz(void)
{
    return cpu_hz;
}
