#!/usr/bin/env python3
"""graph.py: who calls whom in the library, drawn from a build's objects.

Reads each object of the library (the hooked build: CMakeFiles/pp_*.dir,
not the *_nohooks copies) with nm: a call from file A to a function that
file B defines is an edge A -> B. Functions of interpose/ that carry a C
library's name (malloc, close, pthread_create ...) are reached by every
libc call the library makes (docs/architecture.md, "Overrides and the
profiler's own calls"); those edges are drawn apart, as "libc names".

Prints:
  - each folder's calls to other folders (profiler/X is X), with the
    number of distinct functions called;
  - the cycles across folders without the libc-name edges (there must be
    none) and with them (the one through interpose/);
  - the cycles between the files of one folder.
With --dot FILE, writes the folder graph for graphviz (libc-name edges
dashed). With --check, exits 1 when a cycle across folders remains
without the libc-name edges.

Usage: scripts/graph.py BUILD_DIR [--dot FILE] [--check]
"""
import collections
import glob
import os
import subprocess
import sys


def objects(build):
    for o in sorted(glob.glob(os.path.join(build, "CMakeFiles", "pp_*.dir", "**", "*.o"), recursive=True)):
        target = o.split("CMakeFiles" + os.sep, 1)[1].split(os.sep, 1)[0]
        src = o.split(".dir" + os.sep, 1)[1][: -len(".o")]
        if target.endswith("_nohooks.dir") or src.startswith("gen" + os.sep):
            continue
        yield o, src


def folder(src):
    parts = src.split(os.sep)
    return parts[1] if parts[0] == "profiler" else parts[0]


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if kind == "U":
            used.add(name)
        elif kind in "TWDBRiV":  # global functions and data
            defined.add(name)
    return defined, used


def sccs(nodes, edges):
    """Tarjan's strongly connected components with more than one node."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.exit(__doc__)
    build, dot, check = argv[1], None, "--check" in argv
    if "--dot" in argv:
        dot = argv[argv.index("--dot") + 1]
    files, defs = {}, {}
    for obj, src in objects(build):
        d, u = symbols(obj)
        files[src] = u
        for s in d:
            defs.setdefault(s, src)
    if not files:
        sys.exit("graph.py: no objects under %s/CMakeFiles (build the tree first)" % build)

    def libc_name(sym, src):
        return folder(src) == "interpose" and not sym.startswith(("pp_", "pprof_", "PP_"))

    calls = collections.defaultdict(set)  # (from folder, to folder, libc) -> symbols
    file_edges = collections.defaultdict(set)
    for src, used in files.items():
        for s in used:
            to = defs.get(s)
            if not to or to == src:
                continue
            if folder(to) == folder(src):
                file_edges[src].add(to)
            else:
                calls[(folder(src), folder(to), libc_name(s, to))].add(s)

    plain = collections.defaultdict(set)
    every = collections.defaultdict(set)
    for (a, b, libc) in calls:
        every[a].add(b)
        if not libc:
            plain[a].add(b)
    folders = sorted({folder(s) for s in files})

    print("Calls across folders (functions called; libc names through interpose/ apart):")
    for a in folders:
        outs = []
        for b in sorted({b for (x, b, _) in calls if x == a}):
            n = len(calls.get((a, b, False), ()))
            m = len(calls.get((a, b, True), ()))
            outs.append("%s %d%s" % (b, n, " + %d libc names" % m if m else "") if n else "%s (%d libc names)" % (b, m))
        print("  %-10s -> %s" % (a, ", ".join(outs) if outs else "(nothing)"))
    bad = sccs(folders, plain)
    print("Cycles across folders, libc names left out: %s" % ("; ".join(" <-> ".join(c) for c in bad) or "none"))
    loops = sccs(folders, every)
    print("Cycles across folders with them: %s" % ("; ".join(" <-> ".join(c) for c in loops) or "none"))
    print("Cycles between the files of one folder:")
    inner = sccs(files.keys(), file_edges)
    for c in inner:
        print("  " + " <-> ".join(os.path.basename(f) for f in c) + "  (%s)" % folder(c[0]))
    if not inner:
        print("  none")

    if dot:
        with open(dot, "w") as f:
            f.write("digraph libpprof {\n  rankdir=LR;\n  node [shape=box];\n")
            for (a, b, libc) in sorted(calls):
                style = ' [style=dashed, label="libc names"]' if libc else ""
                f.write('  "%s" -> "%s"%s;\n' % (a, b, style))
            f.write("}\n")
    return 1 if check and bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
