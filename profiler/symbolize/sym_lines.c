/* sym_lines.c: the line tables of compile units, read from .debug_line
 * into compact per-unit tables.
 *
 * libdw decodes a unit's whole line program into 80 bytes a row and keeps
 * it until the Dwfl ends; a C++ unit full of template instantiations has
 * hundreds of thousands of rows, so a profile that touches every unit of
 * a mid-size program grew the process by tens of megabytes (36 MB for six
 * units and 18 MB of .debug_info). Here the program runs once per unit
 * and keeps 16 bytes a row (address, file, line), merging rows that
 * repeat the previous one's file and line, with the unit's file names:
 * what a lookup and DW_AT_call_file need. Versions 2 to 5 of the format
 * are read; a unit whose table cannot be read here (another form, split
 * or compressed units libdw reads in ways not repeated here) falls back
 * to libdw (sym_resolve.c).
 *
 * File names are built as libdw builds them: an absolute name as it is,
 * otherwise its directory entry, a '/', and the name (in versions before 5
 * directory 0 is the unit's DW_AT_comp_dir). They live until the session's
 * Dwfl ends, as libdw's strings do.
 */
#define _GNU_SOURCE
#include "sym_internal.h"

/* A reader over one section's bytes; `bad` once it ran past the end. */
typedef struct rd {
    const unsigned char *p, *end;
    bool bad;
} rd;

static uint64_t rd_fixed(rd *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->bad = true;
        r->p = r->end;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i); /* little-endian: x86-64, aarch64 */
    r->p += n;
    return v;
}

static uint64_t rd_uleb(rd *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; r->p < r->end; shift += 7) {
        unsigned char b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

static int64_t rd_sleb(rd *r)
{
    int64_t v = 0;
    unsigned shift = 0;
    unsigned char b = 0x80;
    while (r->p < r->end && (b & 0x80)) {
        b = *r->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    }
    if (b & 0x80) {
        r->bad = true;
        return 0;
    }
    if (shift < 64 && (b & 0x40))
        v |= (int64_t)(~(uint64_t)0 << shift);
    return v;
}

static const char *rd_cstr(rd *r)
{
    const unsigned char *s = r->p;
    while (r->p < r->end && *r->p)
        r->p++;
    if (r->p == r->end) {
        r->bad = true;
        return NULL;
    }
    r->p++;
    return (const char *)s;
}

/* A section's bytes by name, NULL when the object has none. */
static const Elf_Data *section(Elf *elf, const char *name)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
        if (!n || strcmp(n, name) != 0)
            continue;
        if (sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED))
            return NULL; /* libdw inflated what it reads; anything else is not ours to inflate */
        Elf_Data *d = elf_getdata(scn, NULL);
        return d && d->d_buf ? d : NULL;
    }
    return NULL;
}

/* The sections a line table's strings may live in. */
typedef struct strsecs {
    const Elf_Data *str, *line_str;
} strsecs;

static const char *str_at(const Elf_Data *d, uint64_t off)
{
    if (!d || off >= d->d_size)
        return NULL;
    const char *s = (const char *)d->d_buf + off;
    return memchr(s, 0, d->d_size - off) ? s : NULL;
}

/* One attribute of a version 5 entry (DW_LNCT_path or
 * DW_LNCT_directory_index) in form `form`; *str or *num. false for a form
 * not read here. */
static bool rd_form(rd *r, unsigned form, bool dwarf64, const strsecs *ss, const char **str, uint64_t *num)
{
    size_t offsz = dwarf64 ? 8 : 4;
    switch (form) {
    case DW_FORM_string: *str = rd_cstr(r); return true;
    case DW_FORM_line_strp: *str = str_at(ss->line_str, rd_fixed(r, offsz)); return true;
    case DW_FORM_strp: *str = str_at(ss->str, rd_fixed(r, offsz)); return true;
    case DW_FORM_udata: *num = rd_uleb(r); return true;
    case DW_FORM_data1: *num = rd_fixed(r, 1); return true;
    case DW_FORM_data2: *num = rd_fixed(r, 2); return true;
    case DW_FORM_data4: *num = rd_fixed(r, 4); return true;
    case DW_FORM_data8: *num = rd_fixed(r, 8); return true;
    case DW_FORM_data16: rd_fixed(r, 8), rd_fixed(r, 8); return true;
    case DW_FORM_block: {
        uint64_t n = rd_uleb(r);
        if (n > (uint64_t)(r->end - r->p))
            r->bad = true, r->p = r->end;
        else
            r->p += n;
        return true;
    }
    default: return false;
    }
}

/* The unit's table under construction. */
typedef struct build {
    cu_lines *t;
    const char **dirs;
    size_t ndirs;
    size_t files_cap, rows_cap;
    bool in_seq; /* the last row is of the sequence being read */
    bool oom;
} build;

/* Adds file `name` in directory entry `dir` (as libdw names it). */
static void add_file(build *b, const char *name, uint64_t dir)
{
    if (b->oom)
        return;
    if (pp_reserve(&b->t->files, &b->files_cap, b->t->nfiles, sizeof *b->t->files)) {
        b->oom = true;
        return;
    }
    char *full = NULL;
    if (name && name[0] != '/' && dir < b->ndirs && b->dirs[dir]) {
        if (asprintf(&full, "%s/%s", b->dirs[dir], name) < 0)
            full = NULL, b->oom = true;
    } else if (name && !(full = strdup(name))) {
        b->oom = true;
    }
    b->t->files[b->t->nfiles++] = full;
}

/* Version 5 entry formats: the content type and form of each field. */
typedef struct entry_fmt {
    unsigned n;
    uint64_t type[8], form[8];
} entry_fmt;

static bool rd_formats(rd *r, entry_fmt *f)
{
    f->n = (unsigned)rd_fixed(r, 1);
    if (f->n > 8)
        return false;
    for (unsigned i = 0; i < f->n; i++) {
        f->type[i] = rd_uleb(r);
        f->form[i] = rd_uleb(r);
    }
    return !r->bad;
}

/* One version 5 directory or file entry: its path and directory index. */
static bool rd_entry(rd *r, const entry_fmt *f, bool dwarf64, const strsecs *ss, const char **path, uint64_t *dir)
{
    *path = NULL;
    *dir = 0;
    for (unsigned i = 0; i < f->n; i++) {
        const char *s = NULL;
        uint64_t v = 0;
        if (!rd_form(r, (unsigned)f->form[i], dwarf64, ss, &s, &v))
            return false;
        if (f->type[i] == DW_LNCT_path)
            *path = s;
        else if (f->type[i] == DW_LNCT_directory_index)
            *dir = v;
    }
    return !r->bad;
}

/* The directory and file tables of a header; r is left at the program. */
static bool rd_tables(rd *r, build *b, unsigned version, bool dwarf64, const strsecs *ss, const char *comp_dir)
{
    if (version >= 5) {
        entry_fmt f;
        if (!rd_formats(r, &f))
            return false;
        uint64_t n = rd_uleb(r);
        if (n > (uint64_t)(r->end - r->p) || !(b->dirs = calloc(n ? n : 1, sizeof *b->dirs)))
            return false;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t unused;
            if (!rd_entry(r, &f, dwarf64, ss, &b->dirs[i], &unused))
                return false;
        }
        b->ndirs = n;
        if (!rd_formats(r, &f))
            return false;
        n = rd_uleb(r);
        for (uint64_t i = 0; i < n && !r->bad; i++) {
            const char *path;
            uint64_t dir;
            if (!rd_entry(r, &f, dwarf64, ss, &path, &dir))
                return false;
            add_file(b, path, dir);
        }
        return !r->bad && !b->oom;
    }
    size_t cap = 0;
    for (;;) { /* directory 0 is the unit's own */
        const char *d = b->ndirs ? rd_cstr(r) : comp_dir;
        if (b->ndirs && (!d || !*d))
            break;
        if (pp_reserve(&b->dirs, &cap, b->ndirs, sizeof *b->dirs))
            return false;
        b->dirs[b->ndirs++] = d;
        if (r->bad)
            return false;
    }
    add_file(b, NULL, 0); /* file 0 is not used before version 5 */
    for (;;) {
        const char *name = rd_cstr(r);
        if (!name || !*name)
            break;
        uint64_t dir = rd_uleb(r);
        rd_uleb(r), rd_uleb(r); /* mtime, length */
        add_file(b, name, dir);
    }
    return !r->bad && !b->oom;
}

/* Adds a row; at the address of the row before it (views), it replaces
 * it: the last row at an address describes its code. */
static void add_row(build *b, uint64_t addr, uint32_t file, uint32_t line, bool end)
{
    cu_lines *t = b->t;
    if (b->oom)
        return;
    if (end)
        file = LINE_END;
    if (t->nrows && b->in_seq) {
        line_row *last = &t->rows[t->nrows - 1];
        if (last->addr == addr) {
            *last = (line_row){addr, file, line};
            b->in_seq = !end;
            return;
        }
        if (!end && last->file == file && last->line == line)
            return; /* the same place as the row before: it covers this one */
    }
    if (pp_reserve(&t->rows, &b->rows_cap, t->nrows, sizeof *t->rows)) {
        b->oom = true;
        return;
    }
    t->rows[t->nrows++] = (line_row){addr, file, line};
    b->in_seq = !end;
}

/* Runs the line program from r->p to r->end. */
static bool run_program(rd *r, build *b, unsigned min_inst, int line_base, unsigned line_range,
                        unsigned opcode_base, const unsigned char *std_lengths)
{
    uint64_t addr = 0;
    uint32_t file = 1, line = 1;
    while (r->p < r->end && !r->bad && !b->oom) {
        unsigned op = *r->p++;
        if (op >= opcode_base) { /* special */
            unsigned adj = op - opcode_base;
            addr += (uint64_t)(adj / line_range) * min_inst;
            line += (uint32_t)(line_base + (int)(adj % line_range));
            add_row(b, addr, file, line, false);
            continue;
        }
        switch (op) {
        case 0: { /* extended */
            uint64_t len = rd_uleb(r);
            if (len == 0 || len > (uint64_t)(r->end - r->p))
                return false;
            const unsigned char *next = r->p + len;
            unsigned sub = *r->p++;
            if (sub == DW_LNE_end_sequence) {
                add_row(b, addr, file, line, true);
                addr = 0, file = 1, line = 1;
            } else if (sub == DW_LNE_set_address) {
                rd sub_r = {r->p, next, false};
                addr = rd_fixed(&sub_r, len - 1 > 8 ? 8 : len - 1);
            }
            r->p = next; /* define_file, set_discriminator and others: skipped */
            break;
        }
        case DW_LNS_copy: add_row(b, addr, file, line, false); break;
        case DW_LNS_advance_pc: addr += rd_uleb(r) * min_inst; break;
        case DW_LNS_advance_line: line += (uint32_t)rd_sleb(r); break;
        case DW_LNS_set_file: file = (uint32_t)rd_uleb(r); break;
        case DW_LNS_const_add_pc: addr += (uint64_t)((255 - opcode_base) / line_range) * min_inst; break;
        case DW_LNS_fixed_advance_pc: addr += rd_fixed(r, 2); break;
        default: /* column, negate_stmt, basic_block, prologue, epilogue, isa, and unknown ones */
            for (unsigned i = 0; i < std_lengths[op - 1]; i++)
                rd_uleb(r);
        }
    }
    return !r->bad && !b->oom;
}

/* Address order; at one address, the end of a sequence before the first
 * row of the next one. */
static int cmp_row(const void *x, const void *y)
{
    const line_row *a = x, *b = y;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return (b->file == LINE_END) - (a->file == LINE_END);
}

/* Reads the unit's table into t; false when it cannot be read here. */
static bool read_unit(Dwarf_Die *cudie, cu_lines *t)
{
    Dwarf_Attribute attr;
    Dwarf_Word off;
    if (dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &attr), &off) != 0)
        return false;
    Dwarf *dw = dwarf_cu_getdwarf(cudie->cu);
    Elf *elf = dw ? dwarf_getelf(dw) : NULL;
    const Elf_Data *lines = elf ? section(elf, ".debug_line") : NULL;
    if (!lines || off >= lines->d_size)
        return false;
    strsecs ss = {section(elf, ".debug_str"), section(elf, ".debug_line_str")};

    rd r = {(const unsigned char *)lines->d_buf + off, (const unsigned char *)lines->d_buf + lines->d_size, false};
    uint64_t len = rd_fixed(&r, 4);
    bool dwarf64 = len == 0xffffffff;
    if (dwarf64)
        len = rd_fixed(&r, 8);
    if (len > (uint64_t)(r.end - r.p))
        return false;
    r.end = r.p + len;
    unsigned version = (unsigned)rd_fixed(&r, 2);
    if (version < 2 || version > 5)
        return false;
    if (version >= 5 && (rd_fixed(&r, 1) != 8 || rd_fixed(&r, 1) != 0)) /* address size, selector size */
        return false;
    uint64_t hlen = rd_fixed(&r, dwarf64 ? 8 : 4);
    if (hlen > (uint64_t)(r.end - r.p))
        return false;
    const unsigned char *program = r.p + hlen;
    unsigned min_inst = (unsigned)rd_fixed(&r, 1);
    if (version >= 4)
        rd_fixed(&r, 1); /* maximum operations per instruction: 1 but on VLIW machines */
    rd_fixed(&r, 1);     /* default_is_stmt */
    int line_base = (int)(signed char)rd_fixed(&r, 1);
    unsigned line_range = (unsigned)rd_fixed(&r, 1);
    unsigned opcode_base = (unsigned)rd_fixed(&r, 1);
    if (r.bad || line_range == 0 || opcode_base == 0 || (size_t)(r.end - r.p) < opcode_base - 1)
        return false;
    const unsigned char *std_lengths = r.p;
    r.p += opcode_base - 1;

    build b = {.t = t};
    const char *comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
    bool ok = rd_tables(&r, &b, version, dwarf64, &ss, comp_dir);
    free(b.dirs);
    if (!ok || program > r.end)
        return false;
    r.p = program;
    if (!run_program(&r, &b, min_inst, line_base, line_range, opcode_base, std_lengths))
        return false;
    bool sorted = true;
    for (size_t i = 1; i < t->nrows && sorted; i++)
        sorted = cmp_row(&t->rows[i - 1], &t->rows[i]) <= 0;
    if (!sorted)
        qsort(t->rows, t->nrows, sizeof *t->rows, cmp_row);
    return true;
}

static void lines_clear(cu_lines *t)
{
    for (size_t i = 0; i < t->nfiles; i++)
        free(t->files[i]);
    free(t->files);
    free(t->rows);
    t->files = NULL;
    t->rows = NULL;
    t->nfiles = t->nrows = 0;
}

const cu_lines *pp_sym_unit_lines(struct pp_sym_session *s, Dwarf_Die *cudie)
{
    uint64_t key = (uint64_t)(uintptr_t)cudie->addr;
    cu_lines *t = pp_table_find(&s->culines, key);
    if (!t) {
        if (!(t = pp_table_add(&s->culines, key)))
            return NULL;
        *t = (cu_lines){.key = key};
        t->ok = read_unit(cudie, t);
        if (!t->ok)
            lines_clear(t);
    }
    return t->ok ? t : NULL;
}

bool pp_sym_unit_line_at(const cu_lines *t, uint64_t pc, const char **file, int *line)
{
    size_t i = pp_upper_bound(t->rows, t->nrows, sizeof *t->rows, offsetof(line_row, addr), pc);
    if (i == 0 || t->rows[i - 1].file == LINE_END)
        return false;
    const line_row *row = &t->rows[i - 1];
    *file = pp_sym_unit_file(t, row->file);
    *line = (int)row->line;
    return *file != NULL;
}

const char *pp_sym_unit_file(const cu_lines *t, uint64_t index)
{
    return index < t->nfiles ? t->files[index] : NULL;
}

void pp_sym_unit_lines_free(struct pp_sym_session *s)
{
    for (size_t i = 0; i < pp_table_count(&s->culines); i++)
        lines_clear(pp_table_at(&s->culines, i));
    pp_table_free(&s->culines);
}
