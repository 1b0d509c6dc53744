/* sym_pages.c: the pages of the object and debug files that a session
 * read are given back when it ends.
 *
 * libelf maps each file it opens whole (one private mapping from offset
 * 0), and libdw reads the debug sections in place, so the pages a profile's
 * lookups touched (a compile unit's entries, its line table, the symbol
 * and string tables) stay resident, counted in the process's RSS: for a
 * big C++ program, hundreds of MB after one profile. The sections' pages
 * are clean copies of the file, never written (libelf converts nothing in
 * place for a native-endian file, and libdwfl applies relocations only to
 * ET_REL objects, which a process's mappings never are), so dropping them
 * with MADV_DONTNEED loses nothing: a later read maps them again from the
 * page cache. The one thing libelf writes into the mapping is a section's
 * header, when it inflates a compressed section: the pages of the section
 * header table are kept. What the session built from the data (indexes,
 * caches, libdw's own tables) is kept too.
 *
 * libelf's mapping is recognised exactly: a private, writable (libelf maps
 * PROT_READ|PROT_WRITE), file-backed line of /proc/self/maps from offset 0
 * that starts at the address of the ELF header libelf hands out. The
 * loader maps nothing writable at offset 0, and an Elf that libelf read
 * into its own memory (no mmap) has its header elsewhere, so neither is
 * ever touched.
 */
#define _GNU_SOURCE
#include "sym_internal.h"

#include <sys/mman.h>

void pp_sym_pages_note(struct pp_sym_session *s, Dwfl_Module *mod, bool dwarf)
{
    uint64_t key = (uint64_t)(uintptr_t)mod;
    read_module *e = pp_table_find(&s->read_mods, key);
    if (!e && (e = pp_table_add(&s->read_mods, key)) != NULL) {
        e->mod = mod;
        e->dwarf = false;
    }
    if (e && dwarf)
        e->dwarf = true;
}

/* One libelf mapping to give back: it starts at the ELF header `head`;
 * the pages of the section header table [keep_lo, keep_hi) stay, since
 * libelf writes there (inflating a compressed section rewrites its
 * header). */
typedef struct mapped_elf {
    uint64_t head, keep_lo, keep_hi;
} mapped_elf;

/* A native-endian, non-relocatable Elf's header and section header
 * table; false for any other. */
static bool mapped_of(Elf *elf, mapped_elf *out)
{
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF)
        return false;
    const Elf64_Ehdr *eh = elf64_getehdr(elf);
    if (eh == NULL || eh->e_type == ET_REL || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
        __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
        return false;
    uint64_t head = (uint64_t)(uintptr_t)eh, page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t lo = head + eh->e_shoff, hi = lo + (uint64_t)eh->e_shnum * eh->e_shentsize;
    *out = (mapped_elf){head, lo & ~(page - 1), (hi + page - 1) & ~(page - 1)};
    return true;
}

static void add_mapped(mapped_elf *v, size_t *n, size_t cap, Elf *elf)
{
    mapped_elf m;
    if (!mapped_of(elf, &m) || *n == cap)
        return;
    for (size_t i = 0; i < *n; i++)
        if (v[i].head == m.head)
            return;
    v[(*n)++] = m;
}

/* Gives back [lo, hi) (page-aligned), when not empty. */
static bool give_back(uint64_t lo, uint64_t hi)
{
    return lo < hi && madvise((void *)(uintptr_t)lo, hi - lo, MADV_DONTNEED) == 0;
}

bool pp_sym_pages_release(struct pp_sym_session *s)
{
    size_t nmods = pp_table_count(&s->read_mods);
    if (nmods == 0)
        return false;
    enum { CAP = 256 };
    mapped_elf v[CAP];
    size_t n = 0;
    for (size_t i = 0; i < nmods; i++) {
        read_module *e = pp_table_at(&s->read_mods, i);
        Dwarf_Addr bias;
        add_mapped(v, &n, CAP, dwfl_module_getelf(e->mod, &bias));
        if (e->dwarf) { /* already loaded: the session read it */
            Dwarf *dw = dwfl_module_getdwarf(e->mod, &bias);
            add_mapped(v, &n, CAP, dw ? dwarf_getelf(dw) : NULL);
        }
    }
    pp_table_free(&s->read_mods);
    if (n == 0)
        return false;
    FILE *f = pp_fd_fopen("/proc/self/maps");
    if (!f)
        return false;
    bool any = false;
    char line[4608];
    while (fgets(line, sizeof line, f)) {
        maps_line m;
        if (!pp_sym_parse_maps_line(line, strcspn(line, "\n"), &m) || !m.write || !m.priv ||
            m.offset != 0 || m.pathlen == 0 || m.path[0] != '/')
            continue;
        for (size_t i = 0; i < n; i++) {
            if (v[i].head != m.start)
                continue;
            uint64_t lo = v[i].keep_lo > m.start ? v[i].keep_lo : m.start;
            uint64_t hi = v[i].keep_hi < m.limit ? v[i].keep_hi : m.limit;
            if (lo >= hi) /* the table is not in this mapping */
                lo = hi = m.limit;
            any |= give_back(m.start, lo);
            any |= give_back(hi, m.limit);
        }
    }
    pp_fd_fclose(f);
    return any;
}
