#!/usr/bin/env python3
"""perf_share.py: libpprof.so's part of a service's samples, from
`perf script --no-inline -F comm,tid,ip,sym,dso,period` output of
pg_perf.sh's data (dwarf call chains).

  perf_share.py RUN.script [TOPN]   (comm postgres; COMM=name for another)

Prints: samples per comm/dso of the leaf; libpprof.so's self samples per
symbol (share of the service's samples); for the top 8 symbols the chains
that reach them (the libpprof entry frame, i.e. the outermost libpprof
frame, and the first 2 frames outside libpprof); and samples outside
libpprof.so that libpprof's own code called (a libpprof frame that is not
main_with_exit_hook and is not merely the forwarding call of a hook)."""
import collections
import os
import re
import sys

COMM = os.environ.get("COMM", "postgres")

LINE = re.compile(r"^\s*([0-9a-f]+) (.*) \((.*)\)$")

# hook entries that forward to the real function: time in the callee below
# them is the program's own work (the real malloc, recv, epoll_wait...)
FORWARDERS = {
    "malloc", "free", "calloc", "realloc", "recv", "recvfrom", "recvmsg", "accept", "accept4", "epoll_wait",
    "epoll_pwait", "poll", "ppoll", "select", "pselect", "nanosleep", "clock_nanosleep", "usleep",
    "sigtimedwait", "syscall", "close", "open", "open64", "openat", "openat64", "__open_2", "__open64_2",
    "__openat_2", "__openat64_2", "sigprocmask", "pthread_sigmask", "sigaction", "pqsignal", "socket",
    "pipe", "pipe2", "epoll_create1", "eventfd", "dup2", "dup3", "mmap", "mmap64", "munmap", "mremap",
    "pthread_mutex_lock", "sem_wait", "kill", "setitimer", "make_openat", "set_handler", "signal",
    "main_with_exit_hook", "__libc_start_main", "fork", "_Fork", "execve", "exit",
    "posix_memalign", "memalign", "aligned_alloc", "realloc_impl", "malloc_slow", "calloc_slow",
    "free_slow", "next_close", "timer_settime", "setrlimit", "prlimit64", "pthread_create",
}


def samples(f):
    """(header fields, [(symbol, dso)] leaf first) of each sample."""
    head, frames = None, []
    for line in f:
        line = line.rstrip("\n")
        if not line:
            if head is not None:
                yield head, frames
            head, frames = None, []
            continue
        if not line.startswith("\t") and not line.startswith(" "):
            head = line.split()
            frames = []
            continue
        m = LINE.match(line)
        if m:
            frames.append((m.group(2), m.group(3)))
    if head is not None:
        yield head, frames


def resolve(frames):
    """(sym, dso, inlined) per frame, inlined frames given the dso of the
    next real frame (the one they are inlined into)."""
    out = []
    pending = []
    for sym, dso in frames:
        if dso == "inlined":
            pending.append(sym)
            continue
        for s in pending:
            out.append((s, dso, True))
        pending = []
        out.append((sym, dso, False))
    for s in pending:
        out.append((s, "?", True))
    return out


def short(dso):
    """The file name of a dso's path; a library loaded under another name
    counts as libpprof.so when LIBPPROF_SO names it."""
    name = dso.rsplit("/", 1)[-1]
    return "libpprof.so" if name == os.environ.get("LIBPPROF_SO") else name


def main():
    path = sys.argv[1]
    topn = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    comm_dso = collections.Counter()
    pg_total = 0
    self_sym = collections.Counter()
    chains = collections.defaultdict(collections.Counter)
    entry_of = collections.defaultdict(collections.Counter)
    induced = collections.Counter()
    induced_total = 0
    incl_by_entry = collections.Counter()  # libpprof-inclusive samples (not forwarding), by entry hook
    with open(path, errors="replace") as f:
        for head, frames in samples(f):
            comm = head[0]
            fr = resolve(frames)
            if not fr:
                continue
            leaf = next(((s, d) for s, d, inl in fr if not inl), fr[0][:2])
            comm_dso[(comm, short(leaf[1]))] += 1
            if comm != COMM:
                continue
            pg_total += 1
            real = [(s, short(d)) for s, d, inl in fr if not inl]
            if short(leaf[1]) == "libpprof.so":
                sym = leaf[0]
                self_sym[sym] += 1
                # outermost libpprof frame of the innermost run of libpprof frames
                i = 0
                while i < len(real) and real[i][1] == "libpprof.so":
                    i += 1
                entry = real[i - 1][0]
                callers = " <- ".join(f"{s}[{d}]" for s, d in real[i:i + 2])
                chains[sym][f"{entry} <- {callers}"] += 1
                entry_of[sym][entry] += 1
                incl_by_entry[entry] += 1
                continue
            # leaf outside libpprof: the nearest libpprof frame above it
            for j, (s, d) in enumerate(real):
                if d == "libpprof.so":
                    if s in FORWARDERS:
                        break
                    k = j
                    while k < len(real) and real[k][1] == "libpprof.so":
                        k += 1
                    entry = real[k - 1][0]
                    induced[(s, f"{leaf[0]}[{short(leaf[1])}]", entry)] += 1
                    induced_total += 1
                    incl_by_entry[entry] += 1
                    break

    total = sum(comm_dso.values())
    print(f"# {path}: {total} samples on CPU 0, {pg_total} of comm {COMM}")
    print("## leaf comm/dso (top 12)")
    for (c, d), n in comm_dso.most_common(12):
        print(f"{n:8d} {100 * n / total:6.2f}% of all  {c:16s} {d}")
    lib = sum(self_sym.values())
    print(f"## libpprof.so self samples in {COMM}: {lib} = {100 * lib / pg_total:.3f}% of its samples")
    print(f"## samples outside libpprof.so called by libpprof's own code (not forwarding): {induced_total} = "
          f"{100 * induced_total / pg_total:.3f}%")
    print(f"## libpprof self + induced: {lib + induced_total} = {100 * (lib + induced_total) / pg_total:.3f}%")
    print(f"## top {topn} libpprof.so symbols by self samples (share of {COMM}'s samples; of libpprof's)")
    for sym, n in self_sym.most_common(topn):
        print(f"{n:7d} {100 * n / pg_total:6.3f}% {100 * n / lib:5.1f}%  {sym}")
    print("## callers of the top 8 (entry hook <- first 2 frames outside libpprof)")
    for sym, n in self_sym.most_common(8):
        print(f"-- {sym} ({n})")
        for c, m in chains[sym].most_common(6):
            print(f"   {m:6d}  {c}")
    print("## libpprof-inclusive samples (self + induced) by entry hook")
    for e, n in incl_by_entry.most_common(15):
        print(f"{n:7d} {100 * n / pg_total:6.3f}%  {e}")
    print("## induced samples: (libpprof caller, leaf outside libpprof, entry hook)")
    for (s, leafs, e), n in induced.most_common(15):
        print(f"{n:7d} {100 * n / pg_total:6.3f}%  {s} -> {leafs}  (entry {e})")


if __name__ == "__main__":
    main()
