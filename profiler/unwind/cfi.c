/* cfi.c: DWARF call-frame information (.eh_frame) for x86-64.
 *
 * Finds the FDE for an address through the object's .eh_frame_hdr binary
 * search table, then runs the CIE's initial instructions and the FDE's
 * instructions up to the address, giving the rule for the CFA and for each
 * register (DWARF 5 section 6.4, with the .eh_frame encodings of the LSB).
 * It is the stack walker's only source of truth for frames without frame
 * pointers, which is most of Debian's libraries.
 *
 * Everything here is async-signal-safe: it reads the object's mapped
 * tables only, keeps its state on the stack, and gives up (returns 0) on
 * anything it does not understand instead of guessing.
 */
#include "cfi.h"

#include <string.h>

#define STATE_DEPTH 2 /* remember_state nesting; deeper gives up (keeps handler stacks small) */

static uint64_t uleb(const uint8_t **p) /* async-signal-safe */
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    return v;
}

static int64_t sleb(const uint8_t **p) /* async-signal-safe */
{
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = *(*p)++;
        if (shift < 64)
            v |= (int64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

/* A pointer in DW_EH_PE encoding `enc` (pcrel and datarel supported).
 * Returns 0 for an encoding it does not know. async-signal-safe */
static int encoded(const uint8_t **p, uint8_t enc, uintptr_t datarel, uintptr_t *out)
{
    const uint8_t *at = *p;
    uint64_t v;
    if (enc == 0xff)
        return 0;
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: memcpy(&v, at, 8); *p += 8; break;
    case 0x01: v = uleb(p); break;
    case 0x02: { uint16_t x; memcpy(&x, at, 2); *p += 2; v = x; break; }
    case 0x03: { uint32_t x; memcpy(&x, at, 4); *p += 4; v = x; break; }
    case 0x09: v = (uint64_t)sleb(p); break;
    case 0x0a: { int16_t x; memcpy(&x, at, 2); *p += 2; v = (uint64_t)(int64_t)x; break; }
    case 0x0b: { int32_t x; memcpy(&x, at, 4); *p += 4; v = (uint64_t)(int64_t)x; break; }
    default: return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += (uintptr_t)at; break;
    case 0x30: v += datarel; break;
    default: return 0;
    }
    *out = (uintptr_t)v;
    return 1;
}

int pp_cfi_table_init(pp_cfi_table *t, const uint8_t *hdr)
{
    /* version 1; the table must be datarel|sdata4 pairs */
    if (hdr[0] != 1 || hdr[3] != 0x3b)
        return 0;
    const uint8_t *p = hdr + 4;
    uintptr_t eh_frame, count;
    if (!encoded(&p, hdr[1], (uintptr_t)hdr, &eh_frame) || !encoded(&p, hdr[2], (uintptr_t)hdr, &count))
        return 0;
    t->hdr = (uintptr_t)hdr;
    t->table = (const int32_t *)p;
    t->count = count;
    return count > 0;
}

typedef struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int has_z;
    const uint8_t *insns, *end;
} cie;

/* async-signal-safe */
static int parse_cie(const uint8_t *p, cie *c)
{
    uint32_t len;
    memcpy(&len, p, 4);
    if (len == 0 || len == 0xffffffffu)
        return 0;
    const uint8_t *end = p + 4 + len;
    p += 8; /* length, CIE id */
    uint8_t version = *p++;
    const char *aug = (const char *)p;
    size_t alen = strnlen(aug, 8);
    if (alen == 8)
        return 0;
    p += alen + 1;
    if (aug[0] == 'e' && aug[1] == 'h')
        return 0;
    c->code_align = uleb(&p);
    c->data_align = sleb(&p);
    c->ra_reg = version == 1 ? *p++ : uleb(&p);
    c->fde_enc = 0;
    c->has_z = aug[0] == 'z';
    if (c->has_z) {
        uint64_t dlen = uleb(&p);
        const uint8_t *data = p;
        for (size_t i = 1; i < alen; i++) {
            switch (aug[i]) {
            case 'R': c->fde_enc = *data++; break;
            case 'L': data++; break;
            case 'P': {
                uint8_t penc = *data++;
                uintptr_t ignored;
                if (!encoded(&data, penc & 0x7f, 0, &ignored))
                    return 0;
                break;
            }
            case 'S': case 'B': break;
            default: return 0;
            }
        }
        p += dlen;
    }
    c->insns = p;
    c->end = end;
    return c->ra_reg == PP_REG_RA;
}

/* Runs CFA instructions [p, end) up to `pc`. `initial` is the row after the
 * CIE's instructions (for DW_CFA_restore), NULL while running those.
 * Returns 0 on an instruction it does not know. async-signal-safe */
static int run(const uint8_t *p, const uint8_t *end, const cie *c, uintptr_t loc, uintptr_t pc,
               pp_cfi_row *row, const pp_cfi_row *initial)
{
    pp_cfi_row stack[STATE_DEPTH];
    int depth = 0;
    while (p < end && loc <= pc) {
        uint8_t op = *p++;
        uint64_t reg = 0;
        int64_t off;
        switch (op >> 6) {
        case 1: /* advance_loc */
            loc += (op & 0x3f) * c->code_align;
            continue;
        case 2: /* offset */
            reg = op & 0x3f;
            off = (int64_t)uleb(&p) * c->data_align;
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_OFFSET, off, NULL};
            continue;
        case 3: /* restore */
            reg = op & 0x3f;
            if (reg < PP_CFI_REGS)
                row->r[reg] = initial ? initial->r[reg] : (pp_cfi_rule){PP_RULE_SAME, 0, NULL};
            continue;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01: { /* set_loc */
            uintptr_t v;
            if (!encoded(&p, c->fde_enc, 0, &v))
                return 0;
            loc = v;
            break;
        }
        case 0x02: loc += *p++ * c->code_align; break;
        case 0x03: { uint16_t d; memcpy(&d, p, 2); p += 2; loc += d * c->code_align; break; }
        case 0x04: { uint32_t d; memcpy(&d, p, 4); p += 4; loc += d * c->code_align; break; }
        case 0x05: /* offset_extended */
            reg = uleb(&p);
            off = (int64_t)uleb(&p) * c->data_align;
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_OFFSET, off, NULL};
            break;
        case 0x06: /* restore_extended */
            reg = uleb(&p);
            if (reg < PP_CFI_REGS)
                row->r[reg] = initial ? initial->r[reg] : (pp_cfi_rule){PP_RULE_SAME, 0, NULL};
            break;
        case 0x07: /* undefined */
            reg = uleb(&p);
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_UNDEF, 0, NULL};
            break;
        case 0x08: /* same_value */
            reg = uleb(&p);
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_SAME, 0, NULL};
            break;
        case 0x09: { /* register */
            reg = uleb(&p);
            uint64_t r2 = uleb(&p);
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_REG, (int64_t)r2, NULL};
            break;
        }
        case 0x0a: /* remember_state */
            if (depth == STATE_DEPTH)
                return 0;
            stack[depth++] = *row;
            break;
        case 0x0b: /* restore_state */
            if (depth == 0)
                return 0;
            *row = stack[--depth];
            break;
        case 0x0c: /* def_cfa */
            row->cfa_reg = (int)uleb(&p);
            row->cfa_off = (int64_t)uleb(&p);
            row->cfa_expr = NULL;
            break;
        case 0x0d: row->cfa_reg = (int)uleb(&p); row->cfa_expr = NULL; break;
        case 0x0e: row->cfa_off = (int64_t)uleb(&p); break;
        case 0x0f: { /* def_cfa_expression */
            row->cfa_expr = p;
            uint64_t n = uleb(&p);
            p += n;
            break;
        }
        case 0x10: /* expression */
        case 0x16: { /* val_expression */
            reg = uleb(&p);
            const uint8_t *e = p;
            uint64_t n = uleb(&p);
            p += n;
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){op == 0x10 ? PP_RULE_EXPR : PP_RULE_VAL_EXPR, 0, e};
            break;
        }
        case 0x11: /* offset_extended_sf */
            reg = uleb(&p);
            off = sleb(&p) * c->data_align;
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_OFFSET, off, NULL};
            break;
        case 0x12: /* def_cfa_sf */
            row->cfa_reg = (int)uleb(&p);
            row->cfa_off = sleb(&p) * c->data_align;
            row->cfa_expr = NULL;
            break;
        case 0x13: row->cfa_off = sleb(&p) * c->data_align; break;
        case 0x14: /* val_offset */
            reg = uleb(&p);
            off = (int64_t)uleb(&p) * c->data_align;
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_VAL_OFFSET, off, NULL};
            break;
        case 0x15: /* val_offset_sf */
            reg = uleb(&p);
            off = sleb(&p) * c->data_align;
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_VAL_OFFSET, off, NULL};
            break;
        case 0x2e: uleb(&p); break; /* GNU_args_size */
        case 0x2f: /* GNU_negative_offset_extended */
            reg = uleb(&p);
            off = -(int64_t)uleb(&p) * c->data_align;
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){PP_RULE_OFFSET, off, NULL};
            break;
        default:
            return 0;
        }
    }
    return 1;
}

/* async-signal-safe */
int pp_cfi_find(const pp_cfi_table *t, uintptr_t pc, pp_cfi_row *row)
{
    if (!t->count)
        return 0;
    int64_t rel = (int64_t)(pc - t->hdr);
    size_t lo = 0, hi = t->count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((int64_t)t->table[2 * mid] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    if ((int64_t)t->table[2 * lo] > rel)
        return 0;
    const uint8_t *fde = (const uint8_t *)(t->hdr + (intptr_t)t->table[2 * lo + 1]);
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    memcpy(&cie_off, fde + 4, 4);
    if (len == 0 || len == 0xffffffffu || cie_off == 0)
        return 0;
    cie c;
    if (!parse_cie(fde + 4 - cie_off, &c))
        return 0;
    const uint8_t *p = fde + 8;
    uintptr_t begin, range;
    if (!encoded(&p, c.fde_enc, t->hdr, &begin) || !encoded(&p, c.fde_enc & 0x0f, 0, &range))
        return 0;
    if (pc < begin || pc - begin >= range)
        return 0;
    if (c.has_z) {
        uint64_t n = uleb(&p);
        p += n;
    }
    memset(row, 0, sizeof *row); /* every register: same value */
    row->cfa_reg = PP_REG_RSP;
    if (!run(c.insns, c.end, &c, begin, (uintptr_t)-1, row, NULL))
        return 0;
    pp_cfi_row initial = *row;
    return run(p, fde + 4 + len, &c, begin, pc, row, &initial);
}

/* async-signal-safe */
int pp_cfi_eval(const uint8_t *expr, const uint64_t *regs, int push_initial, uint64_t initial,
                int (*read)(void *ctx, uint64_t addr, uint64_t *value), void *ctx, uint64_t *out)
{
    uint64_t st[16];
    int n = 0;
    const uint8_t *p = expr;
    uint64_t len = uleb(&p);
    const uint8_t *end = p + len;
    if (push_initial)
        st[n++] = initial;
    while (p < end) {
        uint8_t op = *p++;
        if (n >= 15)
            return 0;
        if (op >= 0x30 && op <= 0x4f) { /* lit0..31 */
            st[n++] = op - 0x30;
        } else if (op >= 0x70 && op <= 0x80) { /* breg0..16 */
            st[n++] = regs[op - 0x70] + (uint64_t)sleb(&p);
        } else {
            switch (op) {
            case 0x06: /* deref */
                if (n < 1 || !read(ctx, st[n - 1], &st[n - 1]))
                    return 0;
                break;
            case 0x08: st[n++] = *p++; break;                   /* const1u */
            case 0x09: st[n++] = (uint64_t)(int8_t)*p++; break; /* const1s */
            case 0x0a: { uint16_t v; memcpy(&v, p, 2); p += 2; st[n++] = v; break; }
            case 0x0b: { int16_t v; memcpy(&v, p, 2); p += 2; st[n++] = (uint64_t)(int64_t)v; break; }
            case 0x0c: { uint32_t v; memcpy(&v, p, 4); p += 4; st[n++] = v; break; }
            case 0x0d: { int32_t v; memcpy(&v, p, 4); p += 4; st[n++] = (uint64_t)(int64_t)v; break; }
            case 0x10: st[n++] = uleb(&p); break;               /* constu */
            case 0x11: st[n++] = (uint64_t)sleb(&p); break;     /* consts */
            case 0x12: if (n < 1) return 0; st[n] = st[n - 1]; n++; break; /* dup */
            case 0x1a: if (n < 2) return 0; n--; st[n - 1] &= st[n]; break;  /* and */
            case 0x1c: if (n < 2) return 0; n--; st[n - 1] -= st[n]; break;  /* minus */
            case 0x22: if (n < 2) return 0; n--; st[n - 1] += st[n]; break;  /* plus */
            case 0x23: if (n < 1) return 0; st[n - 1] += uleb(&p); break;    /* plus_uconst */
            case 0x24: if (n < 2) return 0; n--; st[n - 1] <<= (st[n] & 63); break; /* shl */
            case 0x2a: if (n < 2) return 0; n--; st[n - 1] = (int64_t)st[n - 1] >= (int64_t)st[n]; break; /* ge */
            default: return 0;
            }
        }
    }
    if (n < 1)
        return 0;
    *out = st[n - 1];
    return 1;
}
