#!/usr/bin/env bash
# test-labels: plain-only slow
# test_limits.sh: the built-in server under abuse (preload mode, prog_plain).
# 1,000 idle and 200 slow-header connections, reopened whenever closed,
# for 15 s while the index is timed every 0.25 s on a connection of its
# own: every index request answered 200, the median under 100 ms, at most
# 2% over it (bench/abuse/run.sh measures 60 s, and the host's own work);
# an idle connection and one sending a byte a second are closed after
# 10 s (9-14 s here); a request head over 8 KiB gets 431; 64 concurrent
# profile?seconds=5 get 16 profiles and 48 503s with Retry-After, all
# within 15 s; with RLIMIT_NOFILE 128 the server takes 6 connections into
# libmicrohttpd and a 7th concurrent profile request gets a 503 at once;
# 200 clients that ask for profile?seconds=30 and leave after 1 s leave no
# thread, descriptor or timer behind.
# Usage: test_limits.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_plain

if ! pp_serve host env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ "$PROG" 300 -1; then
    pp_give_up "prog_plain serves under LD_PRELOAD" host
fi
host=$PID
base=http://127.0.0.1:$PORT/debug/pprof

# --- abuse
figures=$(python3 "$SRC/bench/abuse/abuse.py" 127.0.0.1 "$PORT" 1000 200 15)
fig() { echo "$figures" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
pp_note "abuse: $figures"
pp_check "under 1,000 idle and 200 slow connections every index request is answered 200 ($(fig index_200) of $(fig index_requests))" \
    eval 'test "$(fig index_requests)" -ge 40 && test "$(fig index_200)" = "$(fig index_requests)"'
pp_check "  ... with a median under 100 ms ($(fig index_median_ms) ms) and at most 2% over 100 ms ($(fig index_over_100ms), slowest $(fig index_max_ms) ms)" \
    eval 'awk -v m="$(fig index_median_ms)" "BEGIN { exit !(m < 100) }" &&
          test "$(( $(fig index_over_100ms) * 50 ))" -le "$(fig index_requests)"'
pp_check "  ... and the server closed the attackers' connections ($(fig closed_by_server))" test "$(fig closed_by_server)" -gt 1000

# --- timeouts and sizes
timing=$(python3 - "$PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
idle = socket.create_connection(("127.0.0.1", port))
slow = socket.create_connection(("127.0.0.1", port))
big = socket.create_connection(("127.0.0.1", port))
big.sendall(b"GET /debug/pprof/ HTTP/1.1\r\nX-Big: " + b"a" * 9000)
answer = big.recv(200).split(b"\r\n")[0].decode()
start, closed = time.monotonic(), {}
head = b"GET /debug/pprof/ HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
i = 0
idle.settimeout(0.5)
slow.settimeout(0.5)
while len(closed) < 2 and time.monotonic() - start < 20:
    for name, s in (("idle", idle), ("slow", slow)):
        if name in closed:
            continue
        try:
            if name == "slow" and i < len(head):
                s.send(head[i:i + 1])
            if s.recv(100) == b"":
                closed[name] = time.monotonic() - start
        except socket.timeout:
            pass
        except OSError:
            closed[name] = time.monotonic() - start
    i += 1
print("big=%s idle=%.1f slow=%.1f" % (answer.replace(" ", "_"), closed.get("idle", -1), closed.get("slow", -1)))
PY
)
pp_note "timeouts: $timing"
val() { echo "$timing" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
pp_check "a request head over 8 KiB: 431 ($(val big))" eval 'val big | grep -q "^HTTP/1.1_431"'
pp_check "an idle connection is closed after 10 s ($(val idle) s)" \
    awk -v t="$(val idle)" 'BEGIN { exit !(t >= 9 && t <= 14) }'
pp_check "a connection sending a byte a second is closed after 10 s ($(val slow) s)" \
    awk -v t="$(val slow)" 'BEGIN { exit !(t >= 9 && t <= 14) }'

# --- 64 concurrent 5-second profiles
start=$SECONDS
pids=()
for i in $(seq 64); do
    curl -s -D "$TMP/c$i.hdr" -o "$TMP/c$i.body" --max-time 30 "$base/profile?seconds=5" &
    pids+=($!)
done
wait "${pids[@]}" 2>/dev/null
sleep 0.1
ok=0 busy=0 retry=0
for i in $(seq 64); do
    case $(head -1 "$TMP/c$i.hdr" 2>/dev/null | awk '{ print $2 }') in
        200) ok=$((ok + 1)) ;;
        503) busy=$((busy + 1)); grep -qi '^Retry-After: ' "$TMP/c$i.hdr" && retry=$((retry + 1)) ;;
    esac
done
pp_check "64 concurrent profile?seconds=5: 16 profiles, 48 503s with Retry-After, in $((SECONDS - start)) s ($ok, $busy, $retry)" \
    eval 'test $ok = 16 -a $busy = 48 -a $retry = 48 -a $((SECONDS - start)) -le 15'

# --- 200 clients leave their 30-second profiles after 1 s
count() { ls "/proc/$host/$1" 2>/dev/null | wc -l; }
timers() { local n; n=$(grep -c '^ID:' "/proc/$host/timers" 2>/dev/null); echo "${n:-0}"; }
curl -s -o /dev/null --max-time 10 "$base/"
sleep 1
fds0=$(count fd) threads0=$(count task) timers0=$(timers)
pids=()
for i in $(seq 200); do
    curl -s -o /dev/null --max-time 1 "$base/profile?seconds=30" &
    pids+=($!)
done
wait "${pids[@]}" 2>/dev/null
sleep 3
fds1=$(count fd) threads1=$(count task) timers1=$(timers)
pp_check "200 clients leaving 30 s profiles leave no descriptor ($fds0 -> $fds1), thread ($threads0 -> $threads1) or timer ($timers0 -> $timers1)" \
    test "$fds1" -le "$fds0" -a "$threads1" -le "$threads0" -a "$timers1" -le "$timers0"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$base/profile?seconds=1")
pp_check "  ... and the next profile is served ($code)" test "$code" = 200
pp_stop "$host" >/dev/null 2>&1

# --- few descriptors: the connection cap answers 503 itself
if pp_serve few bash -c "ulimit -n 128 && exec env LD_PRELOAD='$LIB' LIBPPROF_ADDR=127.0.0.1:@PORT@ '$PROG' 60 -1"; then
    base=http://127.0.0.1:$PORT/debug/pprof
    pids=()
    for i in $(seq 7); do
        curl -s -D "$TMP/f$i.hdr" -o "$TMP/f$i.body" --max-time 20 "$base/profile?seconds=3" &
        pids+=($!)
        sleep 0.2
    done
    wait "${pids[@]}" 2>/dev/null
    ok=0 busy=0
    for i in $(seq 7); do
        case $(head -1 "$TMP/f$i.hdr" 2>/dev/null | awk '{ print $2 }') in
            200) ok=$((ok + 1)) ;;
            503) grep -q "too many connections" "$TMP/f$i.body" && busy=$((busy + 1)) ;;
        esac
    done
    pp_check "RLIMIT_NOFILE 128: 6 connections at once, the 7th a 503 from the connection cap ($ok, $busy)" \
        test "$ok" = 6 -a "$busy" = 1
    pp_stop "$PID" >/dev/null 2>&1
else
    pp_bad "prog_plain serves with RLIMIT_NOFILE 128" "$(cat "$TMP/few.err")"
fi
pp_finish
