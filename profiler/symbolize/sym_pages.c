/* sym_pages.c: the pages of the object and debug files that a session
 * read are given back when it ends.
 *
 * libelf maps each file it opens whole (one private mapping from offset
 * 0), and libdw reads the debug sections in place, so the pages a profile's
 * lookups touched (a compile unit's entries, its line table, the symbol
 * and string tables) stay resident, counted in the process's RSS: for a
 * big C++ program, hundreds of MB after one profile. They are clean copies
 * of the file, never written (libelf converts nothing in place for a
 * native-endian file, and libdwfl applies relocations only to ET_REL
 * objects, which a process's mappings never are), so dropping them with
 * MADV_DONTNEED loses nothing: a later read maps them again from the page
 * cache. What the session built from them (indexes, caches, libdw's own
 * tables) is kept.
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

/* The address of the ELF header of a native-endian, non-relocatable Elf,
 * or 0. */
static uint64_t header_of(Elf *elf)
{
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF)
        return 0;
    const Elf64_Ehdr *eh = elf64_getehdr(elf);
    if (eh == NULL || eh->e_type == ET_REL || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
        __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
        return 0;
    return (uint64_t)(uintptr_t)eh;
}

static void add_header(uint64_t *heads, size_t *n, size_t cap, uint64_t h)
{
    if (h == 0 || *n == cap)
        return;
    for (size_t i = 0; i < *n; i++)
        if (heads[i] == h)
            return;
    heads[(*n)++] = h;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

bool pp_sym_pages_release(struct pp_sym_session *s)
{
    size_t nmods = pp_table_count(&s->read_mods);
    if (nmods == 0)
        return false;
    enum { CAP = 256 };
    uint64_t heads[CAP];
    size_t n = 0;
    for (size_t i = 0; i < nmods; i++) {
        read_module *e = pp_table_at(&s->read_mods, i);
        Dwarf_Addr bias;
        add_header(heads, &n, CAP, header_of(dwfl_module_getelf(e->mod, &bias)));
        if (e->dwarf) { /* already loaded: the session read it */
            Dwarf *dw = dwfl_module_getdwarf(e->mod, &bias);
            add_header(heads, &n, CAP, header_of(dw ? dwarf_getelf(dw) : NULL));
        }
    }
    pp_table_free(&s->read_mods);
    if (n == 0)
        return false;
    qsort(heads, n, sizeof *heads, cmp_u64);
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return false;
    bool any = false;
    char line[4608];
    while (fgets(line, sizeof line, f)) {
        maps_line m;
        if (!pp_sym_parse_maps_line(line, strcspn(line, "\n"), &m) || !m.write || !m.priv ||
            m.offset != 0 || m.pathlen == 0 || m.path[0] != '/')
            continue;
        if (bsearch(&m.start, heads, n, sizeof *heads, cmp_u64))
            any |= madvise((void *)(uintptr_t)m.start, m.limit - m.start, MADV_DONTNEED) == 0;
    }
    fclose(f);
    return any;
}
