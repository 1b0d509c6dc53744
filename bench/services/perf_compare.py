#!/usr/bin/env python3
"""perf_compare.py: the samples of each leaf function (dso, symbol) of a
service's processes in several perf_share.py inputs of the same work,
side by side, sorted by how far the mean of the second group's runs moved
from the first group's: what changed between two settings (without
libpprof, with it, onethread.c's thread alone).

  perf_compare.py A1.script,A2.script B1.script,B2.script [N]   (COMM as perf_share.py)
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perf_share import COMM, resolve, samples, short  # noqa: E402


def leafs(path):
    """Samples per (dso, symbol) of the leaf frame, for COMM's samples."""
    c = collections.Counter()
    with open(path, errors="replace") as f:
        for head, frames in samples(f):
            if head[0] != COMM:
                continue
            fr = resolve(frames)
            if not fr:
                continue
            s, d = next(((s, d) for s, d, inl in fr if not inl), fr[0][:2])
            c[(short(d), s)] += 1
    return c


def mean(cs, k):
    return sum(c.get(k, 0) for c in cs) / len(cs)


def main():
    first = [leafs(p) for p in sys.argv[1].split(",")]
    second = [leafs(p) for p in sys.argv[2].split(",")]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    names = sys.argv[1].split(",") + sys.argv[2].split(",")
    every = set().union(*first, *second)
    print("totals: " + "  ".join(f"{nm} {sum(c.values())}" for nm, c in zip(names, first + second)))
    for dso in sorted({k[0] for k in every}):
        row = [sum(v for k, v in c.items() if k[0] == dso) for c in first + second]
        if max(row) >= 50:
            print(f"dso {dso:20s} " + " ".join(f"{x:7d}" for x in row))
    rows = sorted(every, key=lambda k: -abs(mean(second, k) - mean(first, k)))
    print(f"{'dso':18s} {'symbol':42s} " + " ".join(f"{os.path.basename(nm)[:7]:>7s}" for nm in names) + "   delta")
    for k in rows[:n]:
        vals = [c.get(k, 0) for c in first + second]
        print(f"{k[0]:18s} {k[1][:42]:42s} " + " ".join(f"{x:7d}" for x in vals) +
              f" {mean(second, k) - mean(first, k):+8.1f}")


if __name__ == "__main__":
    main()
