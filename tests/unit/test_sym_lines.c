/* test_sym_lines.c: the symbolizer's own line tables (sym_lines.c)
 * against libdw's, over every compile unit of this program (libpprof's
 * own sources among them: DWARF 5 from gcc, many files per unit).
 * test-labels: quick
 *
 * For every row libdw decodes, at its address and one byte after it, the
 * compact table must give the file and line libdw gives (where several
 * rows share an address, one of theirs), or nothing where libdw's
 * sequence has ended; each unit's file table must name libdw's files; and
 * the compact table must be at most a fifth of libdw's 80 bytes a row.
 * `test_sym_lines FILE` checks another file's units the same way.
 */
#define _GNU_SOURCE
#include "sym_internal.h"
#include "check.h"

/* Whether (file, line), or nothing when !found, is what libdw answers for
 * pc (dwarf_getsrc_die), or one of the rows at the address of its answer
 * (libdw picks any of them). Where a sequence ends at the address of its
 * last row (an empty range), libdw answers that row for the end address
 * and past it; the compact table answers nothing there, which is also
 * accepted. */
static bool libdw_agrees(Dwarf_Die *cu, Dwarf_Lines *lines, size_t n, Dwarf_Addr pc, const char *file, int line,
                         bool found)
{
    Dwarf_Line *want = dwarf_getsrc_die(cu, pc);
    if (!want)
        return !found;
    Dwarf_Addr at;
    dwarf_lineaddr(want, &at);
    for (size_t i = 0; i < n && !found; i++) {
        Dwarf_Addr a;
        bool end;
        dwarf_lineaddr(dwarf_onesrcline(lines, i), &a);
        if (a == at && dwarf_lineendsequence(dwarf_onesrcline(lines, i), &end) == 0 && end)
            return true;
    }
    for (size_t i = 0; i < n; i++) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr a;
        bool end;
        int ln;
        dwarf_lineaddr(l, &a);
        dwarf_lineendsequence(l, &end);
        const char *f = a == at && !end ? dwarf_linesrc(l, NULL, NULL) : NULL;
        if (f && file && !strcmp(f, file) && dwarf_lineno(l, &ln) == 0 && ln == line)
            return true;
    }
    return false;
}

/* With an argument, the units of that file instead (bench/bigsym). */
int main(int argc, char **argv)
{
    int fd = open(argc > 1 ? argv[1] : "/proc/self/exe", O_RDONLY | O_CLOEXEC);
    Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
    CHECK(dw != NULL);
    if (!dw)
        return check_summary("test_sym_lines");
    struct pp_sym_session s = SESSION_INIT;
    size_t units = 0, rows = 0, queries = 0, wrong = 0, ours = 0, files = 0, files_wrong = 0;
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        Dwarf_Lines *lines;
        size_t n;
        if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_getsrclines(&cu, &lines, &n) == 0 && n > 0) {
            const cu_lines *t = pp_sym_unit_lines(&s, &cu);
            CHECKF(t != NULL, "unit at %#llx: no compact table", (unsigned long long)off);
            if (t) {
                units++;
                rows += n;
                ours += t->nrows;
                for (size_t i = 0; i < n; i++) {
                    Dwarf_Addr a;
                    dwarf_lineaddr(dwarf_onesrcline(lines, i), &a);
                    for (Dwarf_Addr pc = a; pc <= a + 1; pc++) {
                        const char *file = NULL;
                        int line = 0;
                        bool found = pp_sym_unit_line_at(t, pc, &file, &line);
                        queries++;
                        if (!libdw_agrees(&cu, lines, n, pc, file, line, found) && wrong++ < 5)
                            printf("  %#llx: ours %s:%d%s\n", (unsigned long long)pc, file ? file : "-", line,
                                   found ? "" : " (none)");
                    }
                }
                Dwarf_Files *fs;
                size_t nf;
                if (dwarf_getsrcfiles(&cu, &fs, &nf) == 0)
                    for (size_t i = 1; i < nf; i++, files++) {
                        const char *theirs = dwarf_filesrc(fs, i, NULL, NULL), *mine = pp_sym_unit_file(t, i);
                        if ((!theirs) != (!mine) || (theirs && strcmp(theirs, mine)))
                            files_wrong++;
                    }
            }
        }
        off = next;
    }
    printf("%zu units, %zu libdw rows (%.1f MB), %zu compact rows (%.1f MB), %zu lookups, %zu files\n", units, rows,
           rows * 80 / 1e6, ours, ours * sizeof(line_row) / 1e6, queries, files);
    CHECK(argc > 1 || (units >= 20 && rows > 10000));
    CHECKF(wrong == 0, "%zu of %zu lookups differ from libdw", wrong, queries);
    CHECKF(files_wrong == 0, "%zu of %zu file names differ from libdw", files_wrong, files);
    CHECKF(ours * sizeof(line_row) * 5 <= rows * 80, "compact rows %zu against libdw's %zu", ours, rows);
    pp_sym_unit_lines_free(&s);
    dwarf_end(dw);
    close(fd);
    return check_summary("test_sym_lines");
}
