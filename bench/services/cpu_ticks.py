#!/usr/bin/env python3
# cpu_ticks.py: the CPU time a service has used so far, for
# bench/services/run.sh. Prints "TICKS PROCS": utime + stime + cutime +
# cstime (clock ticks, /proc/<pid>/stat fields 14-17) summed over ROOT and
# every live descendant, and how many processes that is. cutime and cstime
# hold the time of children that have exited and been waited for (a
# postgres backend whose client disconnected), so the sum covers every
# process the service ran, living or gone.
# Usage: cpu_ticks.py ROOT_PID
import os
import sys


def stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    # the command name (field 2) may hold spaces and parentheses
    return s[s.rindex(")") + 2:].split()


def main():
    root = int(sys.argv[1])
    children = {}
    stats = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            f = stat_fields(name)
        except (OSError, ValueError):
            continue
        pid = int(name)
        stats[pid] = f
        children.setdefault(int(f[1]), []).append(pid)  # field 4: ppid
    if root not in stats:
        sys.exit(f"cpu_ticks.py: no process {root}")
    ticks = 0
    procs = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        f = stats[pid]
        # fields 14-17 of stat are 11-14 here (after pid and comm, 0-based)
        ticks += sum(int(x) for x in f[11:15])
        procs += 1
        todo.extend(children.get(pid, []))
    print(ticks, procs)


main()
