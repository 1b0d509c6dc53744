/* page.c: the web/ pages' templates (see endpoints.h): a page embedded
 * at build time with {{NAME}} placeholders, each filled in by its slot's
 * function when the page is served. */
#define _GNU_SOURCE /* memmem */
#include "endpoints.h"

#include <string.h>

void pp_write_html_escaped(pp_reply *r, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': pp_reply_printf(r, "&amp;"); break;
        case '<': pp_reply_printf(r, "&lt;"); break;
        case '>': pp_reply_printf(r, "&gt;"); break;
        case '"': pp_reply_printf(r, "&quot;"); break;
        case '\'': pp_reply_printf(r, "&#39;"); break;
        default: pp_reply_write(r, s, 1);
        }
    }
}

void pp_write_template(pp_reply *r, const unsigned char *text, size_t len, const pp_slot *slots, size_t nslots,
                       const pp_req *q)
{
    const char *t = (const char *)text, *end = t + len;
    while (t < end) {
        const char *open = memmem(t, (size_t)(end - t), "{{", 2);
        if (!open) {
            pp_reply_write(r, t, (size_t)(end - t));
            break;
        }
        pp_reply_write(r, t, (size_t)(open - t));
        size_t rest = (size_t)(end - open), i = 0, n = 0;
        for (; i < nslots; i++) {
            n = strlen(slots[i].name);
            if (rest >= n + 4 && memcmp(open + 2, slots[i].name, n) == 0 && memcmp(open + 2 + n, "}}", 2) == 0)
                break;
        }
        if (i < nslots) {
            slots[i].write(r, q);
            t = open + n + 4;
        } else {
            pp_reply_write(r, open, 2);
            t = open + 2;
        }
    }
}

void pp_write_prefix(pp_reply *r, const pp_req *q)
{
    pp_write_html_escaped(r, q->cfg.prefix);
}
