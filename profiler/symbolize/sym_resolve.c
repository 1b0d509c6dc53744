/* sym_resolve.c: one address -> its frames: function, file and line,
 * and the chain of inlined calls from DWARF. */
#define _GNU_SOURCE
#include "sym_internal.h"

int pp_sym_find_mapping(const struct pp_sym_session *s, uint64_t addr)
{
    size_t lo = pp_upper_bound(s->maps, s->nmaps, sizeof *s->maps, offsetof(pp_sym_mapping, limit), addr);
    if (lo < s->nmaps && s->maps[lo].start <= addr && addr < s->maps[lo].limit)
        return (int)lo;
    return -1;
}

/* Raw name of a subprogram or inlined-subroutine DIE: the linkage name when
 * there is one (C++), else DW_AT_name, following abstract origins and
 * specifications. */
static const char *die_raw_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
    return n;
}

/* The caller's position recorded on an inlined-subroutine DIE; file names
 * from the unit's table `t` (sym_lines.c), or libdw's when it is NULL. */
static void call_site(const cu_lines *t, Dwarf_Die *inl, const char **file, int *line)
{
    Dwarf_Attribute attr;
    Dwarf_Word v;
    *file = NULL;
    *line = 0;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &v) == 0)
        *line = (int)v;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &v) == 0) {
        if (t) {
            *file = pp_sym_unit_file(t, v);
            return;
        }
        Dwarf_Die cu;
        Dwarf_Files *files;
        size_t nfiles;
        if (dwarf_diecu(inl, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
            v < nfiles)
            *file = dwarf_filesrc(files, v, NULL, NULL);
    }
}

static void set_frame(struct pp_sym_session *s, pp_sym_frame *f, const char *raw,
                      const char *file, int line)
{
    f->system_name = raw;
    f->function = pp_sym_demangle(s, raw);
    f->filename = file;
    f->line = line;
    f->entry = 0;
}

/* Functions of one compile unit by address. dwarf_getscopes walks every
 * top-level DIE of the unit on each call (60 us per address in a unit that
 * includes a few system headers) and does not look inside C++ namespaces;
 * this index is built once per unit and searched by bisection. */
static int cmp_fn_range(const void *x, const void *y)
{
    const fn_range *a = x, *b = y;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    /* Enclosing range first, so bisection lands on the innermost. */
    return a->hi > b->hi ? -1 : a->hi < b->hi;
}

typedef struct fn_vec {
    fn_range *r;
    size_t n, cap;
    bool ok;
} fn_vec;

/* Collects the subprograms with code under parent, looking inside
 * namespaces and, when `types`, inside classes, structures and unions.
 * Compilers place a member function's concrete DIE (the one with code and
 * DW_AT_specification) at namespace or unit level, not inside its class,
 * whose DIE holds only declarations; and in a big C++ unit the classes are
 * most of the unit (millions of member and declaration entries), so they
 * are skipped over through their DW_AT_sibling unless the shallow pass did
 * not find the address. */
static void collect_functions(Dwarf_Die *parent, fn_vec *v, bool types, int depth)
{
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0)
        return;
    do {
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_subprogram) {
            Dwarf_Addr base, lo, hi;
            ptrdiff_t off = 0;
            while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
                if (hi <= lo)
                    continue;
                if (pp_reserve(&v->r, &v->cap, v->n, sizeof *v->r) < 0) {
                    v->ok = false;
                    return;
                }
                v->r[v->n++] = (fn_range){lo, hi, child};
            }
        } else if ((tag == DW_TAG_namespace || tag == DW_TAG_module ||
                    (types && (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                               tag == DW_TAG_union_type))) &&
                   depth < 32) {
            collect_functions(&child, v, types, depth + 1);
        }
    } while (dwarf_siblingof(&child, &child) == 0);
}

/* The unit's function index, shallow or (`types`) with the functions
 * found inside types; a deep index replaces a shallow one. */
static cu_index *cuidx_get(struct pp_sym_session *s, Dwarf_Die *cudie, bool types)
{
    uint64_t key = (uint64_t)(uintptr_t)cudie->addr; /* where the unit's DIE lives: unique */
    cu_index *e = pp_table_find(&s->cuidx, key);
    if (e && (e->deep || !types))
        return e;
    fn_vec v = {NULL, 0, 0, true};
    collect_functions(cudie, &v, types, 0);
    if (!v.ok || (!e && (e = pp_table_add(&s->cuidx, key)) == NULL)) {
        free(v.r);
        return NULL;
    }
    if (v.n > 1)
        qsort(v.r, v.n, sizeof *v.r, cmp_fn_range);
    free(e->r);
    *e = (cu_index){key, v.r, v.n, types};
    return e;
}

static bool find_range(const cu_index *ix, Dwarf_Addr pc, Dwarf_Die *out)
{
    size_t lo = pp_upper_bound(ix->r, ix->n, sizeof *ix->r, offsetof(fn_range, lo), pc);
    PP_ASSERT(lo <= ix->n);
    for (size_t k = 0; k < 8 && lo > 0; k++, lo--) {
        if (pc < ix->r[lo - 1].hi) {
            *out = ix->r[lo - 1].die;
            return true;
        }
    }
    return false;
}

/* The subprogram DIE (with code) of the unit that holds pc. */
static bool function_die(struct pp_sym_session *s, Dwarf_Die *cudie, Dwarf_Addr pc,
                         Dwarf_Die *out)
{
    cu_index *ix = cuidx_get(s, cudie, false);
    if (ix && find_range(ix, pc, out))
        return true;
    if (ix && ix->deep)
        return false;
    ix = cuidx_get(s, cudie, true);
    return ix && find_range(ix, pc, out);
}

/* The inlined-subroutine DIEs inside fn that contain pc, outermost first,
 * found by descending through the scopes that contain pc. */
static int inlined_chain(Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die out[MAX_NESTING])
{
    int n = 0;
    Dwarf_Die cur = *fn;
    for (int depth = 0; depth < 256; depth++) {
        Dwarf_Die child;
        bool found = false;
        int tag = 0;
        if (dwarf_child(&cur, &child) == 0) {
            do {
                tag = dwarf_tag(&child);
                if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
                     tag == DW_TAG_try_block || tag == DW_TAG_catch_block) &&
                    dwarf_haspc(&child, pc) == 1) {
                    found = true;
                    break;
                }
            } while (dwarf_siblingof(&child, &child) == 0);
        }
        if (!found)
            break;
        if (tag == DW_TAG_inlined_subroutine) {
            if (n == MAX_NESTING) { /* keep the innermost */
                memmove(out, out + 1, (MAX_NESTING - 1) * sizeof *out);
                n--;
            }
            out[n++] = child;
        }
        cur = child;
    }
    return n;
}

/* The loader's own symbol table (exported symbols only, with their sizes)
 * names functions of objects whose file libdwfl could not open, such as a
 * library deleted since it was loaded when /proc/self/map_files is closed
 * to unprivileged processes. The name is copied: the object may be
 * unloaded before the cache is dropped.
 *
 * It is asked only where it can add a name (see loader_can_name): dladdr
 * takes the loader's lock, which a program that loads and unloads
 * libraries in a loop holds nearly all the time; a profile of such a
 * program once waited seconds per address for it. */
static const char *loader_symbol(struct pp_sym_session *s, uint64_t addr)
{
    /* dladdr1 points into the object's own tables, which another thread
     * may unmap at any moment: copy through the kernel, which fails with
     * EFAULT where a load would crash. */
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1((void *)(uintptr_t)addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !info.dli_sname ||
        !info.dli_saddr || !sym)
        return NULL;
    ElfW(Sym) copy;
    char name[512];
    struct iovec l1 = {&copy, sizeof copy}, r1 = {(void *)sym, sizeof copy};
    struct iovec l2 = {name, sizeof name - 1}, r2 = {(void *)info.dli_sname, sizeof name - 1};
    if (process_vm_readv(getpid(), &l1, 1, &r1, 1, 0) != (ssize_t)sizeof copy)
        return NULL;
    /* The name may end less than a buffer before an unmapped page: read
     * the part up to the page end first. */
    size_t to_page_end = 4096 - ((uintptr_t)info.dli_sname & 4095);
    if (to_page_end < r2.iov_len)
        r2.iov_len = l2.iov_len = to_page_end;
    ssize_t got = process_vm_readv(getpid(), &l2, 1, &r2, 1, 0);
    if (got <= 0)
        return NULL;
    name[got] = 0;
    uint64_t start = (uint64_t)(uintptr_t)info.dli_saddr;
    if (addr < start || addr - start >= copy.st_size || strlen(name) == (size_t)got)
        return NULL; /* no symbol there, or a name longer than we read */
    return pp_arena_strdup(&s->cache_arena, name);
}

/* The compile unit that covers addr. libdw finds it through
 * .debug_aranges, which clang does not emit unless asked
 * (-gdwarf-aranges); without them the units' own address ranges are
 * looked at, one unit after another. */
static Dwarf_Die *unit_of(Dwfl_Module *mod, uint64_t addr, Dwarf_Addr *bias)
{
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
    for (Dwarf_Die *it = NULL; !cu && (it = dwfl_module_nextcu(mod, it, bias)) != NULL;)
        if (dwarf_haspc(it, addr - *bias) == 1)
            cu = it;
    return cu;
}

/* Whether the loader may name addr where libdwfl did not: an address in no
 * module that this batch's /proc/self/maps still shows mapped (an object
 * libdwfl did not report), or one in a module whose symbol tables could
 * not be read. The loader's tables are a subset of what libdwfl reads
 * from the file, and an object that was not mapped when the batch began
 * has been unloaded (or is another object by now). */
static int loader_can_name(struct pp_sym_session *s, Dwfl_Module *mod, uint64_t addr)
{
    return mod ? !pp_sym_module_has_symbols(s, mod) : pp_sym_find_mapping(s, addr) >= 0;
}

/* Resolves addr into frames[], innermost first; returns the count. */
int pp_sym_resolve(struct pp_sym_session *s, uint64_t addr, int functions_only, pp_sym_frame *frames)
{
    Dwfl_Module *mod = s->dwfl ? dwfl_addrmodule(s->dwfl, addr) : NULL;
    if (!mod) {
        const char *name = loader_can_name(s, NULL, addr) ? loader_symbol(s, addr) : NULL;
        if (!name)
            return 0;
        set_frame(s, &frames[0], name, NULL, 0);
        return 1;
    }

    uint64_t entry;
    const char *symname = pp_sym_symbol_at(s, mod, addr, &entry);
    if (!functions_only && !pp_sym_module_dwarf(s, mod))
        functions_only = 1; /* its debug sections would inflate past the budget */
    pp_sym_pages_note(s, mod, !functions_only);
    if (functions_only) { /* the symbol tables only: no DWARF is read */
        const char *raw = symname ? symname : loader_can_name(s, mod, addr) ? loader_symbol(s, addr) : NULL;
        if (!raw)
            return 0;
        set_frame(s, &frames[0], raw, NULL, 0);
        frames[0].entry = symname ? entry : 0;
        return 1;
    }

    const char *file = NULL;
    int line = 0;
    Dwarf_Addr bias;
    Dwarf_Die *cudie = unit_of(mod, addr, &bias);
    /* The unit's compact table (sym_lines.c), else libdw's, which keeps 80
     * bytes for every row of the unit. */
    const cu_lines *lines = cudie ? pp_sym_unit_lines(s, cudie) : NULL;
    Dwfl_Line *dl;
    if (lines) {
        pp_sym_unit_line_at(lines, addr - bias, &file, &line);
    } else if ((dl = dwfl_module_getsrc(mod, addr)) != NULL) {
        file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);
    } else if (cudie) { /* no .debug_aranges: the unit's own line table */
        Dwarf_Line *l = dwarf_getsrc_die(cudie, addr - bias);
        if (l && (file = dwarf_linesrc(l, NULL, NULL)) != NULL)
            dwarf_lineno(l, &line);
    }
    if (!file)
        line = 0;

    int n = 0;
    const char *outer_die_name = NULL;
    Dwarf_Die fn;
    if (cudie && function_die(s, cudie, addr - bias, &fn)) {
        outer_die_name = die_raw_name(&fn);
        Dwarf_Die inl[MAX_NESTING];
        int ninl = inlined_chain(&fn, addr - bias, inl);
        /* Innermost first; keep the innermost frames and always leave
         * room for the out-of-line function. */
        for (int i = ninl - 1; i >= 0; i--) {
            if (n < PP_SYM_MAX_INLINE - 1)
                set_frame(s, &frames[n++], die_raw_name(&inl[i]), file, line);
            call_site(lines, &inl[i], &file, &line);
        }
    }

    const char *raw = symname ? symname : outer_die_name;
    if (raw == NULL && n == 0 && loader_can_name(s, mod, addr))
        raw = loader_symbol(s, addr);
    if (raw == NULL && file == NULL && n == 0)
        return 0;
    set_frame(s, &frames[n++], raw, file, line);
    for (int i = 0; i < n; i++) /* inlined frames are in the same physical function */
        frames[i].entry = symname ? entry : 0;
    return n;
}
