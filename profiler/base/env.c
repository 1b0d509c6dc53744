/* env.c: reading LIBPPROF_* environment variables.
 *
 * Every documented variable is read through the checked parsers here:
 * pp_env_int for numbers and switches (0 or 1), pp_env_word for a choice
 * of words, pp_env_text for text of a given form. Read once at start-up (the symbolizer's at its first use). An
 * invalid value is reported on stderr in one line naming the variable,
 * once per process however often it is read, and the default is used;
 * explicit configuration through the API always wins over the
 * environment. Never from a signal handler or inside malloc.
 */
#include "env.h"
#include "error.h"
#include "pprof.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether `name`'s bad value is to be reported now: the first time only. */
static int first_report(const char *name)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char done[32][40];
    static int ndone;
    int first = 1;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < ndone && first; i++)
        first = strcmp(done[i], name) != 0;
    if (first && ndone < 32)
        snprintf(done[ndone++], sizeof done[0], "%s", name);
    pthread_mutex_unlock(&mu);
    return first;
}

int pp_env_int(const char *name, int def, int min, int max)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) {
        if (first_report(name)) {
            if (min == 0 && max == 1)
                pp_say("libpprof: ignoring %s=%s: want 0 or 1; using %d\n", name, s, def);
            else
                pp_say("libpprof: ignoring %s=%s: want an integer from %d to %d; using %d\n", name, s, min, max,
                       def);
        }
        return def;
    }
    return (int)v;
}

int pp_env_word(const char *name, const char *const *words, int def, const char *def_text)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    size_t n = 0;
    for (; words[n]; n++)
        if (!strcmp(s, words[n]))
            return (int)n;
    if (first_report(name)) {
        char want[128] = "";
        size_t len = 0;
        for (size_t i = 0; i < n && len < sizeof want; i++)
            len += (size_t)snprintf(want + len, sizeof want - len, "%s%s", i == 0 ? "" : i + 1 < n ? ", " : " or ",
                                    words[i]);
        pp_say("libpprof: ignoring %s=%s: want %s; using %s\n", name, s, want, def_text);
    }
    return def;
}

const char *pp_env_text(const char *name, int (*ok)(const char *), const char *want, const char *def_text)
{
    const char *s = getenv(name);
    if (!s || !*s || ok(s))
        return s && *s ? s : NULL;
    if (first_report(name))
        pp_say("libpprof: ignoring %s=%s: want %s; using %s\n", name, s, want, def_text);
    return NULL;
}

static int cpu_hz = PPROF_CPU_DEFAULT_HZ;
static int symbolize = PPROF_SYMBOLIZE_FULL;
static int trace_id_label;

void pp_env_init(void)
{
    static const char *const modes[] = {"full", "functions", "none", NULL};
    static const int mode_values[] = {PPROF_SYMBOLIZE_FULL, PPROF_SYMBOLIZE_FUNCTIONS, PPROF_SYMBOLIZE_NONE};
    cpu_hz = pp_env_int("LIBPPROF_CPU_HZ", PPROF_CPU_DEFAULT_HZ, 0, PPROF_CPU_MAX_HZ);
    trace_id_label = pp_env_int("LIBPPROF_TRACE_ID_LABEL", 0, 0, 1);
    symbolize = mode_values[pp_env_word("LIBPPROF_SYMBOLIZE", modes, 0, "full")];
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
