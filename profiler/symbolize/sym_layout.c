/* sym_layout.c: the process layout: /proc/self/maps, the loader's
 * counters, build IDs, the mapping snapshot and the Dwfl built from them. */
#define _GNU_SOURCE
#include "sym_internal.h"

static bool sbuf_add(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return false;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return true;
}

static bool sbuf_eq(const sbuf *a, const sbuf *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

/* ----------------------------------------------------- process layout */

static int dl_count_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct dl_counts *c = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
        c->ok = true;
    }
    return 1; /* the counters are the same in every entry */
}

struct dl_counts pp_sym_dl_counts_now(void)
{
    struct dl_counts c = {0, 0, false};
    dl_iterate_phdr(dl_count_cb, &c);
    return c;
}

bool pp_sym_read_file(const char *path, sbuf *out)
{
    int fd = pp_sym_open(path);
    if (fd < 0)
        return false;
    out->n = 0;
    for (off_t at = 0;;) {
        char chunk[16384];
        ssize_t n = pread(fd, chunk, sizeof chunk, at); /* a kept descriptor's offset is shared */
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return false;
        }
        if (n == 0)
            break;
        at += n;
        if (!sbuf_add(out, chunk, (size_t)n)) {
            close(fd);
            return false;
        }
    }
    close(fd);
    return out->p != NULL || sbuf_add(out, "", 0);
}

bool pp_sym_parse_maps_line(const char *line, size_t len, maps_line *m)
{
    char *end;
    const char *p = line, *e = line + len;
    m->start = strtoull(p, &end, 16);
    if (end == p || *end != '-')
        return false;
    p = end + 1;
    m->limit = strtoull(p, &end, 16);
    if (end == p || *end != ' ')
        return false;
    p = end + 1;
    if (e - p < 5)
        return false;
    m->write = p[1] == 'w';
    m->exec = p[2] == 'x';
    m->priv = p[3] == 'p';
    p += 4;
    while (p < e && *p == ' ')
        p++;
    m->offset = strtoull(p, &end, 16);
    if (end == p)
        return false;
    p = end;
    while (p < e && *p == ' ')
        p++;
    if (p >= e) /* (strtoull would read on into the next line) */
        return false;
    uint64_t major = strtoull(p, &end, 16); /* dev: major:minor, in hex */
    uint64_t minor = end + 1 < e && *end == ':' ? strtoull(end + 1, &end, 16) : 0;
    m->dev = major << 32 | minor;
    p = end;
    while (p < e && *p == ' ')
        p++;
    if (p >= e)
        return false;
    m->inode = strtoull(p, &end, 10);
    if (end > e)
        return false;
    p = end;
    while (p < e && *p != ' ')
        p++;
    while (p < e && *p == ' ')
        p++;
    m->path = p;
    m->pathlen = (size_t)(e - p);
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof deleted - 1;
    m->deleted = m->pathlen >= dl && memcmp(p + m->pathlen - dl, deleted, dl) == 0;
    if (m->deleted)
        m->pathlen -= dl;
    return true;
}

/* Calls fn for every line of the maps text. */
void pp_sym_each_line(const sbuf *text, void (*fn)(const char *, size_t, void *), void *arg)
{
    const char *p = text->p, *e = text->p + text->n;
    while (p < e) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(e - p);
        fn(p, len, arg);
        p += len + 1;
    }
}

struct sig_args {
    sbuf *all, *files;
    bool ok;
};

static void sig_line(const char *line, size_t len, void *arg)
{
    struct sig_args *a = arg;
    maps_line m;
    if (!pp_sym_parse_maps_line(line, len, &m) || !m.exec)
        return;
    a->ok &= sbuf_add(a->all, line, len) && sbuf_add(a->all, "\n", 1);
    if (m.pathlen > 0 && m.path[0] == '/')
        a->ok &= sbuf_add(a->files, line, len) && sbuf_add(a->files, "\n", 1);
}

static const char *build_id_hex(pp_arena *a, const unsigned char *bits, ssize_t n)
{
    if (n <= 0 || n > 256)
        return "";
    char buf[513];
    pp_hex_encode(buf, bits, (size_t)n);
    const char *s = pp_arena_strdup(a, buf);
    return s ? s : "";
}

/* Build ID of a loaded object from the note the loader mapped, found by
 * an address inside one of its PT_LOAD segments. Covers the vDSO and
 * libraries whose file can no longer be opened. */
struct note_args {
    uint64_t addr;
    const unsigned char *bits;
    size_t n;
};

static int loader_note_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct note_args *a = data;
    bool covers = false;
    for (int i = 0; i < info->dlpi_phnum && !covers; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        covers = ph->p_type == PT_LOAD && a->addr >= lo && a->addr - lo < ph->p_memsz;
    }
    if (!covers)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char *e = p + ph->p_memsz;
        while ((size_t)(e - p) >= sizeof(ElfW(Nhdr))) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
            size_t namesz = ((size_t)nh->n_namesz + 3) & ~(size_t)3;
            size_t descsz = ((size_t)nh->n_descsz + 3) & ~(size_t)3;
            const unsigned char *name = p + sizeof *nh;
            if (namesz > (size_t)(e - name) || descsz > (size_t)(e - name) - namesz)
                break;
            const unsigned char *desc = name + namesz;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0 && nh->n_descsz > 0) {
                a->bits = desc;
                a->n = nh->n_descsz;
                return 1;
            }
            p = desc + descsz;
        }
    }
    return 1;
}

/* Build ID of a mapping: from the Dwfl module covering it, else from the
 * loader's in-memory note, else from the ELF notes of the file. */
static const char *mapping_build_id(struct pp_sym_session *s, const maps_line *m,
                                    const char *path)
{
    if (path[0] == '\0')
        return "";
    if (s->dwfl) {
        Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, m->start);
        if (mod) {
            Dwarf_Addr bias;
            const unsigned char *bits;
            GElf_Addr vaddr;
            dwfl_module_getelf(mod, &bias); /* the build ID is read with the ELF */
            int n = dwfl_module_build_id(mod, &bits, &vaddr);
            if (n > 0)
                return build_id_hex(&s->map_arena, bits, n);
        }
    }
    struct note_args na = {m->start, NULL, 0};
    dl_iterate_phdr(loader_note_cb, &na);
    if (na.n > 0)
        return build_id_hex(&s->map_arena, na.bits, (ssize_t)na.n);
    const char *result = "";
    if (path[0] != '/')
        return "";
    /* A deleted path may name a newer file by now: read the mapped one. */
    int fd = m->deleted ? pp_sym_open_map_file(m->start, m->limit) : pp_sym_open(path);
    if (fd < 0)
        return "";
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf) {
        const void *bits;
        ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
        result = build_id_hex(&s->map_arena, bits, n);
        elf_end(elf);
    }
    close(fd);
    return result;
}

struct snap_args {
    struct pp_sym_session *s;
    pp_sym_mapping *maps;
    size_t n, cap;
    bool ok;
};

static void snap_line(const char *line, size_t len, void *arg)
{
    struct snap_args *a = arg;
    maps_line m;
    if (!a->ok || !pp_sym_parse_maps_line(line, len, &m) || !m.exec)
        return;
    if (m.pathlen == 10 && memcmp(m.path, "[vsyscall]", 10) == 0)
        return;
    if (pp_reserve(&a->maps, &a->cap, a->n, sizeof *a->maps) < 0) {
        a->ok = false;
        return;
    }
    char *path = pp_arena_alloc_aligned(&a->s->map_arena, m.pathlen + 1, 1);
    if (!path) {
        a->ok = false;
        return;
    }
    memcpy(path, m.path, m.pathlen);
    path[m.pathlen] = '\0';
    pp_sym_mapping *out = &a->maps[a->n++];
    out->start = m.start;
    out->limit = m.limit;
    out->offset = m.offset;
    out->dev = m.dev;
    out->inode = m.inode;
    out->path = path;
    out->build_id = mapping_build_id(a->s, &m, path);
}

/* Compares by start address: the kernel lists mappings in order already,
 * this only guards the binary search. */
static int cmp_mapping(const void *x, const void *y)
{
    const pp_sym_mapping *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start;
}

static bool rebuild_snapshot(struct pp_sym_session *s, const sbuf *maps_text)
{
    pp_arena old_arena = s->map_arena;
    pp_sym_mapping *old_maps = s->maps;
    s->map_arena.head = NULL;
    struct snap_args a = {s, NULL, 0, 0, true};
    pp_sym_each_line(maps_text, snap_line, &a);
    if (!a.ok) {
        free(a.maps);
        pp_arena_release(&s->map_arena);
        s->map_arena = old_arena;
        return false;
    }
    if (a.n > 1)
        qsort(a.maps, a.n, sizeof *a.maps, cmp_mapping);
    free(old_maps);
    pp_arena_release(&old_arena);
    s->maps = a.maps;
    s->nmaps = a.n;
    s->maps_valid = true;
    return true;
}

/* The vDSO, which dwfl_linux_proc_maps_report leaves out (it knows it
 * only from a process's auxiliary vector): reported by hand, under the
 * name that makes find_elf read its image from this process's memory.
 * Without it the loader named its functions by whichever alias it met
 * first ("clock_gettime", the same as libc's caller, so the two read as
 * a recursion), where the symbol table gives "__vdso_clock_gettime". */
static void vdso_line(const char *line, size_t len, void *arg)
{
    unsigned long lo, hi;
    if (len > 6 && !memcmp(line + len - 6, "[vdso]", 6) && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
        char name[32];
        snprintf(name, sizeof name, "[vdso: %d]", (int)getpid());
        dwfl_report_module(arg, name, lo, hi);
    }
}

static void report_vdso(Dwfl *d, const sbuf *maps_text)
{
    pp_sym_each_line(maps_text, vdso_line, d);
}

/* Reports the modules of the maps text into d (read from memory: a process
 * with no descriptor free still has its symbols). A positive result means
 * the text could not be read; -1 means one module could not be reported,
 * and the others still serve. */
static int report_maps(Dwfl *d, const sbuf *maps_text)
{
    FILE *f = fmemopen(maps_text->p, maps_text->n, "r"); /* no descriptor needed */
    if (!f)
        return 1;
    int rc = dwfl_linux_proc_maps_report(d, f);
    fclose(f);
    report_vdso(d, maps_text);
    return rc;
}

static Dwfl *build_dwfl(const sbuf *maps_text)
{
    Dwfl *d = dwfl_begin(&pp_sym_callbacks);
    if (!d)
        return NULL;
    dwfl_report_begin(d);
    int rc = maps_text ? report_maps(d, maps_text) : dwfl_linux_proc_report(d, getpid());
    if (dwfl_report_end(d, NULL, NULL) != 0 || rc > 0) {
        dwfl_end(d);
        return NULL;
    }
    return d;
}

static int note_removed(Dwfl_Module *mod, void *userdata, const char *name, Dwarf_Addr base, void *arg)
{
    (void)mod;
    (void)userdata;
    (void)name;
    (void)base;
    *(bool *)arg = true;
    return DWARF_CB_OK;
}

/* Reports the current modules into the existing Dwfl: a module mapped as
 * before (same file, same addresses) is kept with everything libdw has
 * read of it (its units, line tables, debug file), so a program that
 * loads and unloads libraries does not make every profile read the rest
 * again (libc's separate debug file alone took seconds a profile). The
 * indexes keyed by module and unit are dropped when any module went away,
 * before libdwfl frees it: its addresses may be reused by the next one. */
static bool rereport_dwfl(struct pp_sym_session *s, const sbuf *maps_text)
{
    FILE *f = fmemopen(maps_text->p, maps_text->n, "r");
    if (!f)
        return false; /* out of memory: the Dwfl stays as it was */
    dwfl_report_begin(s->dwfl);
    int rc = dwfl_linux_proc_maps_report(s->dwfl, f);
    fclose(f);
    report_vdso(s->dwfl, maps_text);
    bool removed = false;
    if (dwfl_report_end(s->dwfl, note_removed, &removed) != 0)
        removed = true; /* the module list is in doubt: drop what points into it */
    if (removed)
        pp_sym_indexes_clear(s);
    pp_sym_cache_clear(s); /* answers are per address: a region may hold another object now */
    return rc <= 0;
}

/* Brings the Dwfl and the mapping snapshot up to date. The loader's
 * counters are read before the maps, so a dlopen racing with this call is
 * noticed at the next one. */
void pp_sym_refresh(struct pp_sym_session *s)
{
    struct dl_counts dc = pp_sym_dl_counts_now();
    sbuf text = {0}, all = {0}, files = {0};
    bool have_maps = pp_sym_read_file("/proc/self/maps", &text);
    struct sig_args sa = {&all, &files, true};
    if (have_maps)
        pp_sym_each_line(&text, sig_line, &sa);
    have_maps = have_maps && sa.ok;

    bool dwfl_stale = s->dwfl == NULL || s->dwfl_pid != getpid() || !dc.ok || !s->dl_known ||
                      dc.adds != s->dl_adds || dc.subs != s->dl_subs ||
                      (have_maps && !sbuf_eq(&files, &s->sig_files));
    bool rebuilt = false;
    if (dwfl_stale && s->dwfl && s->dwfl_pid == getpid() && have_maps) {
        rebuilt = rereport_dwfl(s, &text);
    } else if (dwfl_stale) {
        Dwfl *d = build_dwfl(have_maps ? &text : NULL);
        if (d) {
            if (s->dwfl)
                dwfl_end(s->dwfl);
            pp_sym_cache_clear(s);
            pp_sym_indexes_clear(s);
            s->dwfl = d;
            rebuilt = true;
        }
    }
    if (dwfl_stale) {
        /* Record what was tried even on failure, so the cheap check in
         * pprof_symbol_name does not retry on every call. */
        s->dwfl_pid = getpid();
        s->dl_adds = dc.adds;
        s->dl_subs = dc.subs;
        s->dl_known = dc.ok;
        if (have_maps) {
            sbuf t = s->sig_files;
            s->sig_files = files;
            files = t;
        }
    }
    if (have_maps && (rebuilt || !s->maps_valid || !sbuf_eq(&all, &s->sig_all))) {
        if (rebuild_snapshot(s, &text)) {
            sbuf t = s->sig_all;
            s->sig_all = all;
            all = t;
        }
    }
    free(text.p);
    free(all.p);
    free(files.p);
}
