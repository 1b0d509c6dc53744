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
    while (us < 15 && name[us] == '_')
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
 * version suffixes ("pthread_mutex_lock@@GLIBC_2.2.5"), dropped here; a
 * PLT stub's "@plt" stays. */
static const char *clean_name(pp_arena *a, const char *name)
{
    const char *at = strchr(name, '@');
    if (!at || at == name || strcmp(at, "@plt") == 0)
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

/* --- PLT stubs: no symbol covers them, so they are named as objdump and
 * perf name them, "<function>@plt", from the relocation of the GOT slot
 * each one jumps through. The stubs are read as the object's machine
 * (e_machine) writes them: x86-64's `jmp *disp(%rip)`, arm64's
 * `adrp x16, page; ldr x17, [x16, #off]; add x16, x16, #off; br x17`. --- */

typedef struct got_name {
    uint64_t slot;         /* the GOT slot's link-time address */
    const char *name;      /* in the ELF's string table; NULL for an ifunc's */
    uint64_t resolver;     /* an ifunc's resolver (link-time), whose symbol names it */
} got_name;

static int cmp_got(const void *x, const void *y)
{
    const got_name *a = x, *b = y;
    return a->slot < b->slot ? -1 : a->slot > b->slot;
}

/* The function names of the GOT slots that jump-slot and glob-dat
 * relocations fill, and the resolvers of those that irelative ones fill
 * (a library's calls to its own ifuncs, glibc's string functions among
 * them) (malloc'd, sorted by slot). */
static got_name *got_names(Elf *elf, int machine, size_t *n)
{
    *n = 0;
    size_t cap = 0;
    got_name *g = NULL;
    int arm = machine == EM_AARCH64;
    unsigned irelative = arm ? R_AARCH64_IRELATIVE : R_X86_64_IRELATIVE;
    unsigned jump_slot = arm ? R_AARCH64_JUMP_SLOT : R_X86_64_JUMP_SLOT;
    unsigned glob_dat = arm ? R_AARCH64_GLOB_DAT : R_X86_64_GLOB_DAT;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
            continue;
        Elf_Scn *symscn = elf_getscn(elf, sh.sh_link);
        GElf_Shdr symsh;
        Elf_Data *rel = elf_getdata(scn, NULL), *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
        if (!rel || !syms || !gelf_getshdr(symscn, &symsh))
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Rela r;
            GElf_Sym sym;
            unsigned type = gelf_getrela(rel, (int)i, &r) ? (unsigned)GELF_R_TYPE(r.r_info) : 0;
            if (type == irelative && pp_reserve(&g, &cap, *n, sizeof *g) == 0) {
                g[(*n)++] = (got_name){r.r_offset, NULL, (uint64_t)r.r_addend};
                continue;
            }
            if ((type != jump_slot && type != glob_dat) || !GELF_R_SYM(r.r_info) ||
                !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
                continue;
            const char *name = elf_strptr(elf, symsh.sh_link, sym.st_name);
            if (!name || !name[0] || pp_reserve(&g, &cap, *n, sizeof *g) < 0)
                continue;
            g[(*n)++] = (got_name){r.r_offset, name, 0};
        }
    }
    if (*n > 1)
        qsort(g, *n, sizeof *g, cmp_got);
    return g;
}

/* The best-ranked symbol candidate starting at addr among the sorted
 * c[0..n), or NULL. */
static const char *name_at(const sym_cand *c, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n; /* first candidate with start >= addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].start < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && c[lo].start == addr ? c[lo].name : NULL;
}

/* The GOT slot an arm64 PLT entry of `len` bytes at link-time address
 * `at` loads its target from (adrp x16; ldr x17, [x16, #off]), or 0. */
static uint64_t arm64_plt_slot(const unsigned char *code, size_t len, uint64_t at)
{
    for (size_t k = 0; k + 8 <= len; k += 4) {
        uint32_t adrp, ldr;
        memcpy(&adrp, code + k, 4);
        memcpy(&ldr, code + k + 4, 4);
        if ((adrp & 0x9f00001fu) != 0x90000010u || (ldr & 0xffc003ffu) != 0xf9400211u)
            continue; /* adrp x16, ...; ldr x17, [x16, #imm12 * 8] */
        int64_t pages = (int64_t)(((adrp >> 3) & 0x1ffffcu) | ((adrp >> 29) & 3));
        if (pages & (1 << 20))
            pages -= 1 << 21;
        uint64_t page = ((at + k) & ~(uint64_t)4095) + (uint64_t)(pages * 4096);
        return page + ((ldr >> 10) & 0xfff) * 8;
    }
    return 0;
}

/* The GOT slot an x86-64 PLT entry jumps through (jmp *disp(%rip)), or 0. */
static uint64_t x86_plt_slot(const unsigned char *code, size_t len, uint64_t at)
{
    for (size_t k = 0; k + 6 <= len; k++) {
        if (code[k] != 0xff || code[k + 1] != 0x25)
            continue;
        int32_t disp;
        memcpy(&disp, code + k + 2, sizeof disp);
        return at + k + 6 + (uint64_t)(int64_t)disp;
    }
    return 0;
}

/* Candidates for the stubs of .plt, .plt.sec and .plt.got: each entry
 * whose `jmp *disp(%rip)` goes through a named GOT slot, or an ifunc's
 * slot whose resolver is among the module's symbols c[0..nsorted),
 * sorted. Appends to *c. */
static void add_plt_stubs(Dwfl_Module *mod, pp_arena *names, sym_cand **c, size_t *nc, size_t *cap,
                          size_t nsorted)
{
    Dwarf_Addr bias;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    size_t shstrndx, ng = 0;
    GElf_Ehdr eh;
    if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0 || !gelf_getehdr(elf, &eh) ||
        (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64))
        return;
    int arm = eh.e_machine == EM_AARCH64;
    got_name *g = NULL;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        const char *sname = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
        if (!sname || strncmp(sname, ".plt", 4) != 0 || !(sh.sh_flags & SHF_EXECINSTR))
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf || d->d_size < sh.sh_size)
            continue;
        if (!g && !(g = got_names(elf, eh.e_machine, &ng)))
            break;
        size_t stride = sh.sh_entsize ? sh.sh_entsize : 16;
        const unsigned char *code = d->d_buf;
        for (size_t off = 0; off + stride <= sh.sh_size; off += stride) {
            uint64_t slot = (arm ? arm64_plt_slot : x86_plt_slot)(code + off, stride, sh.sh_addr + off);
            if (!slot)
                continue;
            got_name key = {slot, NULL, 0};
            const got_name *hit = bsearch(&key, g, ng, sizeof *g, cmp_got);
            const char *fn = !hit ? NULL : hit->name ? hit->name : name_at(*c, nsorted, hit->resolver + bias);
            size_t len = fn ? strcspn(fn, "@") : 0; /* without a version suffix */
            char *name = fn ? pp_arena_alloc_aligned(names, len + 5, 1) : NULL;
            if (name && pp_reserve(c, cap, *nc, sizeof **c) == 0) {
                memcpy(name, fn, len);
                memcpy(name + len, "@plt", 5);
                (*c)[(*nc)++] = (sym_cand){sh.sh_addr + off + bias, stride, 0, name, 1u << 9};
            }
        }
    }
    free(g);
}

static bool build_sym_index(Dwfl_Module *mod, pp_arena *names, sym_index *out)
{
    out->syms = NULL;
    out->n = 0;
    int total = dwfl_module_getsymtab(mod);
    size_t cap = total > 1 ? (size_t)total : 1;
    sym_cand *c = malloc(cap * sizeof *c);
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
    qsort(c, nc, sizeof *c, cmp_cand); /* sorted, to name ifuncs' stubs */
    size_t nsorted = nc;
    add_plt_stubs(mod, names, &c, &nc, &cap, nsorted);
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
    pp_sym_unit_lines_free(s);
    pp_table_free(&s->read_mods); /* its modules go with the Dwfl */
    pp_sym_notes_clear();
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
    built.dwarf = 0;
    *e = built;
    return e;
}

bool pp_sym_module_dwarf(struct pp_sym_session *s, Dwfl_Module *mod)
{
    sym_index *ix = modidx_get(s, mod);
    if (!ix)
        return pp_sym_dwarf_allowed(mod);
    if (ix->dwarf == 0)
        ix->dwarf = pp_sym_dwarf_allowed(mod) ? 1 : -1;
    return ix->dwarf > 0;
}

int pp_sym_module_has_symbols(struct pp_sym_session *s, Dwfl_Module *mod)
{
    sym_index *ix = modidx_get(s, mod);
    return ix && ix->n > 0;
}

/* Name of the function symbol whose code holds addr, or NULL. */
const char *pp_sym_symbol_at(struct pp_sym_session *s, Dwfl_Module *mod, uint64_t addr, uint64_t *start)
{
    *start = 0;
    sym_index *ix = modidx_get(s, mod);
    if (!ix || ix->n == 0)
        return NULL;
    size_t lo = pp_upper_bound(ix->syms, ix->n, sizeof *ix->syms, offsetof(sym_entry, start), addr);
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
