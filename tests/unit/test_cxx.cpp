// test_cxx.cpp: the header from C++: extern "C" linkage and the
// pprof::LabelScope guard (merges like pprof_do, restores at scope exit,
// also when an exception leaves the scope).
// test-labels: concurrency quick
#include "pprof.h"
#include "check.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

static const char *current(const char *key, char *buf, size_t len)
{
    pprof_labels *c = pprof_labels_current();
    size_t n;
    const pprof_label *p = pprof_labels_pairs(c, &n);
    const char *out = nullptr;
    for (size_t i = 0; i < n; i++)
        if (!std::strcmp(p[i].key, key)) {
            std::snprintf(buf, len, "%s", p[i].value);
            out = buf;
        }
    pprof_labels_unref(c);
    return out;
}

int main()
{
    char b[64];
    pprof_label outer_pairs[] = {{"tenant", "acme"}}, inner_pairs[] = {{"endpoint", "/x"}};
    pprof_labels *outer, *inner;
    CHECK(pprof_labels_new(outer_pairs, 1, &outer) == 0);
    CHECK(pprof_labels_new(inner_pairs, 1, &inner) == 0);
    {
        pprof::LabelScope a(outer);
        CHECK(current("tenant", b, sizeof b) && !std::strcmp(b, "acme"));
        {
            pprof::LabelScope c(inner);
            CHECK(current("tenant", b, sizeof b) && current("endpoint", b, sizeof b));
        }
        CHECK(!current("endpoint", b, sizeof b));
        try {
            pprof::LabelScope c(inner);
            throw std::runtime_error("leave the scope");
        } catch (const std::exception &) {
        }
        CHECK(!current("endpoint", b, sizeof b) && current("tenant", b, sizeof b));
    }
    CHECK(!current("tenant", b, sizeof b));
    pprof_labels_unref(outer);
    pprof_labels_unref(inner);
    return check_summary("test_cxx");
}
