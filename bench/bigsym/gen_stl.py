#!/usr/bin/env python3
"""gen_stl.py: a mid-size -g C++ program whose every unit is hot, for
bench/bigsym/run.sh's `stl` case: UNITS translation units of FUNCS
functions each over std::map and std::unordered_map of KTYPES key and
value types of the unit's own (so each unit instantiates its own
templates: hundreds of thousands of line-table rows), and a main that
calls them all in turn, forever, so a CPU profile has addresses in every
unit.

usage: gen_stl.py OUTDIR UNITS FUNCS [KTYPES]"""
import os, sys
out, units, funcs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
KTYPES = int(sys.argv[4]) if len(sys.argv) > 4 else 8
os.makedirs(out, exist_ok=True)
for u in range(units):
    L = ["#include <cstdint>\n#include <map>\n#include <unordered_map>\n#include <string>\n#include <vector>\n",
         f"namespace stl_unit{u} {{\n"]
    for k in range(KTYPES):
        L.append(f"struct Key{k} {{ long a, b; std::string s; bool operator<(const Key{k} &o) const {{ return a < o.a || (a == o.a && b < o.b); }}\n"
                 f"  bool operator==(const Key{k} &o) const {{ return a == o.a && b == o.b; }} }};\n"
                 f"struct Hash{k} {{ size_t operator()(const Key{k} &x) const {{ return std::hash<long>()(x.a * 31 + x.b + {k}); }} }};\n"
                 f"struct Val{k} {{ std::vector<long> v; double d; }};\n")
    for f in range(funcs):
        k = f % KTYPES
        L.append(f"__attribute__((noinline)) uint64_t work{f:03d}(uint64_t x) {{\n"
                 f"  std::map<Key{k}, Val{k}> m; std::unordered_map<Key{k}, Val{k}, Hash{k}> h;\n"
                 f"  for (int i = 0; i < 24; i++) {{ Key{k} key{{(long)(x % 97) + i, {f}, \"\"}}; m[key].v.push_back(i); h[key].d += i; x = x * 6364136223846793005ULL + {f}; }}\n"
                 f"  for (auto &e : m) x += e.second.v.size(); for (auto &e : h) x += (uint64_t)e.second.d;\n"
                 f"  return x;\n}}\n")
    L.append(f"uint64_t run_all(uint64_t x) {{\n")
    for f in range(funcs):
        L.append(f"  x = work{f:03d}(x);\n")
    L.append("  return x;\n}\n}\n")
    open(f"{out}/unit{u}.cpp", "w").write("".join(L))
decls = "".join(f"namespace stl_unit{u} {{ uint64_t run_all(uint64_t); }}\n" for u in range(units))
calls = "".join(f"  x = stl_unit{u}::run_all(x);\n" for u in range(units))
open(f"{out}/main.cpp", "w").write(
    f"#include <cstdint>\n{decls}int main() {{ volatile uint64_t x = 1; for (;;) {{\n{calls}}} }}\n")
