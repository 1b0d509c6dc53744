/* hex.h: hexadecimal digits and percent-encoding (hex.c).
 *
 * One codec for every part that reads or writes them: build IDs, trace and
 * span IDs (lowercase hex), the server's query components, and the
 * OpenTelemetry resource attributes of the environment (%XX escapes).
 * Pure functions of their arguments: no allocation, no state; usable
 * anywhere, signal handlers included.
 */
#ifndef PP_HEX_H
#define PP_HEX_H
#include <stddef.h>

/* The value of one hex digit (either case), or -1. */
int pp_hex_digit(int c);
/* Writes the 2n lowercase hex digits of bytes[0..n) and a NUL into out
 * (2n + 1 bytes). */
void pp_hex_encode(char *out, const void *bytes, size_t n);

/* pp_pct_decode's flags. */
#define PP_PCT_PLUS 1    /* '+' stands for a space (a URL's query) */
#define PP_PCT_LENIENT 2 /* a '%' without two hex digits after it is kept
                            as it is; without this flag it is an error */
/* Decodes s[0..n) (%XX escapes) into out, writing at most cap bytes and
 * no NUL. Returns the whole decoded length (more than cap: out holds a
 * prefix), or -1 on a malformed escape. */
long pp_pct_decode(const char *s, size_t n, char *out, size_t cap, int flags);
/* Encodes s[0..n) as a URL query component: letters, digits and "-._~:/,"
 * as they are, a space as '+', every other byte (NUL too) as %XX. Writes at
 * most cap bytes and no NUL; returns the whole encoded length (at most
 * 3n). */
size_t pp_pct_encode(const char *s, size_t n, char *out, size_t cap);
#endif
