#!/usr/bin/env python3
"""child_cost.py: the CPU time of a forked child that only sleeps, as
its parent's wait4 counts it, without libpprof, preloaded with the
defaults, and with the history on (LIBPPROF_HISTORY=600): a child that
lives past the 50 ms after which its history starts pays for the start
(the sampler's timers, the collector, its unwind tables); one that
exits before pays nothing for it.

  python3 bench/services/child_cost.py LIBPPROF_SO [ROUNDS (2)] [CHILDREN (20)]

Prints, per round and setting, the mean CPU per child living 200 ms and
per child living 20 ms, in milliseconds.
"""
import os
import subprocess
import sys
import time


def children(n, life):
    """Mean CPU seconds of n children, each sleeping `life` seconds."""
    total = 0.0
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            time.sleep(life)
            os._exit(0)
        _, _, ru = os.wait4(pid, 0)
        total += ru.ru_utime + ru.ru_stime
    return total / n


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--children":
        n = int(sys.argv[2])
        print(" ".join(f"{children(n, life) * 1000:.2f}" for life in (0.2, 0.02)))
        return
    lib = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    n = sys.argv[3] if len(sys.argv) > 3 else "20"
    settings = [("none", {}), ("defaults", {"LD_PRELOAD": lib, "LIBPPROF_ADDR": "127.0.0.1:0"}),
                ("history", {"LD_PRELOAD": lib, "LIBPPROF_ADDR": "127.0.0.1:0", "LIBPPROF_HISTORY": "600"})]
    for r in range(1, rounds + 1):
        for name, env in settings:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--children", n],
                                 env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
            at200, at20 = out.split()
            print(f"round {r} {name:9s} ms of CPU per child: living 200 ms {at200}, living 20 ms {at20}")


if __name__ == "__main__":
    main()
