/* fuzz_names.c: libFuzzer target for the checks on names programs pass in:
 * label sets (pprof_labels_new with any keys and values, then rendered by
 * pprof_labels_pairs) and custom-profile names (pprof_custom_new and
 * pprof_custom_find). The input is NUL-separated strings; the first byte
 * picks labels (even) or a custom-profile name (odd). A name that is
 * accepted must be 1-63 of [A-Za-z0-9._-], as pprof.h promises, and be
 * found again under it.
 */
#include "pprof.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUSTOM_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *buf = malloc(size + 1); /* the strings, NUL-terminated */
    if (!buf)
        return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    buf[size] = 0;
    if (data[0] & 1) {
        pprof_custom *c;
        size_t len = strlen(buf);
        if (pprof_custom_new(buf, &c) == 0 &&
            (len < 1 || len > 63 || strspn(buf, CUSTOM_CHARS) != len || pprof_custom_find(buf) != c)) {
            fprintf(stderr, "fuzz_names: custom profile \"%s\" accepted but not valid or not found again\n", buf);
            abort();
        }
    } else {
        pprof_label pairs[16];
        size_t n = 0;
        for (char *s = buf; s < buf + size - 1 && n < 16;) {
            char *v = s + strlen(s) + 1;
            if (v > buf + size - 1)
                v = buf + size - 1; /* the empty string at the end */
            pairs[n].key = s;
            pairs[n].value = v;
            n++;
            s = v + strlen(v) + 1;
        }
        pprof_labels *set;
        if (pprof_labels_new(pairs, n, &set) == 0) {
            size_t got;
            const pprof_label *l = pprof_labels_pairs(set, &got);
            for (size_t i = 0; i < got; i++)
                if (!l[i].key || !l[i].value) {
                    fprintf(stderr, "fuzz_names: a label set with a NULL string\n");
                    abort();
                }
            pprof_labels_unref(set);
        }
    }
    free(buf);
    return 0;
}
