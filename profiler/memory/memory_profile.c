/* memory_profile.c: the resident set, shared out among what holds it.
 *
 * Every mapping of /proc/self/smaps gives its Rss to one root, or, for
 * anonymous memory, shares it among the claims on its addresses
 * (claims.c):
 *   live heap objects         the heap profile's in-use estimates, under
 *                             their allocation stacks, at most what the
 *                             allocator's memory holds resident
 *   held free by the allocator the rest of the allocator's memory: the
 *                             [heap] mapping, what the next allocator's
 *                             code mapped, glibc's arenas and chunks
 *   mapped by the program     the anonymous mappings the mmap hooks saw,
 *                             under the stacks that made them
 *   thread stacks             per thread name (the main thread's [stack])
 *   mapped files              per file: code, read-only data, data, bss
 *   shared memory             shared mappings, per name
 *   libpprof                  its tables, own heap, threads, code
 *   not attributed            anonymous memory no hook saw mapped
 * so the samples add up to the Rss of every mapping, which is what
 * smaps_rollup says. Each sample carries the label memory=<root>.
 */
#define _GNU_SOURCE
#include "memory.h"
#include "alloc_stats.h"
#include "base/base.h"
#include "claims.h"
#include "heap/heap.h"
#include "labels/labels.h"
#include "model/model.h"
#include "smaps.h"
#include "threads/threads.h"

#include <dirent.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const root_name[PP_ROOTS] = {
    "[memory: live heap objects]", "[memory: held free by the allocator]",
    "[memory: mapped by the program with mmap]", "[memory: thread stacks]",
    "[memory: mapped files]", "[memory: shared memory]",
    "[memory: libpprof]", "[memory: not attributed]",
};
static const char *const root_label[PP_ROOTS] = {
    "heap", "allocator_free", "mmap", "stack", "file", "shared", "libpprof", "unattributed",
};
#define LABELS_MAX 64

enum { PRIO_OWN, PRIO_STACK, PRIO_REGION, PRIO_BSS, PRIO_FOUND };

typedef struct build {
    pprof_profile *p;
    pp_claims claims;
    uint64_t roots[PP_ROOTS];
    double sums[PP_ROOTS];
    uintptr_t self_lo, self_hi; /* libpprof's own object */
    int rc;
} build;

/* Adds a sample: pcs (leaf first, the root appended here), `bytes`
 * rounded, the labels of `set` and memory=<root>. */
static void add(build *b, int root, const uint64_t *pcs, size_t n, const pprof_labels *set, double bytes)
{
    int64_t v = llround(bytes);
    b->sums[root] += bytes;
    if (b->rc || v <= 0)
        return;
    uint64_t stack[PPROF_DEFAULT_MAX_FRAMES + 2];
    if (n > PPROF_DEFAULT_MAX_FRAMES + 1)
        n = PPROF_DEFAULT_MAX_FRAMES + 1;
    memcpy(stack, pcs, n * sizeof *pcs);
    stack[n++] = b->roots[root];
    const pprof_label *pairs = NULL;
    size_t np = set ? pp_labels_pairs(set, &pairs) : 0, k = 0, m = 0;
    pprof_label l[LABELS_MAX + 1];
    for (; k < np && m < LABELS_MAX && strcmp(pairs[k].key, "memory") < 0; k++)
        l[m++] = pairs[k];
    l[m++] = (pprof_label){"memory", root_label[root]};
    for (; k < np && m < LABELS_MAX + 1; k++)
        if (strcmp(pairs[k].key, "memory"))
            l[m++] = pairs[k];
    if (pp_profile_add(b->p, stack, n, &v, l, m) != 0)
        b->rc = PPROF_ENOMEM;
}

static uint64_t named(const char *fmt, const char *s);

static void add_leaf(build *b, int root, const char *leaf, double bytes)
{
    uint64_t pc = named("%s", leaf);
    add(b, root, &pc, 1, NULL, bytes);
}

/* A frame named by fmt with s, its parentheses made brackets: pprof
 * reads "(...)" in a name as a C++ parameter list and cuts it off. */
static uint64_t named(const char *fmt, const char *s)
{
    char buf[512];
    snprintf(buf, sizeof buf, fmt, s);
    for (char *c = buf; *c; c++)
        *c = *c == '(' ? '[' : *c == ')' ? ']' : *c;
    return pp_frame_named(buf);
}

/* libpprof's own object: the one holding this function. */
static int find_self(struct dl_phdr_info *o, size_t size, void *arg)
{
    (void)size;
    build *b = arg;
    uintptr_t f = (uintptr_t)&find_self, lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < o->dlpi_phnum; i++)
        if (o->dlpi_phdr[i].p_type == PT_LOAD) {
            uintptr_t a = o->dlpi_addr + o->dlpi_phdr[i].p_vaddr, e = a + o->dlpi_phdr[i].p_memsz;
            lo = a < lo ? a : lo;
            hi = e > hi ? e : hi;
        }
    if (f < lo || f >= hi)
        return 0;
    b->self_lo = lo;
    b->self_hi = hi;
    return 1;
}

/* Each loaded object's zero-filled data (bss): the anonymous part of
 * its last writable segment. */
static int claim_bss(struct dl_phdr_info *o, size_t size, void *arg)
{
    (void)size;
    build *b = arg;
    for (int i = 0; i < o->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &o->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || ph->p_memsz <= ph->p_filesz)
            continue;
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t lo = (o->dlpi_addr + ph->p_vaddr + ph->p_filesz + page - 1) & ~(page - 1);
        uintptr_t hi = (o->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
        if (lo >= b->self_lo && lo < b->self_hi) {
            pp_claims_add(&b->claims, lo, hi, PRIO_OWN, PP_ROOT_OWN, pp_frame_named("[libpprof: code and data]"), 0);
            continue;
        }
        char exe[256] = "";
        const char *name = o->dlpi_name;
        if (!name || !*name) {
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            exe[n > 0 ? n : 0] = 0;
            name = exe;
        }
        pp_claims_add(&b->claims, lo, hi, PRIO_BSS, PP_ROOT_FILES, named("[%s: bss]", name), 0);
    }
    return 0;
}

/* A thread's name, "?" when it is gone. */
static void thread_name(int tid, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, out, len - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        snprintf(out, len, "?");
        return;
    }
    out[n] = 0;
    out[strcspn(out, "\n")] = 0;
}

/* The claims the profiler knows of before reading the mappings. */
static void claim_known(build *b)
{
    uintptr_t lo[512], hi[512];
    const char *what[512];
    size_t n = pp_own_maps(lo, hi, what, 512);
    for (size_t i = 0; i < n && i < 512; i++)
        pp_claims_add(&b->claims, lo[i], hi[i], PRIO_OWN, PP_ROOT_OWN,
                      named("[libpprof: %s]", what[i] ? what[i] : "tables"), 0);
    size_t nt = 0;
    pp_thread_entry *t = pp_threads_copy(&nt);
    for (size_t i = 0; t && i < nt; i++) {
        if (!t[i].stack_hi)
            continue;
        char name[64];
        thread_name(t[i].tid, name, sizeof name);
        uint64_t leaf = t[i].own ? pp_frame_named("[libpprof: thread stacks]") : named("[stack: %s]", name);
        pp_claims_add(&b->claims, t[i].stack_lo, t[i].stack_hi, PRIO_STACK, t[i].own ? PP_ROOT_OWN : PP_ROOT_STACKS,
                      leaf, 0);
    }
    free(t);
    size_t cap = 0, nr = pp_regions_copy(NULL, 0);
    pp_region *r = NULL;
    while (nr > cap) { /* regions may come meanwhile */
        cap = nr + 64;
        free(r);
        if (!(r = malloc(cap * sizeof *r))) {
            b->rc = PPROF_ENOMEM;
            return;
        }
        nr = pp_regions_copy(r, cap);
    }
    uint64_t mine = pp_frame_named("[libpprof: mappings of its threads]");
    for (size_t i = 0; i < nr; i++) {
        int root = r[i].cls == PP_REGION_OWN ? PP_ROOT_OWN : r[i].cls == PP_REGION_ALLOCATOR ? PP_ROOT_FREE : PP_ROOT_MMAP;
        pp_claims_add(&b->claims, r[i].lo, r[i].hi, PRIO_REGION, root, root == PP_ROOT_OWN ? mine : 0, r[i].rec);
    }
    free(r);
    dl_iterate_phdr(claim_bss, b);
}

static int by_addr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* The sorted addresses of the live sampled objects; NULL when none. */
static uintptr_t *live_addresses(size_t *n)
{
    size_t cap = pp_heap_live_count() + 256;
    pp_heap_live *l = malloc(cap * sizeof *l);
    uintptr_t *a = malloc(cap * sizeof *a);
    *n = l && a ? pp_heap_live_copy(l, cap) : 0;
    if (*n > cap)
        *n = cap;
    for (size_t i = 0; i < *n; i++)
        a[i] = l[i].ptr;
    free(l);
    if (*n)
        qsort(a, *n, sizeof *a, by_addr);
    return a;
}

static int anonymous(const pp_vma *v)
{
    return v->perms[3] == 'p' && (!v->path[0] || !strcmp(v->path, "[heap]") || !strcmp(v->path, "[stack]") ||
                                  !strncmp(v->path, "[anon:", 6));
}

/* A file-backed or special mapping's root and leaf. */
static void add_file(build *b, const pp_vma *v)
{
    if (v->perms[3] == 's') {
        char leaf[512];
        snprintf(leaf, sizeof leaf, "[shared: %s]", v->path[0] ? v->path : "anonymous");
        add_leaf(b, PP_ROOT_SHARED, leaf, (double)v->rss);
        return;
    }
    if (v->lo >= b->self_lo && v->lo < b->self_hi) {
        add_leaf(b, PP_ROOT_OWN, "[libpprof: code and data]", (double)v->rss);
        return;
    }
    const char *kind = v->perms[2] == 'x' ? "code" : v->perms[1] == 'w' ? "data" : "read-only data";
    char leaf[512];
    snprintf(leaf, sizeof leaf, "[%s: %s]", v->path, kind);
    add_leaf(b, PP_ROOT_FILES, leaf, (double)v->rss);
}

typedef struct heap_share {
    build *b;
    double scale;
} heap_share;

static void add_heap_record(const uint64_t *pcs, size_t n, const pprof_labels *labels, int64_t bytes, void *arg)
{
    heap_share *h = arg;
    add(h->b, PP_ROOT_HEAP, pcs, n, labels, (double)bytes * h->scale);
}

/* The allocator's memory: live objects (scaled to fit it) and the rest. */
static void add_allocator(build *b, const pp_alloc_stats *st, double resident)
{
    pp_heap_snap snap;
    int64_t rate = pprof_heap_rate();
    int64_t live = 0;
    heap_share h = {b, 1.0};
    char line[256];
    if (rate > 0 && pp_heap_snap_take(&snap) == 0) {
        live = pp_heap_inuse_each(&snap, rate, NULL, NULL);
        if ((double)live > resident && live > 0)
            h.scale = resident / (double)live;
        pp_heap_inuse_each(&snap, rate, add_heap_record, &h);
        pp_heap_snap_free(&snap);
    }
    snprintf(line, sizeof line, "[%s: free memory it holds resident]", st->name);
    add_leaf(b, PP_ROOT_FREE, line, resident - (double)live * h.scale);
    snprintf(line, sizeof line,
             "live heap objects (heap profile, rate %lld): %lld bytes; the allocator's memory holds %.0f resident",
             (long long)rate, (long long)live, resident);
    pp_profile_add_comment(b->p, line);
    if (h.scale < 1.0) {
        snprintf(line, sizeof line,
                 "live heap objects scaled by %.3f to the allocator's resident memory: the rest is not resident "
                 "(never touched, or swapped out)",
                 h.scale);
        pp_profile_add_comment(b->p, line);
    }
}

/* Walks the mappings: files to their roots, anonymous memory to the
 * claims on it. */
static void share_out(build *b, const pp_vmas *m, const uintptr_t *live, size_t nlive, int glibc, const char *alloc)
{
    uint64_t free_leaf = named("[%s: free memory it holds resident]", alloc);
    for (size_t i = 0; i < m->n; i++) {
        const pp_vma *v = &m->v[i];
        if (anonymous(v) && v->rss &&
            pp_claims_find_allocator(&b->claims, v, live, nlive, glibc, PRIO_FOUND, PP_ROOT_FREE, free_leaf) != 0)
            b->rc = PPROF_ENOMEM;
    }
    pp_claims_sort(&b->claims);
    char main_name[64];
    thread_name(getpid(), main_name, sizeof main_name);
    for (size_t i = 0; i < m->n && !b->rc; i++) {
        const pp_vma *v = &m->v[i];
        if (!v->rss)
            continue;
        if (!anonymous(v)) {
            add_file(b, v);
            continue;
        }
        double rest = pp_claims_count(&b->claims, v);
        if (!strcmp(v->path, "[heap]"))
            b->sums[PP_ROOT_FREE] += rest; /* the main arena's, counted with the allocator's claims */
        else if (!strcmp(v->path, "[stack]"))
            add(b, PP_ROOT_STACKS, (uint64_t[]){named("[stack: %s]", main_name)}, 1, NULL, rest);
        else
            add_leaf(b, PP_ROOT_NONE, "[anonymous memory no hook saw mapped]", rest);
    }
}

/* Rss from /proc/self/smaps_rollup, bytes (0 when unreadable). */
static uint64_t rollup_rss(void)
{
    char buf[1024];
    int fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = 0;
    const char *r = strstr(buf, "\nRss:");
    return r ? strtoull(r + 5, NULL, 10) * 1024 : 0;
}

int pp_memory_build(pprof_profile **out)
{
    static const pprof_value_type type = {"resident_space", "bytes"};
    pp_own_heap_enter();
    build b = {0};
    pp_vmas m;
    *out = NULL;
    int rc = pp_smaps_read(&m);
    uint64_t rollup = rollup_rss();
    if (rc) {
        pp_own_heap_leave();
        return rc;
    }
    b.p = pp_profile_new(&type, 1, (pprof_value_type){"space", "bytes"}, 1);
    for (int r = 0; r < PP_ROOTS; r++)
        b.roots[r] = pp_frame_named(root_name[r]);
    dl_iterate_phdr(find_self, &b);
    pp_alloc_stats st;
    pp_alloc_stats_read(&st);
    uintptr_t alo, ahi;
    int glibc;
    pp_next_object(&alo, &ahi, &glibc);
    claim_known(&b);
    pp_claims_sort(&b.claims);
    size_t nlive;
    uintptr_t *live = live_addresses(&nlive);
    if (!b.p)
        b.rc = PPROF_ENOMEM;
    share_out(&b, &m, live, nlive, glibc, st.name);
    free(live);
    double alloc_resident = b.sums[PP_ROOT_FREE];
    b.sums[PP_ROOT_FREE] = 0;
    for (size_t i = 0; i < b.claims.n; i++) { /* the claims' shares, now counted */
        pp_claim *c = &b.claims.c[i];
        if (c->root == PP_ROOT_FREE) {
            alloc_resident += c->bytes;
        } else if (c->root == PP_ROOT_MMAP) {
            size_t n;
            const pprof_labels *labels;
            const uint64_t *pcs = pp_regions_stack(c->rec, &n, &labels);
            add(&b, PP_ROOT_MMAP, pcs, n, labels, c->bytes);
        } else {
            add(&b, c->root, &c->leaf, 1, NULL, c->bytes);
        }
    }
    if (!b.rc)
        add_allocator(&b, &st, alloc_resident);
    uint64_t rss = 0;
    for (size_t i = 0; i < m.n; i++)
        rss += m.v[i].rss;
    char line[320];
    snprintf(line, sizeof line,
             "resident set: %llu bytes, the Rss of %zu mappings in /proc/self/smaps (smaps_rollup said %llu as "
             "they were read)",
             (unsigned long long)rss, m.n, (unsigned long long)rollup);
    pp_profile_add_comment(b.p, line);
    if (st.text[0])
        pp_profile_add_comment(b.p, st.text);
    if (pp_regions_lost()) {
        snprintf(line, sizeof line, "mmap hooks: %llu mappings not entered (their table was full or a fork held it)",
                 (unsigned long long)pp_regions_lost());
        pp_profile_add_comment(b.p, line);
    }
    pp_claims_free(&b.claims);
    pp_smaps_free(&m);
    if (b.rc && b.p) {
        pprof_profile_free(b.p);
        b.p = NULL;
    }
    pp_own_heap_leave();
    if (!b.p)
        return pp_fail(PPROF_ENOMEM);
    *out = b.p;
    return 0;
}
