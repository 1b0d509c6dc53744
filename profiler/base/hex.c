/* hex.c: hexadecimal digits and percent-encoding (see hex.h). */
#include "hex.h"

static const char lower[] = "0123456789abcdef";
static const char upper[] = "0123456789ABCDEF"; /* %XX escapes, as RFC 3986 prefers */

int pp_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void pp_hex_encode(char *out, const void *bytes, size_t n)
{
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = lower[b[i] >> 4];
        out[2 * i + 1] = lower[b[i] & 15];
    }
    out[2 * n] = '\0';
}

long pp_pct_decode(const char *s, size_t n, char *out, size_t cap, int flags)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++, o++) {
        int c = (unsigned char)s[i];
        int h = -1, l = -1;
        if (c == '%' && n - i >= 3) { /* two characters follow */
            h = pp_hex_digit((unsigned char)s[i + 1]);
            l = pp_hex_digit((unsigned char)s[i + 2]);
        }
        if (c == '%' && h >= 0 && l >= 0) {
            c = h * 16 + l;
            i += 2;
        } else if (c == '%' && !(flags & PP_PCT_LENIENT)) {
            return -1;
        } else if (c == '+' && (flags & PP_PCT_PLUS)) {
            c = ' ';
        }
        if (o < cap)
            out[o] = (char)c;
    }
    return (long)o;
}

/* Whether c stands for itself in a query component. */
static int unreserved(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    for (const char *k = "-._~:/,"; *k; k++)
        if (c == (unsigned char)*k)
            return 1;
    return 0;
}

size_t pp_pct_encode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[3] = {(char)c, 0, 0};
        size_t k = 1;
        if (c == ' ') {
            e[0] = '+';
        } else if (!unreserved(c)) {
            e[0] = '%';
            e[1] = upper[c >> 4];
            e[2] = upper[c & 15];
            k = 3;
        }
        for (size_t j = 0; j < k; j++, o++)
            if (o < cap)
                out[o] = e[j];
    }
    return o;
}
