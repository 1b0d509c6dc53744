#!/usr/bin/env bash
# test-labels: slow
# test_preload.sh: the no-rebuild mode. LD_PRELOAD=libpprof.so with
# LIBPPROF_ADDR serves a program that is not linked with libpprof: its CPU
# profile names its functions; the listening socket does not survive exec
# and a forked child does not serve on it (an exec'd preloaded child joins
# the serving ancestor as a member of its tree) until the parent exits and
# the child takes the endpoint over; with the port taken the program
# runs to completion with one "libpprof:" line on stderr; LIBPPROF_ADDR=off
# serves nothing; an invalid LIBPPROF_CPU_HZ gives one line and the default;
# a lone serving process answers ?pid= of another with a 404.
# Usage: test_preload.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_plain

if [ -n "$(readelf -W -d "$PROG" | grep -E 'NEEDED.*libpprof')" ]; then
    pp_bad "premise: prog_plain must not be linked with libpprof"
else
    pp_ok "prog_plain is not linked with libpprof"
fi

# listen_inode PORT: the inode of the socket listening on 127.0.0.1:PORT.
listen_inode() {
    awk -v p="$(printf '%04X' "$1")" '$2 == "0100007F:" p && $4 == "0A" { print $10; exit }' /proc/net/tcp
}

# sockets PID: the socket inodes among the open files of PID.
sockets() {
    ls -l "/proc/$1/fd" 2>/dev/null | sed -n 's/.*-> socket:\[\([0-9]*\)\]$/\1/p'
}

# ---- the main run: profile, fork and exec children, a second instance
pp_serve main env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ "$PROG" 5 3 "$TMP/exec-child.err" ||
    pp_give_up "preloaded prog_plain did not serve" main
main=$PID
port=$PORT
base=http://127.0.0.1:$port/debug/pprof
pp_ok "preloaded prog_plain serves on 127.0.0.1:$port"

curl -sS --max-time 10 -o "$TMP/prof.pb.gz" -w '%{http_code}' "$base/profile?seconds=2" >"$TMP/prof.code" 2>&1 &
prof=$!

inode=$(listen_inode "$port")
if [ -n "$inode" ] && sockets "$main" | grep -qx "$inode"; then
    pp_ok "listening socket (inode $inode) belongs to the program"
else
    pp_bad "cannot find the listening socket of the program (inode '$inode')"
fi

forked=$(pp_wait_line "$TMP/main.out" '^fork-child=[0-9]+$' 5) && forked=${forked#fork-child=}
execd=$(pp_wait_line "$TMP/main.out" '^exec-child=[0-9]+$' 5) && execd=${execd#exec-child=}
for i in $(seq 50); do
    [ "$(cat "/proc/$execd/comm" 2>/dev/null)" = sleep ] && break
    sleep 0.05
done
if [ -n "$execd" ] && [ "$(cat "/proc/$execd/comm" 2>/dev/null)" = sleep ]; then
    s=$(sockets "$execd")
    if [ -n "$inode" ] && ! grep -qx "$inode" <<<"$s" && [ "$(grep -c . <<<"$s")" -le 1 ]; then
        pp_ok "exec'd child (sleep, pid $execd) holds no listening socket (only its hub connection: $(echo $s))"
    else
        pp_bad "exec'd child has sockets open: $(echo $s) (listening: $inode)" "$(ls -l "/proc/$execd/fd")"
    fi
else
    pp_bad "exec'd child not found ($execd)"
fi
if [ -n "$forked" ] && pp_alive "$forked"; then
    if [ -n "$inode" ] && ! sockets "$forked" | grep -qx "$inode"; then
        pp_ok "forked child (pid $forked) does not hold the listening socket"
    else
        pp_bad "forked child holds the listening socket $inode" "$(ls -l "/proc/$forked/fd")"
    fi
else
    pp_bad "forked child not found ($forked)"
fi

# The exec'd child is itself preloaded, and an ancestor serves: it joins
# that hub (listed on its index) instead of trying the port, and runs on
# with nothing on stderr.
sleep 0.3
n=$(grep -c '' "$TMP/exec-child.err" 2>/dev/null)
if [ "${n:-0}" = 0 ] && pp_alive "$execd" &&
    curl -sS --max-time 10 "$base/" | grep -q "pid=$execd\">$execd</a> (sleep"; then
    pp_ok "exec'd preloaded child joined the hub and runs on (listed as sleep, nothing on stderr)"
else
    pp_bad "exec'd preloaded child: want it on the hub's index, running, with nothing on stderr" \
        "$(cat "$TMP/exec-child.err" 2>/dev/null)"
fi

wait $prof
if [ "$(cat "$TMP/prof.code")" = 200 ]; then
    top=$(pp_pprof -top -nodecount=30 "$TMP/prof.pb.gz" 2>&1)
    if printf '%s\n' "$top" | grep -qE ' busy_loop_for_preload$' && printf '%s\n' "$top" | grep -qE ' main$'; then
        pp_ok "CPU profile names busy_loop_for_preload and main"
    else
        pp_bad "CPU profile lacks busy_loop_for_preload" "$top"
    fi
    cum=$(printf '%s\n' "$top" | awk '$6 == "busy_loop_for_preload" { print $5 }' | tr -d %)
    if pp_in_range "$cum" 80 100; then
        pp_ok "busy_loop_for_preload has $cum% of the CPU"
    else
        pp_bad "busy_loop_for_preload has only '$cum'% of the CPU" "$top"
    fi
else
    pp_bad "profile?seconds=2 on the preloaded program failed: $(cat "$TMP/prof.code")"
fi

# A second instance on the same port, while the first holds it.
timeout 20 env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$port "$PROG" 0.3 -1 >"$TMP/second.out" 2>"$TMP/second.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(tail -1 "$TMP/second.out")" = "done" ]; then
    pp_ok "second instance with the port taken runs to completion"
else
    pp_bad "second instance with the port taken: exit $rc" "$(cat "$TMP/second.out" "$TMP/second.err")"
fi
if [ "$(grep -c '' "$TMP/second.err")" = 1 ] && grep -q '^libpprof:' "$TMP/second.err"; then
    pp_ok "second instance printed one line: $(cat "$TMP/second.err")"
else
    pp_bad "second instance: want exactly one stderr line starting 'libpprof:'" "$(cat "$TMP/second.err")"
fi
code=$(curl -sS --max-time 5 -o "$TMP/cmdline" -w '%{http_code}' "$base/cmdline" 2>&1)
if [ "$code" = 200 ] && tr '\0' ' ' <"$TMP/cmdline" | grep -q '5 3'; then
    pp_ok "the port still belongs to the first instance"
else
    pp_bad "after the second instance, the port answers '$code' with $(tr '\0' ' ' <"$TMP/cmdline" 2>/dev/null)"
fi

# The first instance finishes; its forked child (still sleeping) takes the
# endpoint over at the same address (docs/process-trees.md, "Takeover"),
# with a listening socket of its own.
pp_wait_gone "$main" 100 0.1 || true
{ wait "$main"; } 2>/dev/null
rc=$?
if [ $rc -eq 0 ] && [ "$(tail -1 "$TMP/main.out")" = "done" ] && [ ! -s "$TMP/main.err" ]; then
    pp_ok "preloaded program ran to completion (exit 0, nothing on stderr)"
else
    pp_bad "preloaded program: exit $rc" "$(cat "$TMP/main.out" "$TMP/main.err")"
fi
if pp_alive "$forked"; then
    t0=$(date +%s%N)
    pp_wait_http "$base/cmdline" 3
    ms=$((($(date +%s%N) - t0) / 1000000))
    hub=$(curl -s --max-time 5 "$base/" | grep -o 'this process [0-9]* ([^)]*) is the hub')
    pp_check "after the parent exits, its forked child takes the endpoint over within 2 s ($ms ms: ${hub:-no hub})" \
        test "$ms" -lt 2000 -a "$hub" = "this process $forked (prog_plain) is the hub"
    new_inode=$(listen_inode "$port")
    pp_check "with a listening socket of its own (inode $new_inode, the parent's was $inode)" \
        test -n "$new_inode" -a "$new_inode" != "$inode"
else
    pp_bad "forked child exited too early to check the port"
fi

# ---- LIBPPROF_ADDR=off
pp_start off env LD_PRELOAD="$LIB" LIBPPROF_ADDR=off "$PROG" 1 -1
off=$PID
if pp_wait_line "$TMP/off.out" '^pid=' 5 >/dev/null; then
    sleep 0.3
    s=$(sockets "$off")
    th=$(ls "/proc/$off/task" 2>/dev/null | wc -l)
    if [ -z "$s" ] && [ "$th" = 1 ]; then
        pp_ok "LIBPPROF_ADDR=off: no socket, no extra thread"
    else
        pp_bad "LIBPPROF_ADDR=off: sockets '$(echo $s)', $th threads" "$(ls -l "/proc/$off/fd")"
    fi
else
    pp_bad "LIBPPROF_ADDR=off: program did not start"
fi
{ wait "$off"; } 2>/dev/null
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$TMP/off.err" ]; then
    pp_ok "LIBPPROF_ADDR=off: exit 0, nothing on stderr"
else
    pp_bad "LIBPPROF_ADDR=off: exit $rc" "$(cat "$TMP/off.err")"
fi

# ---- LIBPPROF_CPU_HZ: an invalid value (the default is used) and, to show
# the variable is read at all, a valid one.
pp_serve hzbad env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_CPU_HZ=abc "$PROG" 10 -1
bad_pid=$PID bad_port=$PORT
pp_serve hz250 env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_CPU_HZ=250 "$PROG" 10 -1
good_pid=$PID good_port=$PORT
curl -sS --max-time 10 -o "$TMP/hzbad.pb.gz" "http://127.0.0.1:$bad_port/debug/pprof/profile?seconds=1" &
c1=$!
curl -sS --max-time 10 -o "$TMP/hz250.pb.gz" "http://127.0.0.1:$good_port/debug/pprof/profile?seconds=1" &
c2=$!
wait $c1 $c2
p_bad=$(pp_pprof -raw "$TMP/hzbad.pb.gz" 2>/dev/null | awk '/^Period:/ { print $2 }')
p_good=$(pp_pprof -raw "$TMP/hz250.pb.gz" 2>/dev/null | awk '/^Period:/ { print $2 }')
if [ "$p_good" = 4000000 ]; then
    pp_ok "LIBPPROF_CPU_HZ=250: period 4000000 ns"
else
    pp_bad "LIBPPROF_CPU_HZ=250: period '$p_good' (want 4000000)"
fi
if [ "$p_bad" = 10000000 ]; then
    pp_ok "LIBPPROF_CPU_HZ=abc: the default 100 Hz (period 10000000 ns)"
else
    pp_bad "LIBPPROF_CPU_HZ=abc: period '$p_bad' (want 10000000)"
fi
if [ "$(grep -c '' "$TMP/hzbad.err")" = 1 ] && grep -q 'LIBPPROF_CPU_HZ' "$TMP/hzbad.err"; then
    pp_ok "LIBPPROF_CPU_HZ=abc: one stderr line: $(cat "$TMP/hzbad.err")"
else
    pp_bad "LIBPPROF_CPU_HZ=abc: want exactly one stderr line naming the variable" "$(cat "$TMP/hzbad.err")"
fi
if [ ! -s "$TMP/hz250.err" ]; then
    pp_ok "LIBPPROF_CPU_HZ=250: nothing on stderr"
else
    pp_bad "LIBPPROF_CPU_HZ=250: stderr" "$(cat "$TMP/hz250.err")"
fi
for p in $bad_pid $good_pid; do
    if pp_alive "$p"; then
        pp_ok "pid $p kept running while profiled"
    else
        pp_bad "pid $p died" "$(cat "$TMP/hzbad.err" "$TMP/hz250.err")"
    fi
done

# A process that serves alone answers ?pid= of any other process with a
# 404 naming itself, never with its own threads.
if pp_serve alone env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ sleep 10; then
    code=$(curl -sS --max-time 10 -o "$TMP/stranger" -w '%{http_code}' \
        "http://127.0.0.1:$PORT/debug/pprof/goroutine?debug=2&pid=999999")
    pp_check "goroutine?debug=2&pid=999999 of a lone sleep: 404 ($code: $(head -c 100 "$TMP/stranger"))" \
        test "$code" = 404 -a -n "$(grep "no process 999999 in the tree; the tree: $PID" "$TMP/stranger")"
else
    pp_bad "a preloaded sleep did not serve" "$(cat "$TMP/alone.err")"
fi

pp_finish
