# hold_connections.py: opens N connections to 127.0.0.1:PORT, sends on each
# the start of an HTTP request (its header never ends, so the server keeps
# the connection and its buffers), prints "held N" and holds them until
# killed. For test_real_services' nginx heap check.
# Usage: python3 hold_connections.py PORT N
import resource
import socket
import sys
import time

port, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200 + b"\r\n")
    held.append(s)
print("held", len(held), flush=True)
time.sleep(3600)
