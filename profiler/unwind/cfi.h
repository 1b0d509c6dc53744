/* cfi.h: DWARF call-frame information (x86-64, arm64), read in a signal handler.
 *
 * Everything here reads only bytes inside the bounds the caller gives (the
 * .eh_frame_hdr's size and the loaded segment that holds .eh_frame) and
 * inside the lengths the records state: damaged or hostile tables make a
 * lookup fail, never a read outside them. No locks, no allocation, no
 * TLS; all of it is async-signal-safe.
 */
#ifndef PP_CFI_H
#define PP_CFI_H
#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h" /* PP_CFI_REGS, PP_REG_SP, PP_REG_FP, PP_REG_RA, PP_REG_PC */

enum { PP_RULE_SAME, PP_RULE_UNDEF, PP_RULE_OFFSET, PP_RULE_VAL_OFFSET, PP_RULE_REG,
       PP_RULE_EXPR, PP_RULE_VAL_EXPR };

typedef struct pp_cfi_rule {
    uint8_t kind;
    int64_t off;             /* OFFSET / VAL_OFFSET: from the CFA; REG: register number;
                                EXPR / VAL_EXPR: the expression's size, prefix included */
    const uint8_t *expr;     /* EXPR / VAL_EXPR: length-prefixed (uleb) expression */
} pp_cfi_rule;

/* How to find the caller's registers at one address. */
typedef struct pp_cfi_row {
    int cfa_reg;             /* CFA = reg + cfa_off, unless cfa_expr */
    int64_t cfa_off;
    const uint8_t *cfa_expr; /* length-prefixed expression, or NULL */
    size_t cfa_expr_len;     /* its size, prefix included */
    pp_cfi_rule r[PP_CFI_REGS];
} pp_cfi_row;

/* An object's .eh_frame_hdr binary-search table. */
typedef struct pp_cfi_table {
    uintptr_t hdr;           /* address of .eh_frame_hdr (datarel base) */
    const int32_t *table;    /* pairs (initial_loc, fde), relative to hdr, sorted */
    size_t count;
    uintptr_t lo, hi;        /* where FDEs and CIEs may be read */
} pp_cfi_table;

/* Parses an .eh_frame_hdr of hdr_len bytes whose FDEs and CIEs lie in
 * [lo, hi) (the loaded segment that holds .eh_frame); returns 0 when it
 * has no usable table. async-signal-safe */
int pp_cfi_table_init(pp_cfi_table *t, const uint8_t *hdr, size_t hdr_len, uintptr_t lo, uintptr_t hi);

/* The row for `pc` (already adjusted into the call instruction for caller
 * frames). Returns 1 when an FDE covers pc, 0 otherwise. */
int pp_cfi_find(const pp_cfi_table *t, uintptr_t pc, pp_cfi_row *row);

/* Evaluates a DWARF expression (length-prefixed, `len` bytes with the
 * prefix) over `regs` (values of registers 0 to PP_CFI_REGS - 1), pushing `initial` first
 * when push_initial. Memory reads go through read(addr, &value), which
 * returns 0 for an address it refuses. Returns 1 and the result, or 0 for
 * an expression it cannot evaluate or that does not fit in len.
 * async-signal-safe */
int pp_cfi_eval(const uint8_t *expr, size_t len, const uint64_t *regs, int push_initial, uint64_t initial,
                int (*read)(void *ctx, uint64_t addr, uint64_t *value), void *ctx, uint64_t *out);
#endif
