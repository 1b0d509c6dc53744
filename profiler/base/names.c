/* names.c: profile names that custom profiles may not take (names.h). */
#include "names.h"
#include "lock.h"

#include <string.h>

#define MAX_NAMES 64

static pp_mutex names_lock = PP_MUTEX_INIT;
static const char *reserved[MAX_NAMES];
static size_t nreserved;

void pp_names_reserve(const char *const *names, size_t n)
{
    pp_mutex_lock(&names_lock);
    for (size_t i = 0; i < n && nreserved < MAX_NAMES; i++)
        reserved[nreserved++] = names[i];
    pp_mutex_unlock(&names_lock);
}

int pp_name_reserved(const char *name)
{
    pp_mutex_lock(&names_lock);
    int found = 0;
    for (size_t i = 0; i < nreserved && !found; i++)
        found = !strcmp(reserved[i], name);
    pp_mutex_unlock(&names_lock);
    return found;
}
