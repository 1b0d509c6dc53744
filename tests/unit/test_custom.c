/* test_custom.c: custom profiles (pprof_custom_*), through their recorder.
 * test-labels: plain-only quick
 *
 * Names: plain path segments only, none of the server's endpoint names
 * (the server, linked in here, reserves them), each once. The index page
 * lists the profile. Entries:
 * keyed by pointer, a key once, removal of an absent key is an error. The
 * recorder counts entries by the stack that added them (two functions add
 * 3 and 5) and their labels; a window gives the difference.
 */
#include "pprof.h"
#include "check.h"

#include <string.h>

static char keys[16];

/* The index page's body, from a request answered before pprof_http_handle
 * returns. */
static char index_body[65536];
static void on_index(void *ctx, const pprof_http_response *resp)
{
    *(int *)ctx = resp->status;
    size_t n = resp->body.len < sizeof index_body - 1 ? resp->body.len : sizeof index_body - 1;
    memcpy(index_body, resp->body.data, n);
    index_body[n] = 0;
}

__attribute__((noinline)) static void open_three(void)
{
    for (int i = 0; i < 3; i++)
        CHECK(pprof_custom_add(pprof_custom_find("conns"), &keys[i]) == 0);
}

__attribute__((noinline)) static void open_five(void *arg)
{
    (void)arg;
    for (int i = 3; i < 8; i++)
        CHECK(pprof_custom_add(pprof_custom_find("conns"), &keys[i]) == 0);
}

/* The count of samples whose stack contains fn, and whether one of them
 * carries label value `lv` (NULL: none wanted). */
static int64_t count_fn(const pprof_profile *p, const char *fn, const char *lv, int *labeled)
{
    size_t n;
    const pprof_sample *s = pprof_profile_samples(p, &n);
    int64_t t = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < s[i].nlocations; j++) {
            const pprof_location *l = s[i].locations[j];
            if (l->nlines && !strcmp(l->lines[0].function, fn)) {
                t += s[i].values[0];
                if (lv && s[i].nlabels == 1 && !strcmp(s[i].labels[0].value, lv))
                    *labeled = 1;
                break;
            }
        }
    return t;
}

int main(void)
{
    pprof_custom *c, *other;
    CHECK(pprof_custom_new("conns", &c) == 0);
    CHECK(pprof_custom_new("conns", &other) == PPROF_EBUSY);
    CHECK(pprof_custom_new("heap", &other) == PPROF_EINVAL);
    CHECK(strstr(pprof_last_error(), "built-in") != NULL);
    CHECK(pprof_custom_new("a/b", &other) == PPROF_EINVAL);
    CHECK(pprof_custom_new("", &other) == PPROF_EINVAL);
    CHECK(pprof_custom_new("..", &other) == PPROF_EINVAL);
    CHECK(pprof_custom_new(NULL, &other) == PPROF_EINVAL);
    /* a bare failure after a detailed one shows no stale detail */
    CHECK(pprof_custom_new("x", NULL) == PPROF_EINVAL && !strcmp(pprof_last_error(), "invalid argument"));
    CHECK(!strcmp(pprof_strerror(PPROF_EINVAL), "invalid argument"));
    CHECK(pprof_custom_find("conns") == c && pprof_custom_find("nope") == NULL);
    CHECK(!strcmp(pprof_custom_name(c), "conns"));

    pprof_recorder *w, *now;
    CHECK(pprof_custom_recorder_new(c, &w) == 0);
    CHECK(pprof_custom_recorder_new(c, &now) == 0);
    CHECK(pprof_recorder_start(w) == 0);
    open_three();
    pprof_label l = {"tenant", "acme"};
    pprof_labels *set;
    CHECK(pprof_labels_new(&l, 1, &set) == 0);
    CHECK(pprof_do(set, open_five, NULL) == 0);
    CHECK(pprof_custom_count(c) == 8);
    int status = 0;
    pprof_http_request req = {"GET", "/debug/pprof/", NULL, NULL, 0};
    CHECK(pprof_http_handle(NULL, &req, on_index, &status, NULL) == 0 && status == 200);
    CHECK(strstr(index_body, "conns") != NULL);
    CHECK(pprof_custom_add(c, &keys[0]) == PPROF_EBUSY);
    CHECK(pprof_custom_remove(c, &keys[15]) == PPROF_ENOTFOUND);
    CHECK(pprof_custom_add(c, NULL) == PPROF_EINVAL);

    pprof_profile *p;
    int labeled = 0;
    CHECK(pprof_recorder_write_to(now, &p) == 0);
    size_t nt;
    const pprof_value_type *t = pprof_profile_sample_types(p, &nt);
    CHECK(nt == 1 && !strcmp(t[0].type, "conns") && !strcmp(t[0].unit, "count"));
    CHECK(count_fn(p, "open_three", NULL, &labeled) == 3);
    CHECK(count_fn(p, "open_five", "acme", &labeled) == 5 && labeled);
    pprof_buffer b = {0};
    CHECK(pprof_profile_write(p, PPROF_FORMAT_TEXT, pprof_writer_buffer(&b)) == 0);
    CHECK(b.len && !strncmp(b.data, "conns profile: total 8\n", 23));
    pprof_buffer_free(&b);
    pprof_profile_free(p);

    /* remove two of open_three's, one of open_five's: the window shows
     * the difference from its start (0 entries): 1 and 4 */
    CHECK(pprof_custom_remove(c, &keys[0]) == 0);
    CHECK(pprof_custom_remove(c, &keys[1]) == 0);
    CHECK(pprof_custom_remove(c, &keys[7]) == 0);
    CHECK(pprof_custom_count(c) == 5);
    CHECK(pprof_recorder_snapshot(w, &p) == 0);
    CHECK(count_fn(p, "open_three", NULL, &labeled) == 1);
    CHECK(count_fn(p, "open_five", NULL, &labeled) == 4);
    pprof_profile_free(p);
    /* next window: two more removed -> negative counts */
    CHECK(pprof_custom_remove(c, &keys[2]) == 0);
    CHECK(pprof_custom_remove(c, &keys[3]) == 0);
    CHECK(pprof_recorder_stop(w, &p) == 0);
    CHECK(count_fn(p, "open_three", NULL, &labeled) == -1);
    CHECK(count_fn(p, "open_five", NULL, &labeled) == -1);
    pprof_profile_free(p);
    /* any non-NULL pointer is a key, small integers too */
    size_t before = pprof_custom_count(c);
    CHECK(pprof_custom_add(c, (const void *)1) == 0);
    CHECK(pprof_custom_remove(c, (const void *)1) == 0);
    CHECK(pprof_custom_remove(c, (const void *)1) == PPROF_ENOTFOUND);
    CHECK(pprof_custom_count(c) == before);
    /* many adds and removes: the table stays consistent */
    static char many[10000];
    for (int i = 0; i < 10000; i++)
        CHECK(pprof_custom_add(c, &many[i]) == 0);
    for (int i = 0; i < 10000; i += 2)
        CHECK(pprof_custom_remove(c, &many[i]) == 0);
    CHECK(pprof_custom_count(c) == 3 + 5000);
    pprof_recorder_free(w);
    pprof_recorder_free(now);
    pprof_labels_unref(set);
    return check_summary("test_custom");
}
