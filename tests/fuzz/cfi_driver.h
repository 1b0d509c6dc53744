/* cfi_driver.h: the body of the CFI fuzz target, over the cfi.c that the
 * including file compiled against: fuzz_cfi.c's, with this machine's
 * register rules, and cfi_aarch64.c's, with arm64's on any machine.
 * The first byte picks what the rest is (see fuzz_cfi.c).
 */
#ifndef PP_FUZZ_CFI_DRIVER_H
#define PP_FUZZ_CFI_DRIVER_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    uintptr_t lo, hi;
} span;

/* Reads 8 bytes at addr when they lie inside the span. */
static int read_span(void *ctx, uint64_t addr, uint64_t *value)
{
    const span *s = ctx;
    if (addr < s->lo || addr > s->hi || s->hi - addr < 8)
        return 0;
    memcpy(value, (const void *)(uintptr_t)addr, 8);
    return 1;
}

static void eval_row(const pp_cfi_row *row, span *s)
{
    uint64_t regs[PP_CFI_REGS], v;
    for (int i = 0; i < PP_CFI_REGS; i++)
        regs[i] = s->lo + (uint64_t)i * 8;
    if (row->cfa_expr)
        pp_cfi_eval(row->cfa_expr, row->cfa_expr_len, regs, 0, 0, read_span, s, &v);
    for (int i = 0; i < PP_CFI_REGS; i++)
        if (row->r[i].kind == PP_RULE_EXPR || row->r[i].kind == PP_RULE_VAL_EXPR)
            pp_cfi_eval(row->r[i].expr, (size_t)row->r[i].off, regs, 1, s->lo, read_span, s, &v);
}

static void fuzz_cfi_run(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    uint8_t mode = data[0];
    size_t n = size - 1;
    uint8_t *copy = malloc(n);
    if (!copy)
        return;
    memcpy(copy, data + 1, n);
    span s = {(uintptr_t)copy, (uintptr_t)copy + n};
    if (mode & 1) {
        uint64_t regs[PP_CFI_REGS] = {0}, v;
        pp_cfi_eval(copy, n, regs, mode & 2, 0, read_span, &s, &v);
    } else {
        size_t hdr_len = (size_t)(mode >> 1) * 16;
        pp_cfi_table t;
        pp_cfi_row row;
        if (pp_cfi_table_init(&t, copy, hdr_len < n ? hdr_len : n, s.lo, s.hi)) {
            static const int delta[] = {-1, 0, 1, 7, 64};
            for (size_t i = 0; i < t.count && i < 64; i++)
                for (size_t k = 0; k < sizeof delta / sizeof *delta; k++)
                    if (pp_cfi_find(&t, t.hdr + (uintptr_t)(intptr_t)t.table[2 * i] + (uintptr_t)(intptr_t)delta[k],
                                    &row))
                        eval_row(&row, &s);
        }
    }
    free(copy);
}
#endif
