/* custom.c: profiles a program defines, like Go's pprof.NewProfile.
 *
 * A custom profile is a named set of entries keyed by a pointer (an open
 * connection, a file handle); adding an entry records the caller's stack
 * and the thread's labels, removing it forgets them. Its recorder counts
 * entries by (stack, labels), as the thread profiles do. Profiles live
 * as long as the process; names are plain path segments that do not clash
 * with the built-in profiles, and each is registered once.
 */
#define _GNU_SOURCE
#include "custom.h"
#include "base/base.h"
#include "labels/labels.h"
#include "model/model.h"
#include "unwind/unwind.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUSTOM_FRAMES 32
#define MAX_CUSTOM 64

typedef struct entry {
    const void *key;         /* NULL: empty */
    int removed;             /* a tombstone: keeps probe chains whole */
    const pprof_labels *labels; /* a reference */
    int npcs;
    uint64_t pcs[CUSTOM_FRAMES + 1];
} entry;

struct pprof_custom {
    char name[64];
    pp_mutex lock;
    entry *t;
    size_t cap, used, count; /* used counts tombstones too */
};

static pp_mutex reg_lock = PP_MUTEX_INIT;
static pprof_custom *profiles[MAX_CUSTOM];
static size_t nprofiles;

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= 64 || !strcmp(s, ".") || !strcmp(s, ".."))
        return 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '_' || *c == '-'))
            return 0;
    return 1;
}

int pprof_custom_new(const char *name, pprof_custom **out)
{
    if (!out)
        return pp_fail(PPROF_EINVAL);
    *out = NULL;
    if (!name || !valid_name(name))
        return pp_error_detail(PPROF_EINVAL, "a profile name is 1-63 letters, digits, '.', '_' or '-'");
    if (pp_name_reserved(name))
        return pp_error_detail(PPROF_EINVAL, "\"%s\" is a built-in profile", name);
    pprof_custom *c = calloc(1, sizeof *c);
    if (!c)
        return pp_fail(PPROF_ENOMEM);
    snprintf(c->name, sizeof c->name, "%s", name); /* valid_name: it fits */
    pp_mutex_lock(&reg_lock);
    int rc = 0;
    for (size_t i = 0; i < nprofiles && !rc; i++)
        if (!strcmp(profiles[i]->name, name))
            rc = pp_error_detail(PPROF_EBUSY, "a profile named \"%s\" exists", name);
    if (!rc && nprofiles == MAX_CUSTOM)
        rc = pp_error_detail(PPROF_ELIMIT, "at most %d custom profiles", MAX_CUSTOM);
    if (!rc)
        profiles[nprofiles++] = c;
    pp_mutex_unlock(&reg_lock);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

pprof_custom *pprof_custom_find(const char *name)
{
    pprof_custom *c = NULL;
    pp_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nprofiles && !c; i++)
        if (!strcmp(profiles[i]->name, name))
            c = profiles[i];
    pp_mutex_unlock(&reg_lock);
    return c;
}

size_t pprof_custom_list(pprof_custom **out, size_t max)
{
    pp_mutex_lock(&reg_lock);
    size_t n = nprofiles < max ? nprofiles : max;
    memcpy(out, profiles, n * sizeof *out);
    pp_mutex_unlock(&reg_lock);
    return n;
}

const char *pprof_custom_name(const pprof_custom *c)
{
    return c ? c->name : "";
}

static size_t slot_of(size_t cap, const void *key)
{
    return (size_t)(((uintptr_t)key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

/* lock held */
static int grow(pprof_custom *c)
{
    size_t cap = c->cap ? c->cap * 2 : 64;
    if (c->count * 4 < c->cap) /* mostly tombstones: rehash at the same size */
        cap = c->cap;
    entry *t = calloc(cap, sizeof *t);
    if (!t)
        return pp_fail(PPROF_ENOMEM);
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->t[i].key || c->t[i].removed)
            continue;
        size_t j = slot_of(cap, c->t[i].key);
        while (t[j].key)
            j = (j + 1) & (cap - 1);
        t[j] = c->t[i];
    }
    free(c->t);
    c->t = t;
    c->cap = cap;
    c->used = c->count;
    return 0;
}

__attribute__((noinline)) int pprof_custom_add(pprof_custom *c, const void *key)
{
    if (!c || !key)
        return pp_error_detail(PPROF_EINVAL, "NULL profile or key");
    entry e = {.key = key};
    int end;
    e.npcs = pp_unwind_here((uint64_t)(uintptr_t)__builtin_return_address(0), e.pcs, CUSTOM_FRAMES, &end);
    if (end)
        e.pcs[e.npcs++] = pp_pc_stack_end(end);
    e.labels = pprof_labels_current();
    pp_mutex_lock(&c->lock);
    int rc = 0;
    if ((c->used + 1) * 2 > c->cap)
        rc = grow(c);
    if (!rc) {
        size_t j = slot_of(c->cap, key), free_slot = SIZE_MAX;
        for (; c->t[j].key; j = (j + 1) & (c->cap - 1)) {
            if (c->t[j].key == key && !c->t[j].removed) {
                rc = pp_error_detail(PPROF_EBUSY, "the key is already in profile \"%s\"", c->name);
                break;
            }
            if (c->t[j].removed && free_slot == SIZE_MAX)
                free_slot = j;
        }
        if (!rc) {
            if (free_slot == SIZE_MAX) {
                free_slot = j;
                c->used++;
            }
            c->t[free_slot] = e;
            c->count++;
        }
    }
    pp_mutex_unlock(&c->lock);
    if (rc)
        pprof_labels_unref((pprof_labels *)e.labels);
    return rc;
}

int pprof_custom_remove(pprof_custom *c, const void *key)
{
    if (!c || !key)
        return pp_error_detail(PPROF_EINVAL, "NULL profile or key");
    const pprof_labels *drop = NULL;
    pp_mutex_lock(&c->lock);
    int rc = PPROF_ENOTFOUND;
    if (c->cap)
        for (size_t j = slot_of(c->cap, key); c->t[j].key; j = (j + 1) & (c->cap - 1))
            if (c->t[j].key == key && !c->t[j].removed) {
                drop = c->t[j].labels;
                c->t[j].removed = 1;
                c->t[j].labels = NULL;
                c->count--;
                rc = 0;
                break;
            }
    pp_mutex_unlock(&c->lock);
    pprof_labels_unref((pprof_labels *)drop);
    return rc ? pp_error_detail(rc, "the key is not in profile \"%s\"", c->name) : 0;
}

size_t pprof_custom_count(pprof_custom *c)
{
    if (!c)
        return 0;
    pp_mutex_lock(&c->lock);
    size_t n = c->count;
    pp_mutex_unlock(&c->lock);
    return n;
}

int pp_custom_add_to(pprof_custom *c, pprof_profile *p)
{
    int rc = 0;
    pp_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->cap && !rc; i++) {
        const entry *e = &c->t[i];
        if (!e->key || e->removed)
            continue;
        const pprof_label *pairs = NULL;
        size_t n = e->labels ? pp_labels_pairs(e->labels, &pairs) : 0;
        int64_t one = 1;
        rc = pp_profile_add(p, e->pcs, (size_t)e->npcs, &one, pairs, n);
    }
    pp_mutex_unlock(&c->lock);
    return rc;
}
