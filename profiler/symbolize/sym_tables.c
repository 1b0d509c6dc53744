/* sym_tables.c: each module's function symbols, sorted once, for
 * finding the function that holds an address. */
#define _GNU_SOURCE
#include "sym_internal.h"

/* dwfl_module_addrinfo scans a module's whole symbol table on every call
 * (0.2 ms per address in libc with its debug symbols here, far worse in big
 * C++ programs), so each module's function symbols are read once, through
 * dwfl_module_getsym_info (the same .symtab/.dynsym/auxiliary tables, with
 * the same address adjustment) into a sorted array searched by bisection. */

typedef struct sym_cand {
    uint64_t start, size;
    uint64_t limit;        /* end of the symbol's section, for sizeless ones */
    const char *name;
    unsigned rank;         /* lower is preferred among aliases */
} sym_cand;

static int cmp_cand(const void *x, const void *y)
{
    const sym_cand *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Among aliases at one address: a sized symbol over a sizeless one, then
 * global over weak over local, then fewer leading underscores, so that
 * glibc's `getpid` wins over `__getpid` and its internal `__GI_` aliases. */
static unsigned cand_rank(const GElf_Sym *sym, const char *name)
{
    unsigned bind = GELF_ST_BIND(sym->st_info);
    unsigned r = sym->st_size ? 0 : 1u << 8;
    r |= (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1u : 2u) << 4;
    unsigned us = 0;
    if (strncmp(name, "__GI_", 5) == 0)
        us = 15;
    while (name[us] == '_' && us < 15)
        us++;
    return r | us;
}

/* Absolute end of the section holding a symbol, or 0 when unknown. */
static uint64_t section_limit(Elf *elf, GElf_Word shndx, Dwarf_Addr bias)
{
    GElf_Shdr shdr;
    Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
    if (!scn || !gelf_getshdr(scn, &shdr))
        return 0;
    return shdr.sh_addr + shdr.sh_size + bias;
}

/* Symbol names as profiles should show them: glibc's debug symbols carry
 * version suffixes ("pthread_mutex_lock@@GLIBC_2.2.5"), dropped here. */
static const char *clean_name(pp_arena *a, const char *name)
{
    const char *at = strchr(name, '@');
    if (!at || at == name)
        return name;
    size_t n = (size_t)(at - name);
    char *p = pp_arena_alloc_aligned(a, n + 1, 1);
    if (!p)
        return name;
    memcpy(p, name, n);
    p[n] = '\0';
    return p;
}

static bool is_code_symbol(const GElf_Sym *sym, const char *name, GElf_Word shndx, Elf *elf)
{
    if (name == NULL || name[0] == '\0' || name[0] == '$')
        return false;
    if (shndx == SHN_UNDEF || shndx == (GElf_Word)-1 || sym->st_shndx == SHN_ABS)
        return false;
    unsigned type = GELF_ST_TYPE(sym->st_info);
    if (type == STT_FUNC || type == STT_GNU_IFUNC)
        return true;
    if (type != STT_NOTYPE || elf == NULL)
        return false;
    /* Untyped symbols (hand-written assembly) count when they label code. */
    GElf_Shdr shdr;
    Elf_Scn *scn = elf_getscn(elf, shndx);
    return scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR);
}

static bool build_sym_index(Dwfl_Module *mod, pp_arena *names, sym_index *out)
{
    out->syms = NULL;
    out->n = 0;
    int total = dwfl_module_getsymtab(mod);
    if (total <= 1)
        return true;
    sym_cand *c = malloc((size_t)total * sizeof *c);
    if (!c)
        return false;
    size_t nc = 0;
    for (int i = 1; i < total; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf = NULL;
        Dwarf_Addr bias = 0;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &bias);
        if (!is_code_symbol(&sym, name, shndx, elf) || addr == 0)
            continue;
        uint64_t limit = sym.st_size ? 0 : section_limit(elf, shndx, bias);
        c[nc++] = (sym_cand){addr, sym.st_size, limit, name, cand_rank(&sym, name)};
    }
    if (nc == 0) {
        free(c);
        return true;
    }
    qsort(c, nc, sizeof *c, cmp_cand);
    sym_entry *e = malloc(nc * sizeof *e);
    uint64_t *limits = malloc(nc * sizeof *limits);
    if (!e || !limits) {
        free(e);
        free(limits);
        free(c);
        return false;
    }
    /* One entry per address: the preferred alias, the largest size, and
     * for sizeless symbols the end of their section in `limits`. */
    size_t n = 0;
    for (size_t i = 0; i < nc;) {
        size_t j = i;
        uint64_t size = 0, limit = 0;
        for (; j < nc && c[j].start == c[i].start; j++) {
            size = c[j].size > size ? c[j].size : size;
            limit = c[j].limit > limit ? c[j].limit : limit;
        }
        e[n] = (sym_entry){c[i].start, c[i].start + size, clean_name(names, c[i].name)};
        limits[n] = limit;
        n++;
        i = j;
    }
    /* A sizeless symbol runs to the next symbol, but not past its section
     * (so `_fini` does not swallow the padding after it; `_etext`, at the
     * very end, covers nothing). */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        sym_entry x = e[i];
        if (x.end == x.start) {
            uint64_t end = i + 1 < n ? e[i + 1].start : UINT64_MAX;
            if (limits[i] && limits[i] < end)
                end = limits[i];
            if (end == UINT64_MAX || end <= x.start)
                continue;
            x.end = end;
        }
        e[kept++] = x;
    }
    free(limits);
    free(c);
    out->syms = e;
    out->n = kept;
    return true;
}

void pp_sym_indexes_clear(struct pp_sym_session *s)
{
    for (size_t i = 0; i < pp_table_count(&s->modidx); i++)
        free(((sym_index *)pp_table_at(&s->modidx, i))->syms);
    pp_table_free(&s->modidx);
    pp_arena_release(&s->sym_arena);
    for (size_t i = 0; i < pp_table_count(&s->cuidx); i++)
        free(((cu_index *)pp_table_at(&s->cuidx, i))->r);
    pp_table_free(&s->cuidx);
}

static sym_index *modidx_get(struct pp_sym_session *s, Dwfl_Module *mod)
{
    uint64_t key = (uint64_t)(uintptr_t)mod;
    sym_index *e = pp_table_find(&s->modidx, key);
    if (e)
        return e;
    sym_index built;
    if (!build_sym_index(mod, &s->sym_arena, &built))
        return NULL;
    if ((e = pp_table_add(&s->modidx, key)) == NULL) {
        free(built.syms);
        return NULL;
    }
    built.key = key;
    built.mod = mod;
    *e = built;
    return e;
}

/* Name of the function symbol whose code holds addr, or NULL. */
const char *pp_sym_symbol_at(struct pp_sym_session *s, Dwfl_Module *mod, uint64_t addr, uint64_t *start)
{
    *start = 0;
    sym_index *ix = modidx_get(s, mod);
    if (!ix || ix->n == 0)
        return NULL;
    size_t lo = 0, hi = ix->n; /* first entry with start > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->syms[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* The nearest start below addr usually holds it; a few steps back
     * catch a larger symbol enclosing smaller ones. */
    for (size_t k = 0; k < 8 && lo > 0; k++, lo--) {
        const sym_entry *e = &ix->syms[lo - 1];
        if (addr < e->end) {
            *start = e->start;
            return e->name;
        }
    }
    return NULL;
}
