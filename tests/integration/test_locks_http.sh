#!/usr/bin/env bash
# test-labels: timing
# test_locks_http.sh: the mutex and block profiles over HTTP, read with
# curl and go tool pprof, from a program with a contended mutex (labeled
# threads) and condition-variable waits, profiled at
# LIBPPROF_MUTEX_FRACTION=1 and LIBPPROF_BLOCK_RATE=1 (every event):
# names, labels, Go's sample types, debug=1 text, seconds=N windows,
# godeltaprof's delta_mutex/delta_block, the index; and with both off, an
# empty profile that says why.
# Usage: test_locks_http.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

LIBPPROF_MUTEX_FRACTION=1 LIBPPROF_BLOCK_RATE=1 pp_start_helper prog "$BUILD/tests/prog_locks_linked" ||
    pp_give_up "prog_locks_linked did not serve" prog
base=http://127.0.0.1:$PORT/debug/pprof
sleep 1.5

pp_pprof -top "$base/mutex" >"$TMP/mutex.top" 2>&1
pp_check "mutex: contend_on_lock waits" grep -q 'contend_on_lock' "$TMP/mutex.top"
pp_check "mutex: pprof shows delay" grep -q '^Type: delay' "$TMP/mutex.top"
pp_pprof -tags "$base/mutex" >"$TMP/mutex.tags" 2>&1
pp_check "mutex: samples carry stage=ingest" grep -q 'ingest' "$TMP/mutex.tags"
pp_pprof -raw "$base/mutex" >"$TMP/mutex.raw" 2>&1
pp_check "mutex: contentions/count delay/nanoseconds" grep -q '^contentions/count delay/nanoseconds' "$TMP/mutex.raw"
pp_pprof -top "$base/block" >"$TMP/block.top" 2>&1
pp_check "block: wait_on_condition waits" grep -q 'wait_on_condition' "$TMP/block.top"
pp_check "block: contend_on_lock blocks too" grep -q 'contend_on_lock' "$TMP/block.top"
curl -sS --max-time 10 "$base/mutex?debug=1" >"$TMP/m1.txt"
pp_check "mutex?debug=1: Go's header" test "$(head -3 "$TMP/m1.txt" | tr '\n' '|')" = '--- mutex:|cycles/second=1000000000|sampling period=1|'
pp_check "mutex?debug=1: frames" grep -qP '^#\t0x[0-9a-f]+\tcontend_on_lock\+0x[0-9a-f]+\t' "$TMP/m1.txt"
curl -sS --max-time 10 "$base/block?debug=1" | head -1 >"$TMP/b1.txt"
pp_check "block?debug=1: Go's header" grep -qx -- '--- contention:' "$TMP/b1.txt"
curl -sS --max-time 10 -D "$TMP/h" -o "$TMP/w.pb.gz" "$base/mutex?seconds=1"
pp_check "mutex?seconds=1: mutex-delta" test "$(pp_header "$TMP/h" Content-Disposition)" = 'attachment; filename="mutex-delta"'
pp_pprof -top "$TMP/w.pb.gz" >"$TMP/w.top" 2>&1
pp_check "mutex?seconds=1: the window has the contention" grep -q 'contend_on_lock' "$TMP/w.top"
for kind in mutex block; do
    curl -sS --max-time 10 -D "$TMP/d$kind" -o "$TMP/d1$kind.pb.gz" "$base/delta_$kind"
    pp_check "delta_$kind: $kind.pprof.gz" test "$(pp_header "$TMP/d$kind" Content-Disposition)" = "attachment; filename=\"$kind.pprof.gz\""
done
sleep 0.5
curl -sS --max-time 10 -o "$TMP/d2.pb.gz" "$base/delta_mutex"
t1=$(pp_pprof -raw "$TMP/d1mutex.pb.gz" 2>/dev/null | awk '/^Samples:/{on=1;next} /^Locations/{on=0} on && /^ *[0-9]+ +[0-9]+:/{s+=$1} END{print s+0}')
t2=$(pp_pprof -raw "$TMP/d2.pb.gz" 2>/dev/null | awk '/^Samples:/{on=1;next} /^Locations/{on=0} on && /^ *[0-9]+ +[0-9]+:/{s+=$1} END{print s+0}')
pp_check "delta_mutex: the second call has only the last 0.5 s ($t2 < $t1 contentions)" test "$t2" -gt 0 -a "$t2" -lt "$t1"
curl -sS --max-time 10 "$base/" >"$TMP/index.html"
pp_check "index lists mutex and block" grep -q 'href="mutex?debug=1"' "$TMP/index.html"
pp_stop "$PID" >/dev/null 2>&1

if pp_start_helper off "$BUILD/tests/prog_locks_linked"; then
    curl -sS --max-time 10 -o "$TMP/off.pb.gz" "http://127.0.0.1:$PORT/debug/pprof/mutex"
    pp_pprof -raw "$TMP/off.pb.gz" >"$TMP/off.raw" 2>&1
    pp_check "mutex while off: empty, with a comment saying so" grep -q 'mutex profiling is off' "$TMP/off.raw"
else
    pp_bad "prog_locks_linked (profiles off) did not serve"
fi
pp_finish
