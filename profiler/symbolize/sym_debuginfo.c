/* sym_debuginfo.c: finding objects and their separate debug files: on the
 * machine (build-ID directory, .gnu_debuglink, /proc/self/map_files), then
 * in the stores of fetched files, else asking debuginfod for them. */
#define _GNU_SOURCE
#include "sym_internal.h"

/* The CRC-32 that .gnu_debuglink records for its file (zlib's). */
static bool file_crc32(int fd, uint32_t *out)
{
    unsigned char buf[8192];
    uLong crc = crc32(0L, Z_NULL, 0);
    off_t pos = 0;
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof buf, pos);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            break;
        crc = crc32(crc, buf, (uInt)n);
        pos += n;
    }
    *out = (uint32_t)crc;
    return true;
}

/* Whether the file open on fd is the debug file wanted. libdwfl asks for
 * a dwz alternate file with a CRC of 0: that name is taken as it is.
 * Otherwise, when the module and the candidate both carry a build ID they
 * must match, else the debuglink CRC must. */
static bool debug_file_matches(Dwfl_Module *mod, int fd, GElf_Word crc)
{
    if (crc == 0)
        return true;
    const unsigned char *want;
    GElf_Addr vaddr;
    int nwant = dwfl_module_build_id(mod, &want, &vaddr);
    if (nwant > 0) {
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (elf) {
            const void *got;
            ssize_t ngot = dwelf_elf_gnu_build_id(elf, &got);
            bool decided = ngot > 0;
            bool same = decided && ngot == nwant && memcmp(got, want, (size_t)nwant) == 0;
            elf_end(elf);
            if (decided)
                return same;
        }
    }
    uint32_t got_crc;
    return file_crc32(fd, &got_crc) && got_crc == crc;
}

/* Opens `path` as the debug file of `mod` when it is not the main file
 * itself and it matches. */
static int try_debug_candidate(Dwfl_Module *mod, const char *path, const struct stat *main_st,
                               GElf_Word crc, char **out_name)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (main_st && st.st_dev == main_st->st_dev && st.st_ino == main_st->st_ino) ||
        !debug_file_matches(mod, fd, crc)) {
        close(fd);
        return -1;
    }
    *out_name = strdup(path);
    return pp_fd_lift(fd);
}

/* --- Compressed debug sections. libdw reads DWARF in place from the
 * mapped file, except sections stored compressed (SHF_COMPRESSED, or the
 * older .zdebug_*), which libelf inflates whole into the heap, every one
 * of them, when libdw opens the object: for a big C++ program that is
 * gigabytes before the first line is found. So an object whose compressed
 * debug sections would inflate past LIBPPROF_SYMBOLIZER_INFLATE_MB is
 * symbolized from its symbol tables only, and profiles say so in a
 * comment. --- */

static uint64_t inflate_budget(void)
{
    static int mb = -1; /* read once, under the session lock */
    if (mb < 0)
        mb = pp_env_int("LIBPPROF_SYMBOLIZER_INFLATE_MB", 128, 0, 1 << 20);
    return (uint64_t)mb << 20;
}

/* What reading elf's DWARF would inflate, in bytes; *has_dwarf says
 * whether it has a .debug_info at all. */
static uint64_t inflated_bytes(Elf *elf, bool *has_dwarf)
{
    uint64_t total = 0;
    size_t shstrndx;
    *has_dwarf = false;
    if (elf == NULL || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return 0;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
        if (name == NULL || sh.sh_type == SHT_NOBITS)
            continue;
        bool z = strncmp(name, ".zdebug_", 8) == 0;
        if (!z && strncmp(name, ".debug_", 7) != 0)
            continue;
        if (strcmp(name + 1 + z, "debug_info") == 0)
            *has_dwarf = true;
        GElf_Chdr ch;
        if (sh.sh_flags & SHF_COMPRESSED) {
            if (gelf_getchdr(scn, &ch))
                total += ch.ch_size;
        } else if (z) { /* "ZLIB" and the size, big-endian */
            Elf_Data *d = elf_rawdata(scn, NULL);
            const unsigned char *b = d ? d->d_buf : NULL;
            if (b && d->d_size >= 12 && memcmp(b, "ZLIB", 4) == 0)
                for (int i = 4; i < 12; i++)
                    total = total + ((uint64_t)b[i] << (8 * (11 - i)));
        }
    }
    return total;
}

#define MAX_NOTES 8
static char notes[MAX_NOTES][384]; /* under the session lock */
static size_t nnotes;

static void add_note(const char *path, uint64_t bytes)
{
    if (nnotes == MAX_NOTES)
        return;
    snprintf(notes[nnotes++], sizeof notes[0],
             "%s: its compressed debug sections would take %" PRIu64 " MB inflated, over "
             "LIBPPROF_SYMBOLIZER_INFLATE_MB (%" PRIu64 "): functions from its symbol tables only, "
             "no files, lines or inlined calls",
             path, bytes >> 20, inflate_budget() >> 20);
}

size_t pp_sym_notes(pp_sym_session *s, const char **out, size_t max)
{
    (void)s; /* the notes are the session's, kept here for the callbacks */
    size_t n = nnotes < max ? nnotes : max;
    for (size_t i = 0; i < n; i++)
        out[i] = notes[i];
    return n;
}

void pp_sym_notes_clear(void)
{
    nnotes = 0;
}

/* Whether the DWARF of the file open on fd may be read (a note when not). */
static bool inflate_ok_fd(int fd, const char *path)
{
    if (fd < 0)
        return true;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    bool has;
    uint64_t bytes = inflated_bytes(elf, &has);
    if (elf)
        elf_end(elf);
    if (bytes <= inflate_budget())
        return true;
    add_note(path, bytes);
    return false;
}

/* Set (under the session lock) while libdwfl searches for a module's
 * DWARF: only then may find_debuginfo leave a file out. The search for its
 * symbol tables needs the same file (a stripped program's .symtab is in
 * its debug file), and symbol tables are never compressed. */
static bool dwarf_search;

/* Whether the file at path may have its DWARF read. */
static bool inflate_ok_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    bool ok = inflate_ok_fd(fd, path);
    if (fd >= 0)
        close(fd);
    return ok;
}

bool pp_sym_dwarf_allowed(Dwfl_Module *mod)
{
    Dwarf_Addr bias;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    bool has;
    uint64_t bytes = inflated_bytes(elf, &has);
    const char *name, *debugfile = NULL;
    name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
    if (has) { /* its own DWARF */
        if (bytes <= inflate_budget())
            return true;
        add_note(name ? name : "?", bytes);
        return false;
    }
    if (debugfile) /* found already, with its symbol tables */
        return inflate_ok_path(debugfile);
    /* Not searched yet: search now, where find_debuginfo may leave the
     * file out (libdw then has no DWARF for the module). */
    dwarf_search = true;
    dwfl_module_getdwarf(mod, &bias);
    dwarf_search = false;
    return true;
}

/* The path libdwfl's build-ID search tries first, or false. */
/* The module's build ID in hex, or false when it has none. */
static bool module_hex(Dwfl_Module *mod, char *hex, size_t n)
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    return len >= 2 && pp_sym_build_id_hex(bits, (size_t)len, hex, n);
}

static bool build_id_path(Dwfl_Module *mod, char *out, size_t n)
{
    char hex[PP_SYM_HEX_MAX];
    return module_hex(mod, hex, sizeof hex) && pp_sym_tree_path(hex, out, n);
}

/* The find_debuginfo callback: libdwfl's standard search without its last
 * resort. dwfl_standard_find_debuginfo ends by asking a debuginfod client,
 * and merely getting that client dlopens libdebuginfod, which loads
 * libcurl, gnutls, krb5 and some thirty more libraries into the host
 * process (even with DEBUGINFOD_URLS unset); with DEBUGINFOD_URLS set it
 * would download debug files while the symbolizer lock is held. So: the
 * build-ID tree under /usr/lib/debug/.build-id first (this also finds dwz
 * alternate files by their build ID), then the .gnu_debuglink name (or
 * "<file>.debug") next to the file, in its .debug subdirectory, under
 * /usr/lib/debug/<dir> and in /usr/lib/debug. */
static int search_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                            GElf_Addr base, const char *file_name, const char *debuglink,
                            GElf_Word crc, char **out_name)
{
    struct stat main_st, *mst = NULL;
    if (file_name && stat(file_name, &main_st) == 0)
        mst = &main_st;
    /* The module's own debug file by its build ID, opened here so that
     * its descriptor is moved above the program's numbers (libdwfl's
     * search keeps its descriptor where open put it, in the Elf it makes);
     * a dwz alternate file (asked for with a CRC of 0 and its name) by
     * libdwfl's search. */
    int fd = -1;
    char path[600];
    if ((crc != 0 || debuglink == NULL) && build_id_path(mod, path, sizeof path) &&
        (fd = try_debug_candidate(mod, path, mst, crc, out_name)) >= 0)
        return fd;
    fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink, crc, out_name);
    if (fd >= 0)
        return fd;
    char kept[600]; /* out of reach by its path (a chroot): the file kept for it */
    if (build_id_path(mod, kept, sizeof kept) && (fd = pp_sym_open(kept)) >= 0) {
        *out_name = strdup(kept);
        return pp_fd_lift(fd);
    }
    if (debuglink && debuglink[0] == '/')
        return try_debug_candidate(mod, debuglink, mst, crc, out_name);
    if (file_name == NULL || file_name[0] != '/')
        return -1;
    const char *slash = strrchr(file_name, '/');
    int dirlen = (int)(slash - file_name);
    char deflink[256];
    if (debuglink == NULL || debuglink[0] == '\0') {
        int n = snprintf(deflink, sizeof deflink, "%s.debug", slash + 1);
        if (n < 0 || (size_t)n >= sizeof deflink)
            return -1;
        debuglink = deflink;
    }
    static const char *const fmts[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s",
                                       "/usr/lib/debug/%.*s%s"};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        char cand[4096];
        int n = snprintf(cand, sizeof cand, fmts[i], i == 3 ? 0 : dirlen, file_name, debuglink);
        if (n < 0 || (size_t)n >= sizeof cand)
            continue;
        fd = try_debug_candidate(mod, cand, mst, crc, out_name);
        if (fd >= 0)
            return fd;
    }
    return -1;
}

/* Where nothing on the machine's usual paths has the debug file: the
 * stores of fetched files (sym_store.c), else a fetch from debuginfod is
 * asked for (sym_fetch.c) and the module goes on without; when the file
 * arrives, the next session's Dwfl finds it here. */
static int find_kept_or_fetch(Dwfl_Module *mod, const char *modname, const char *file_name, char **out_name)
{
    char hex[PP_SYM_HEX_MAX];
    if (!module_hex(mod, hex, sizeof hex))
        return -1;
    int fd = pp_sym_store_open(hex, out_name);
    if (fd < 0)
        pp_sym_fetch_want(hex, file_name ? file_name : modname);
    return fd;
}

/* The search above; while DWARF is searched for, a debug file whose
 * sections would inflate past the budget is left out. The build-ID file
 * is looked at before libdwfl's own search, which keeps what it opens. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          GElf_Addr base, const char *file_name, const char *debuglink,
                          GElf_Word crc, char **out_name)
{
    char path[600];
    if (dwarf_search && crc != 0 && build_id_path(mod, path, sizeof path) && !inflate_ok_path(path))
        return -1;
    int fd = search_debuginfo(mod, userdata, modname, base, file_name, debuglink, crc, out_name);
    if (fd < 0 && (crc != 0 || debuglink == NULL)) /* not a dwz alternate file */
        fd = find_kept_or_fetch(mod, modname, file_name, out_name);
    if (fd >= 0 && dwarf_search && !inflate_ok_fd(fd, *out_name ? *out_name : modname)) {
        close(fd);
        free(*out_name);
        *out_name = NULL;
        return -1;
    }
    return fd;
}

/* Opens the file behind one mapping through /proc/self/map_files, which
 * works after the file was deleted or replaced on disk. */
int pp_sym_open_map_file(uint64_t start, uint64_t limit)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/map_files/%" PRIx64 "-%" PRIx64, start, limit);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* The find_elf callback. dwfl_linux_proc_find_elf opens a module by the
 * path in /proc/self/maps, which fails for a library deleted or replaced
 * since it was loaded (a package upgraded under a running service): the
 * module's name then ends in " (deleted)", and the mapped file is still
 * reachable through /proc/self/map_files. */
static int find_elf_at(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       char **file_name, Elf **elfp)
{
    /* dwfl_linux_proc_find_elf aborts on any other kind of name. */
    if (modname == NULL || (modname[0] != '/' && strncmp(modname, "[vdso: ", 7) != 0))
        return -1;
    int fd = dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name, elfp);
    if (fd < 0 && *elfp == NULL && modname[0] == '/' && (fd = pp_sym_open(modname)) >= 0) {
        *file_name = strdup(modname); /* out of reach by its path (a chroot): the kept file */
        return fd;
    }
    static const char deleted[] = " (deleted)";
    size_t n = strlen(modname), dl = sizeof deleted - 1;
    if (fd >= 0 || *elfp != NULL || n <= dl || modname[0] != '/' ||
        strcmp(modname + n - dl, deleted) != 0)
        return fd;
    FILE *f = pp_fd_fopen("/proc/self/maps");
    if (!f)
        return -1;
    char line[4608];
    while (fd < 0 && fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        maps_line m;
        if (!pp_sym_parse_maps_line(line, len, &m) || !m.deleted || m.pathlen + dl != n ||
            memcmp(m.path, modname, n) != 0)
            continue;
        fd = pp_sym_open_map_file(m.start, m.limit);
    }
    pp_fd_fclose(f);
    if (fd >= 0 && *file_name == NULL)
        *file_name = strndup(modname, n - dl);
    return fd;
}

/* The find_elf callback: the search above, its descriptor (libdwfl keeps
 * it open until the symbolizer's idle release) moved above the numbers
 * the program uses, so that the program's next open gets the number it
 * would get without libpprof. One that came with its Elf already made
 * stays where it is (the Elf holds its number). */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
    int fd = find_elf_at(mod, userdata, modname, base, file_name, elfp);
    return *elfp == NULL ? pp_fd_lift(fd) : fd;
}

const Dwfl_Callbacks pp_sym_callbacks = {
    .find_elf = find_elf,
    .find_debuginfo = find_debuginfo,
    .debuginfo_path = NULL, /* ":.debug:/usr/lib/debug" */
};
