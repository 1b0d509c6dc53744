/* test_cfi.c: the CFI parser reads nothing outside its bounds.
 * test-labels: quick
 *
 * Real tables first: the executable's and libc's .eh_frame_hdr give a
 * table, and the FDEs of main and of the middle of libc's code are found. Then damaged ones,
 * copied into heap blocks of their exact size so that AddressSanitizer
 * (this test runs in the ASan build too) catches any read past them: the
 * inputs the hardening issue found (a 1-byte expression announcing 10
 * bytes; an 8-byte header with a table that is not there), and 20,000
 * copies of the executable's unwind segment with random bytes changed,
 * each searched for random addresses and every expression of every row
 * found evaluated; and random expressions. Every lookup must end with a
 * row or a refusal, never a read outside the copy.
 */
#define _GNU_SOURCE
#include "pprof.h"
#include "check.h"
#include "cfi.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct seg {
    const uint8_t *hdr;
    size_t hdr_len;
    uintptr_t lo, hi;     /* the loaded segment that holds the tables */
    uintptr_t text_lo, text_hi;
    int found;
} seg;

static seg exe, libc;

static int find_tables(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    seg *s = NULL;
    if (!info->dlpi_name[0] && !exe.found)
        s = &exe;
    else if (strstr(info->dlpi_name, "libc.so"))
        s = &libc;
    if (!s)
        return 0;
    const ElfW(Phdr) *eh = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = &info->dlpi_phdr[i];
    for (int i = 0; eh && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (ph->p_flags & PF_X) {
            s->text_lo = info->dlpi_addr + ph->p_vaddr;
            s->text_hi = s->text_lo + ph->p_memsz;
        }
        if (eh->p_vaddr >= ph->p_vaddr && eh->p_vaddr < ph->p_vaddr + ph->p_memsz) {
            s->hdr = (const uint8_t *)(info->dlpi_addr + eh->p_vaddr);
            s->hdr_len = eh->p_memsz;
            s->lo = info->dlpi_addr + ph->p_vaddr;
            s->hi = s->lo + ph->p_memsz;
            s->found = 1;
        }
    }
    return 0;
}

static int refuse(void *ctx, uint64_t addr, uint64_t *value)
{
    (void)ctx;
    (void)addr;
    *value = 0;
    return 0;
}

/* Evaluates every expression of a row; the results do not matter. */
static void eval_row(const pp_cfi_row *row)
{
    uint64_t regs[PP_CFI_REGS] = {0}, v;
    if (row->cfa_expr)
        pp_cfi_eval(row->cfa_expr, row->cfa_expr_len, regs, 0, 0, refuse, NULL, &v);
    for (int i = 0; i < PP_CFI_REGS; i++)
        if (row->r[i].kind == PP_RULE_EXPR || row->r[i].kind == PP_RULE_VAL_EXPR)
            pp_cfi_eval(row->r[i].expr, (size_t)row->r[i].off, regs, 1, 0, refuse, NULL, &v);
}

/* Copies a loaded segment, whose constants carry AddressSanitizer's
 * redzones, without the copy itself being checked. */
__attribute__((no_sanitize_address)) static void raw_copy(uint8_t *dst, uintptr_t src, size_t n)
{
    const volatile uint8_t *s = (const volatile uint8_t *)src;
    for (size_t i = 0; i < n; i++)
        dst[i] = s[i];
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void)
{
    dl_iterate_phdr(find_tables, NULL);
    CHECK(exe.found && libc.found);
    pp_cfi_table t;
    pp_cfi_row row;
    CHECK(pp_cfi_table_init(&t, exe.hdr, exe.hdr_len, exe.lo, exe.hi) == 1);
    CHECK(pp_cfi_find(&t, (uintptr_t)main + 1, &row) == 1);
    CHECK(pp_cfi_table_init(&t, libc.hdr, libc.hdr_len, libc.lo, libc.hi) == 1);
    CHECK(pp_cfi_find(&t, libc.text_lo + (libc.text_hi - libc.text_lo) / 2, &row) == 1);
    /* bounds that leave the tables out find nothing */
    CHECK(pp_cfi_table_init(&t, exe.hdr, 4, exe.lo, exe.hi) == 0);
    CHECK(pp_cfi_table_init(&t, exe.hdr, exe.hdr_len, exe.lo, exe.lo + 1) == 1 &&
          pp_cfi_find(&t, (uintptr_t)main + 1, &row) == 0);

    /* the inputs, in blocks of their exact size */
    uint8_t *e = malloc(1);
    e[0] = 0x0a;
    uint64_t regs[PP_CFI_REGS] = {0}, v;
    CHECK(pp_cfi_eval(e, 1, regs, 0, 0, refuse, NULL, &v) == 0);
    free(e);
    static const uint8_t bad_hdr[] = {0x2e, 0xf7, 0x00, 0x08, 0x01, 0x31, 0x32, 0x3b};
    uint8_t *h = malloc(sizeof bad_hdr);
    memcpy(h, bad_hdr, sizeof bad_hdr);
    if (pp_cfi_table_init(&t, h, sizeof bad_hdr, (uintptr_t)h, (uintptr_t)h + sizeof bad_hdr))
        pp_cfi_find(&t, (uintptr_t)h + 4, &row);
    free(h);

    /* damaged copies of the executable's unwind segment */
    size_t seglen = exe.hi - exe.lo, hdr_off = (uintptr_t)exe.hdr - exe.lo;
    uint8_t *copy = malloc(seglen), *pristine = malloc(seglen);
    raw_copy(pristine, exe.lo, seglen);
    int rows = 0, refused = 0;
    for (int i = 0; i < 20000; i++) {
        memcpy(copy, pristine, seglen);
        int flips = 1 + (int)(next() % 8);
        for (int k = 0; k < flips; k++) {
            /* mostly the header and the tables right after it */
            size_t span = seglen - hdr_off, at = k % 2 ? hdr_off + next() % (span < 4096 ? span : 4096)
                                                        : hdr_off + next() % span;
            copy[at] = (uint8_t)next();
        }
        if (!pp_cfi_table_init(&t, copy + hdr_off, exe.hdr_len, (uintptr_t)copy, (uintptr_t)copy + seglen)) {
            refused++;
            continue;
        }
        for (int k = 0; k < 16; k++) {
            /* an address of the copy's text, as the tables see it */
            uintptr_t pc = (uintptr_t)copy + hdr_off + (exe.text_lo - (uintptr_t)exe.hdr) +
                           next() % (exe.text_hi - exe.text_lo);
            if (pp_cfi_find(&t, pc, &row)) {
                rows++;
                eval_row(&row);
            } else {
                refused++;
            }
        }
    }
    free(copy);
    free(pristine);
    printf("damaged tables: %d rows found, %d lookups refused\n", rows, refused);
    CHECK(rows > 1000); /* most single flips leave most FDEs intact */

    /* random expressions */
    for (int i = 0; i < 20000; i++) {
        size_t len = 1 + next() % 24;
        uint8_t *x = malloc(len);
        for (size_t k = 0; k < len; k++)
            x[k] = (uint8_t)next();
        if (next() % 2)
            x[0] = (uint8_t)(next() % (len + 4)); /* a length near the real one */
        pp_cfi_eval(x, len, regs, (int)(next() % 2), 0, refuse, NULL, &v);
        free(x);
    }
    return check_summary("test_cfi");
}
