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

void pp_env_init(void)
{
    cpu_hz = pp_env_int("LIBPPROF_CPU_HZ", PPROF_CPU_DEFAULT_HZ, 0, PPROF_CPU_MAX_HZ);
}

int pp_env_cpu_hz(void)
{
    return cpu_hz;
}
