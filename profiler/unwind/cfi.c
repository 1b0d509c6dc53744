/* cfi.c: DWARF call-frame information (.eh_frame) for x86-64 and arm64.
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
 * anything it does not understand instead of guessing. The architecture
 * (arch/) gives the register count and the return-address column a CIE
 * must name (x86-64: 16; arm64: 30), and arm64's one instruction of its
 * own, DW_CFA_AARCH64_negate_ra_state, which marks where the return
 * address is signed: the walk strips signatures from every return
 * address, so the row needs no record of it.
 */
#define _GNU_SOURCE /* the signal context's register names (arch/arch.h) */
#include "cfi.h"

#include <string.h>

#define STATE_DEPTH 2 /* remember_state nesting; deeper gives up (keeps handler stacks small) */

/* A bounded reader: every read checks the end, and a read past it marks
 * the reader bad and yields 0; callers check `bad` and give up. Damaged or
 * hostile unwind tables therefore never make the handler read outside the
 * bytes the tables' own lengths and the object's segment allow. */
typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd;

static uint8_t u8(rd *r) /* async-signal-safe */
{
    if (r->p >= r->end) {
        r->bad = 1;
        return 0;
    }
    return *r->p++;
}

/* n (1, 2, 4 or 8) little-endian bytes. async-signal-safe */
static uint64_t fixed(rd *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->bad = 1;
        r->p = r->end;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, r->p, n);
    r->p += n;
    return v;
}

static void skip(rd *r, uint64_t n) /* async-signal-safe */
{
    if (n > (uint64_t)(r->end - r->p)) {
        r->bad = 1;
        r->p = r->end;
        return;
    }
    r->p += n;
}

/* A LEB128 number's bits; *shift gets the bits read, *last the last byte.
 * async-signal-safe */
static uint64_t leb(rd *r, unsigned *shift, uint8_t *last)
{
    uint64_t v = 0;
    uint8_t b;
    *shift = 0;
    do {
        b = u8(r);
        if (*shift < 64)
            v |= (uint64_t)(b & 0x7f) << *shift;
        *shift += 7;
    } while ((b & 0x80) && !r->bad);
    *last = b;
    return v;
}

static uint64_t uleb(rd *r) /* async-signal-safe */
{
    unsigned shift;
    uint8_t last;
    return leb(r, &shift, &last);
}

static int64_t sleb(rd *r) /* async-signal-safe */
{
    unsigned shift;
    uint8_t last;
    uint64_t v = leb(r, &shift, &last);
    if (shift < 64 && (last & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A pointer in DW_EH_PE encoding `enc` (pcrel and datarel supported).
 * Returns 0 for an encoding it does not know or a read past the end.
 * async-signal-safe */
static int encoded(rd *r, uint8_t enc, uintptr_t datarel, uintptr_t *out)
{
    uintptr_t at = (uintptr_t)r->p;
    uint64_t v;
    if (enc == 0xff)
        return 0;
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: v = fixed(r, 8); break;
    case 0x01: v = uleb(r); break;
    case 0x02: v = fixed(r, 2); break;
    case 0x03: v = fixed(r, 4); break;
    case 0x09: v = (uint64_t)sleb(r); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(r, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(r, 4); break;
    default: return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break;
    case 0x30: v += datarel; break;
    default: return 0;
    }
    *out = (uintptr_t)v;
    return !r->bad;
}

/* async-signal-safe */
int pp_cfi_table_init(pp_cfi_table *t, const uint8_t *hdr, size_t hdr_len, uintptr_t lo, uintptr_t hi)
{
    memset(t, 0, sizeof *t);
    /* version 1; the table must be datarel|sdata4 pairs */
    if (hdr_len < 4 || hdr[0] != 1 || hdr[3] != 0x3b || lo >= hi)
        return 0;
    rd r = {hdr + 4, hdr + hdr_len, 0};
    uintptr_t eh_frame, count;
    if (!encoded(&r, hdr[1], (uintptr_t)hdr, &eh_frame) || !encoded(&r, hdr[2], (uintptr_t)hdr, &count))
        return 0;
    if ((uintptr_t)r.p % 4 || count > (size_t)(r.end - r.p) / 8)
        return 0; /* the table must fit in the section */
    t->hdr = (uintptr_t)hdr;
    t->table = (const int32_t *)(const void *)r.p;
    t->count = count;
    t->lo = lo;
    t->hi = hi;
    return count > 0;
}

/* Where a length-prefixed record at p ends, if its length (4 bytes, not
 * 0, not the 64-bit escape) leaves it inside [lo, hi); else NULL.
 * async-signal-safe */
static const uint8_t *record_end(const pp_cfi_table *t, const uint8_t *p)
{
    uintptr_t a = (uintptr_t)p;
    if (a < t->lo || a >= t->hi || t->hi - a < 8)
        return NULL;
    uint32_t len;
    memcpy(&len, p, 4);
    if (len < 4 || len == 0xffffffffu || len > t->hi - a - 4)
        return NULL;
    return p + 4 + len;
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
static int parse_cie(const pp_cfi_table *t, const uint8_t *p, cie *c)
{
    const uint8_t *end = record_end(t, p);
    uint32_t id;
    if (!end)
        return 0;
    memcpy(&id, p + 4, 4);
    if (id != 0) /* not a CIE */
        return 0;
    rd r = {p + 8, end, 0}; /* after the length and the CIE id */
    uint8_t version = u8(&r);
    const char *aug = (const char *)r.p;
    size_t alen = strnlen(aug, (size_t)(r.end - r.p) < 8 ? (size_t)(r.end - r.p) : 8);
    if (alen == 8 || alen == (size_t)(r.end - r.p))
        return 0;
    skip(&r, alen + 1);
    if (aug[0] == 'e' && aug[1] == 'h')
        return 0;
    c->code_align = uleb(&r);
    c->data_align = sleb(&r);
    c->ra_reg = version == 1 ? u8(&r) : uleb(&r);
    c->fde_enc = 0;
    c->has_z = aug[0] == 'z';
    if (c->has_z) {
        uint64_t dlen = uleb(&r);
        if (r.bad || dlen > (uint64_t)(r.end - r.p))
            return 0;
        rd data = {r.p, r.p + dlen, 0};
        for (size_t i = 1; i < alen; i++) {
            switch (aug[i]) {
            case 'R': c->fde_enc = u8(&data); break;
            case 'L': u8(&data); break;
            case 'P': {
                uint8_t penc = u8(&data);
                uintptr_t ignored;
                if (!encoded(&data, penc & 0x7f, 0, &ignored))
                    return 0;
                break;
            }
            case 'S': case 'B': break;
            default: return 0;
            }
        }
        if (data.bad)
            return 0;
        skip(&r, dlen);
    }
    c->insns = r.p;
    c->end = end;
    return !r.bad && c->ra_reg == PP_REG_RA;
}

/* A length-prefixed expression at r: skips it and returns its size,
 * prefix included (0 when it does not fit). async-signal-safe */
static uint64_t expression(rd *r)
{
    const uint8_t *at = r->p;
    skip(r, uleb(r));
    return r->bad ? 0 : (uint64_t)(r->p - at);
}

/* v times the data alignment factor, wrapping as the machine's addition
 * of the result will (damaged tables may ask for any product).
 * async-signal-safe */
static int64_t scaled(uint64_t v, const cie *c)
{
    return (int64_t)(v * (uint64_t)c->data_align);
}

/* Sets the rule of register reg, if it is one we track. async-signal-safe */
static void set_rule(pp_cfi_row *row, uint64_t reg, int kind, int64_t off)
{
    if (reg < PP_CFI_REGS)
        row->r[reg] = (pp_cfi_rule){kind, off, NULL};
}

/* Runs CFA instructions [p, end) up to `pc`. `initial` is the row after the
 * CIE's instructions (for DW_CFA_restore), NULL while running those.
 * Returns 0 on an instruction it does not know or one cut short.
 * async-signal-safe */
static int run(const uint8_t *p, const uint8_t *end, const cie *c, uintptr_t loc, uintptr_t pc,
               pp_cfi_row *row, const pp_cfi_row *initial)
{
    pp_cfi_row stack[STATE_DEPTH];
    int depth = 0;
    rd r = {p, end, 0};
    while (r.p < r.end && loc <= pc && !r.bad) {
        uint8_t op = u8(&r);
        uint64_t reg = 0;
        switch (op >> 6) {
        case 1: /* advance_loc */
            loc += (op & 0x3f) * c->code_align;
            continue;
        case 2: /* offset */
            set_rule(row, op & 0x3f, PP_RULE_OFFSET, scaled(uleb(&r), c));
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
            if (!encoded(&r, c->fde_enc, 0, &v))
                return 0;
            loc = v;
            break;
        }
        case 0x02: loc += u8(&r) * c->code_align; break;
        case 0x03: loc += fixed(&r, 2) * c->code_align; break;
        case 0x04: loc += fixed(&r, 4) * c->code_align; break;
        case 0x05: /* offset_extended */
        case 0x11: /* offset_extended_sf */
            reg = uleb(&r);
            set_rule(row, reg, PP_RULE_OFFSET, scaled(op == 0x05 ? uleb(&r) : (uint64_t)sleb(&r), c));
            break;
        case 0x06: /* restore_extended */
            reg = uleb(&r);
            if (reg < PP_CFI_REGS)
                row->r[reg] = initial ? initial->r[reg] : (pp_cfi_rule){PP_RULE_SAME, 0, NULL};
            break;
        case 0x07: /* undefined */
            set_rule(row, uleb(&r), PP_RULE_UNDEF, 0);
            break;
        case 0x08: /* same_value */
            set_rule(row, uleb(&r), PP_RULE_SAME, 0);
            break;
        case 0x09: { /* register */
            reg = uleb(&r);
            set_rule(row, reg, PP_RULE_REG, (int64_t)uleb(&r));
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
            row->cfa_reg = (int)uleb(&r);
            row->cfa_off = (int64_t)uleb(&r);
            row->cfa_expr = NULL;
            break;
        case 0x0d: row->cfa_reg = (int)uleb(&r); row->cfa_expr = NULL; break;
        case 0x0e: row->cfa_off = (int64_t)uleb(&r); break;
        case 0x0f: /* def_cfa_expression */
            row->cfa_expr = r.p;
            row->cfa_expr_len = expression(&r);
            break;
        case 0x10: /* expression */
        case 0x16: { /* val_expression */
            reg = uleb(&r);
            const uint8_t *e = r.p;
            uint64_t n = expression(&r);
            if (reg < PP_CFI_REGS)
                row->r[reg] = (pp_cfi_rule){op == 0x10 ? PP_RULE_EXPR : PP_RULE_VAL_EXPR, (int64_t)n, e};
            break;
        }
        case 0x12: /* def_cfa_sf */
            row->cfa_reg = (int)uleb(&r);
            row->cfa_off = scaled((uint64_t)sleb(&r), c);
            row->cfa_expr = NULL;
            break;
        case 0x13: row->cfa_off = scaled((uint64_t)sleb(&r), c); break;
        case 0x14: /* val_offset */
        case 0x15: /* val_offset_sf */
            reg = uleb(&r);
            set_rule(row, reg, PP_RULE_VAL_OFFSET, scaled(op == 0x14 ? uleb(&r) : (uint64_t)sleb(&r), c));
            break;
        case 0x2e: uleb(&r); break; /* GNU_args_size */
#if PP_ARCH_CFA_OP_NEGATE_RA
        case PP_ARCH_CFA_OP_NEGATE_RA: break; /* AARCH64_negate_ra_state */
#endif
        case 0x2f: /* GNU_negative_offset_extended */
            reg = uleb(&r);
            set_rule(row, reg, PP_RULE_OFFSET, scaled(-uleb(&r), c));
            break;
        default:
            return 0;
        }
    }
    return !r.bad;
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
    const uint8_t *fde = (const uint8_t *)(t->hdr + (uintptr_t)(intptr_t)t->table[2 * lo + 1]);
    const uint8_t *fde_end = record_end(t, fde);
    if (!fde_end)
        return 0;
    uint32_t cie_off;
    memcpy(&cie_off, fde + 4, 4);
    if (cie_off == 0 || cie_off > (uintptr_t)(fde + 4) - t->lo)
        return 0;
    cie c;
    if (!parse_cie(t, fde + 4 - cie_off, &c))
        return 0;
    rd r = {fde + 8, fde_end, 0};
    uintptr_t begin, range;
    if (!encoded(&r, c.fde_enc, t->hdr, &begin) || !encoded(&r, c.fde_enc & 0x0f, 0, &range))
        return 0;
    if (pc < begin || pc - begin >= range)
        return 0;
    if (c.has_z)
        skip(&r, uleb(&r));
    if (r.bad)
        return 0;
    memset(row, 0, sizeof *row); /* every register: same value */
    row->cfa_reg = PP_REG_SP;
    if (!run(c.insns, c.end, &c, begin, (uintptr_t)-1, row, NULL))
        return 0;
    pp_cfi_row initial = *row;
    return run(r.p, fde_end, &c, begin, pc, row, &initial);
}

/* async-signal-safe */
int pp_cfi_eval(const uint8_t *expr, size_t len, const uint64_t *regs, int push_initial, uint64_t initial,
                int (*read)(void *ctx, uint64_t addr, uint64_t *value), void *ctx, uint64_t *out)
{
    uint64_t st[16];
    int n = 0;
    rd r = {expr, expr + len, 0};
    uint64_t body = uleb(&r);
    if (r.bad || body > (uint64_t)(r.end - r.p))
        return 0;
    r.end = r.p + body;
    if (push_initial)
        st[n++] = initial;
    while (r.p < r.end && !r.bad) {
        uint8_t op = u8(&r);
        if (n >= 15)
            return 0;
        if (op >= 0x30 && op <= 0x4f) { /* lit0..31 */
            st[n++] = op - 0x30;
        } else if (op >= 0x70 && op <= 0x70 + PP_ARCH_BREG_MAX) { /* breg0..16 (x86-64), 0..31 (arm64) */
            st[n++] = regs[op - 0x70] + (uint64_t)sleb(&r);
        } else {
            switch (op) {
            case 0x06: /* deref */
                if (n < 1 || !read(ctx, st[n - 1], &st[n - 1]))
                    return 0;
                break;
            case 0x08: st[n++] = u8(&r); break;                              /* const1u */
            case 0x09: st[n++] = (uint64_t)(int8_t)u8(&r); break;            /* const1s */
            case 0x0a: st[n++] = fixed(&r, 2); break;                        /* const2u */
            case 0x0b: st[n++] = (uint64_t)(int64_t)(int16_t)fixed(&r, 2); break; /* const2s */
            case 0x0c: st[n++] = fixed(&r, 4); break;                        /* const4u */
            case 0x0d: st[n++] = (uint64_t)(int64_t)(int32_t)fixed(&r, 4); break; /* const4s */
            case 0x10: st[n++] = uleb(&r); break;                            /* constu */
            case 0x11: st[n++] = (uint64_t)sleb(&r); break;                  /* consts */
            case 0x12: if (n < 1) return 0; st[n] = st[n - 1]; n++; break;   /* dup */
            case 0x1a: if (n < 2) return 0; n--; st[n - 1] &= st[n]; break;  /* and */
            case 0x1c: if (n < 2) return 0; n--; st[n - 1] -= st[n]; break;  /* minus */
            case 0x22: if (n < 2) return 0; n--; st[n - 1] += st[n]; break;  /* plus */
            case 0x23: if (n < 1) return 0; st[n - 1] += uleb(&r); break;    /* plus_uconst */
            case 0x24: if (n < 2) return 0; n--; st[n - 1] <<= (st[n] & 63); break; /* shl */
            case 0x2a: if (n < 2) return 0; n--; st[n - 1] = (int64_t)st[n - 1] >= (int64_t)st[n]; break; /* ge */
            default: return 0;
            }
        }
    }
    if (n < 1 || r.bad)
        return 0;
    *out = st[n - 1];
    return 1;
}
