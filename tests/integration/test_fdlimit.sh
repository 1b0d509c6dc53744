#!/usr/bin/env bash
# test_fdlimit.sh: a process with no file descriptor left.
#   - while every descriptor is taken, a client waits in the backlog and
#     the server does not spin: under 0.3 CPU-seconds in 3 s (the accept
#     loop backs off on EMFILE)
#   - once one descriptor is free, the waiting client is answered (cmdline
#     itself needs a descriptor: 200, or a 500 that says why)
#   - a CPU profile taken with one descriptor free has the spinning
#     thread's samples, and comments that say what could not be done
#     (the thread list, the symbolizer's files), instead of coming back
#     empty in silence
# test-labels: plain-only timing
# Usage: test_fdlimit.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

pp_start_helper prog "$BUILD/tests/prog_fdlimit_linked" 1 ||
    pp_give_up "prog_fdlimit_linked did not serve" prog
base=http://127.0.0.1:$PORT/debug/pprof
kill -USR1 "$PID"
full=$(pp_wait_line "$TMP/prog.out" '^full=' 10 "$PID")
pp_check "every descriptor taken ($full)" test -n "$full"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
curl -sS --max-time 30 -o "$TMP/cmdline" -w '%{http_code}' "$base/cmdline" >"$TMP/code" 2>/dev/null &
client=$!
c0=$(cpu_ticks)
sleep 3
c1=$(cpu_ticks)
ticks=$((c1 - c0))
hz=$(getconf CLK_TCK)
pp_check "no descriptor: the client still waits" test ! -s "$TMP/code"
pp_check "no descriptor: the server rests ($ticks ticks of $hz/s in 3 s, under 0.3 s)" test $((ticks * 10)) -lt $((hz * 3))

kill -USR2 "$PID"
pp_wait_line "$TMP/prog.out" '^freed=' 10 "$PID" >/dev/null
wait "$client"
code=$(cat "$TMP/code")
pp_check "one descriptor free: the waiting client is answered ($code: $(head -c 80 "$TMP/cmdline" | tr '\0\n' '  '))" \
    test "$code" = 200 -o \( "$code" = 500 -a -s "$TMP/cmdline" \)

curl -sS --max-time 30 -o "$TMP/cpu.pb.gz" "$base/profile?seconds=2"
pp_pprof -raw "$TMP/cpu.pb.gz" >"$TMP/cpu.raw" 2>&1
n=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $1 ~ /^[0-9]+$/ { n += $1 } END { print n + 0 }' "$TMP/cpu.raw")
pp_check "one descriptor free: the CPU profile has the spinning thread's samples ($n)" test "$n" -ge 50
pp_pprof -comments "$TMP/cpu.pb.gz" >"$TMP/cpu.comments" 2>&1
pp_check "one descriptor free: the profile says the thread list could not be read" \
    grep -q 'thread list (/proc/self/task) could not be read' "$TMP/cpu.comments"
pp_check "one descriptor free: the profile says the symbolizer could not open files" \
    grep -q 'symbolizer could not open' "$TMP/cpu.comments"
pp_stop "$PID"
pp_finish
