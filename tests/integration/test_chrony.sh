#!/usr/bin/env bash
# test_chrony.sh: Debian's chronyd under libpprof, with Debian's options
# (-F 1: a seccomp filter once it has started; -u _chrony: root dropping
# privileges), daemonized as its unit starts it and in the foreground
# (-n), serving NTP to a loopback client (-x: the clock is not touched)
# (test-labels: plain-only slow)
#
# chronyd forks a helper, then enters its filter in the main process.
# Profiling stops in a process before it enters a filter: its threads end
# (a filter may not allow their calls), and a hub's members see it go.
# - the main process runs as _chrony in its filter (Seccomp 2) with one
#   thread: none of libpprof's is left in it;
# - the endpoint serves: chronyd's helper took the hub's place (before, in
#   the foreground, the main process kept its hub thread and its member's
#   connection, and nothing served);
# - the index names the main process as left, "entered a seccomp filter",
#   and ?pid= of it answers 404 saying so;
# - every kind of profile of the tree answers 200;
# - every NTP request of the client is answered, as in a run without
#   libpprof.
# Usage: test_chrony.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

if [ ! -x /usr/sbin/chronyd ] || ! id _chrony >/dev/null 2>&1 || [ ! -x /usr/bin/python3 ]; then
    pp_skip "chrony or python3 is not installed"
    pp_finish
fi
[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }
D=$TMP/chrony
mkdir -p "$D"
chmod 755 "$TMP"
chown _chrony "$D"
NTP=$(pp_free_port)
CMD=$(pp_free_port)
cat >"$D/chrony.conf" <<EOF
pidfile $D/chronyd.pid
driftfile $D/drift
port $NTP
cmdport $CMD
bindaddress 127.0.0.1
bindcmdaddress 127.0.0.1
allow 127.0.0.1
local stratum 8
EOF
# ntp_load SECONDS: NTP client requests, one at a time; prints "sent answered".
ntp_load() {
    python3 - "$NTP" "$1" <<'EOF'
import socket, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1)
pkt = b'\x23' + b'\0' * 47  # version 4, client mode
sent = got = 0
end = time.time() + secs
while time.time() < end:
    s.sendto(pkt, ("127.0.0.1", port))
    sent += 1
    try:
        d, _ = s.recvfrom(512)
        got += len(d) >= 48 and d[0] & 7 == 4
    except socket.timeout:
        pass
print(sent, got)
EOF
}

# start WAY [OPTION]: chronyd with Debian's options, preloaded unless WAY is
# "without"; MAIN = the process in the pidfile.
start() {
    rm -f "$D/chronyd.pid"
    local pre=(env)
    [ "$1" = without ] || pre=(env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT)
    pp_start "chronyd-$1" "${pre[@]}" /usr/sbin/chronyd -f "$D/chrony.conf" -x -F 1 -u _chrony ${2:+"$2"}
    MAIN=""
    for _ in $(seq 50); do
        MAIN=$(cat "$D/chronyd.pid" 2>/dev/null)
        [ -n "$MAIN" ] && grep -q '^Seccomp:.*2' "/proc/$MAIN/status" 2>/dev/null && break
        sleep 0.1
    done
    [ -n "$MAIN" ] && PP_GROUPS+=("$MAIN") # it made its own session
}

stop() {
    kill -TERM "$MAIN" 2>/dev/null
    pp_wait_gone "$MAIN" 50 0.1
}

start without
read -r sent0 got0 < <(ntp_load 2)
pp_check "without libpprof, chronyd answers every NTP request ($got0 of $sent0)" \
    test -n "$got0" -a "$got0" = "$sent0" -a "${sent0:-0}" -gt 50
stop

PORT=$(pp_free_port)
base=http://127.0.0.1:$PORT/debug/pprof
for way in daemon foreground; do
    start "$way" "$([ $way = foreground ] && printf %s -n)"
    pp_check "$way: the main process ($MAIN) runs as _chrony in its seccomp filter with one thread ($(grep -E '^(Uid|Seccomp|Threads):' "/proc/$MAIN/status" 2>/dev/null | tr -s '\t\n' '  '))" \
        sh -c "grep -q '^Seccomp:.2' /proc/$MAIN/status && grep -q '^Threads:.1\$' /proc/$MAIN/status &&
               grep -q \"^Uid:.$(id -u _chrony)\" /proc/$MAIN/status"
    rm -f "$TMP/index.html" "$TMP/why.txt"
    ntp_load 6 >"$TMP/ntp.out" &
    load=$!
    pp_wait_http "$base/cmdline" 10
    curl -sS --max-time 5 -o "$TMP/index.html" "$base/"
    row=$(grep -o 'Process tree.*' "$TMP/index.html" | sed 's/<[^>]*>//g' | head -c 600)
    pp_check "$way: another process of chronyd's serves the endpoint, and names the main one as left ($row)" \
        sh -c "echo '$row' | grep -q 'is the hub' && echo '$row' | grep -q 'left lately: $MAIN (chronyd.*entered a seccomp filter'"
    code=$(curl -sS --max-time 5 -o "$TMP/why.txt" -w '%{http_code}' "$base/profile?seconds=1&pid=$MAIN")
    pp_check "$way: a profile of the main process answers $code, saying why ($(cat "$TMP/why.txt"))" \
        sh -c "[ '$code' = 404 ] && grep -q 'entered a seccomp filter' '$TMP/why.txt'"
    codes=$(pp_every_kind "$base")
    pp_check "$way: every kind of profile of the tree answers 200 ($codes)" \
        sh -c "! echo '$codes' | grep -q ':[^2]'"
    wait $load
    read -r sent got <"$TMP/ntp.out"
    pp_check "$way: chronyd answered every NTP request meanwhile ($got of $sent)" \
        test -n "$got" -a "$got" = "$sent" -a "${sent:-0}" -gt 50
    pp_check "$way: SIGTERM ends chronyd" stop
    if [ "$way" = foreground ]; then # the daemonized one's stderr is /dev/null
        line=$(grep -m1 "^libpprof: pid $MAIN entered a seccomp filter" "$TMP/chronyd-$way.err")
        pp_check "$way: the serving process said why its endpoint went (${line:-no line})" test -n "$line"
    fi
done
pp_finish
