#!/usr/bin/env python3
"""abuse.py: holds idle and slow-header connections against an endpoint
while timing its index, for test_limits.sh and bench/abuse/run.sh.

    abuse.py HOST PORT IDLE SLOW SECONDS [PREFIX]

Opens IDLE connections that send nothing and SLOW connections that send a
request head one byte a second, and keeps them there: one the server closes
is opened again a second later. Every 0.25 s it times a GET of the index
(PREFIX, default /debug/pprof/) on a connection of its own. Prints one line
of key=value figures: index requests, how many answered 200, the slowest
and median answer in ms, how many took over 100 ms, connections held at
the end, and how many the server closed.
"""
import resource
import selectors
import socket
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
n_idle, n_slow, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
prefix = sys.argv[6] if len(sys.argv) > 6 else "/debug/pprof/"
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n_idle + n_slow + 256), hard))

HEAD = b"GET " + prefix.encode() + b" HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 4000 + b"\r\n\r\n"
sel = selectors.DefaultSelector()
conns = {}    # socket -> [kind, bytes sent]
pending = []  # (time to reopen, kind)
closed_by_server = 0


def open_conn(kind):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setblocking(False)
    try:
        s.connect((host, port))
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        pending.append((time.monotonic() + 1, kind))
        return
    conns[s] = [kind, 0]
    sel.register(s, selectors.EVENT_READ)


for _ in range(n_idle):
    open_conn("idle")
for _ in range(n_slow):
    open_conn("slow")

lat, ok, start = [], 0, time.monotonic()
next_probe = next_byte = start
while time.monotonic() - start < seconds:
    now = time.monotonic()
    if now >= next_byte:
        next_byte = now + 1
        for s, st in list(conns.items()):
            if st[0] == "slow" and st[1] < len(HEAD):
                try:
                    s.send(HEAD[st[1]:st[1] + 1])
                    st[1] += 1
                except OSError:
                    pass
    if now >= next_probe:
        next_probe = now + 0.25
        t0 = time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=5) as p:
                p.sendall(b"GET " + prefix.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = b""
                while True:
                    chunk = p.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            if data.startswith(b"HTTP/1.1 200"):
                ok += 1
        except OSError:
            pass
        lat.append((time.monotonic() - t0) * 1000)
    for key, _ in sel.select(timeout=0.05):
        s = key.fileobj
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:
            sel.unregister(s)
            kind = conns.pop(s)[0]
            s.close()
            closed_by_server += 1
            pending.append((time.monotonic() + 1, kind))
    due = [p for p in pending if p[0] <= time.monotonic()]
    pending = [p for p in pending if p[0] > time.monotonic()]
    for _, kind in due:
        open_conn(kind)

lat.sort()
print("index_requests=%d index_200=%d index_max_ms=%.1f index_median_ms=%.1f index_over_100ms=%d "
      "held=%d closed_by_server=%d" % (len(lat), ok, lat[-1] if lat else -1, lat[len(lat) // 2] if lat else -1,
                                       sum(1 for x in lat if x > 100), len(conns), closed_by_server))
