#!/usr/bin/env bash
# test_history_dump.sh: the history's dumps (LIBPPROF_HISTORY_DUMP_DIR)
# (test-labels: slow)
#
# prog_spans_linked (LIBPPROF_HISTORY=60, dumps into a directory, at most
# 3 kept, a dump when a span lasts 250 ms or more): one request in 50
# burns 300 ms in slow_request_work, one slow span every 0.8 s or so, and
# 3 s after the start the program calls pprof_history_dump() 1000 times
# in a row.
#   - the first slow span's end is followed by a dump within 1 s;
#   - after 10 s (a dozen slow spans and the storm of 1000 calls, all
#     triggers): 3 dumps in the directory, no temporary file left, the
#     index's row counts 1000 triggers or more and at most one dump a
#     second (12 at most in 10 s);
#   - the newest dump is gzipped pprof that go tool pprof reads: a CPU
#     profile with slow_request_work in it, its comment naming the dump;
#   - LIBPPROF_HISTORY_DUMP_DIR relative: refused in one line, no dumps,
#     pprof_history_dump() answers PPROF_ENOTSUP (the program's ok=0).
# prog_spans_linked again (its worker burns a core) with
# LIBPPROF_HISTORY_DUMP_CPU=50, LIBPPROF_HISTORY_DUMP_RSS_MB=1 and
# LIBPPROF_HISTORY_DUMP_AT_EXIT=1, for 4.5 s, then SIGTERM:
#   - within 3 s of its start, a dump whose comment names _RSS_MB and one
#     naming _CPU; one of each only (its use stays over the thresholds: a
#     dump when it rises to them, not every second);
#   - it exits within 10 s, and its last dump names _AT_EXIT and has
#     slow_request_work, an allocation, a mutex and a block file beside it.
# Usage: test_history_dump.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
PROG=$BUILD/tests/prog_spans_linked
DIR=$TMP/dumps
mkdir -p "$DIR"

pp_start dumps env LIBPPROF_HISTORY=60 LIBPPROF_HISTORY_DUMP_DIR="$DIR" LIBPPROF_HISTORY_DUMPS=3 \
    LIBPPROF_HISTORY_DUMP_SPAN_MS=250 PROG_DUMP_STORM=1000 "$PROG" 10 300 50
port=$(pp_wait_line "$TMP/dumps.out" '^port=[0-9]+' 10 "$PID" | cut -d= -f2) ||
    pp_give_up "prog_spans_linked did not serve" dumps
URL=http://127.0.0.1:$port/debug/pprof
end=$(pp_wait_line "$TMP/dumps.out" '^first_slow_end=' 10 "$PID" | cut -d= -f2) ||
    pp_give_up "prog_spans_linked ended no slow request" dumps
first=
for _ in $(seq 100); do
    first=$(ls "$DIR"/libpprof-"$PID"-1-cpu.pb.gz 2>/dev/null) && break
    sleep 0.05
done
lag=$(awk -v f="$(stat -c '%.9Y' "$first" 2>/dev/null || echo 0)" -v e="$end" 'BEGIN { printf "%.3f", f - e / 1e9 }')
pp_check "a dump ${lag} s after the first slow span ended (1 s at most)" \
    awk -v l="$lag" -v f="$first" 'BEGIN { exit !(f != "" && l >= -0.05 && l <= 1) }'

sleep 10
storm=$(grep '^storm=' "$TMP/dumps.out")
pp_check "the program called pprof_history_dump 1000 times, each answered 0 ($storm)" test "$storm" = "storm=1000 ok=1000"
files=$(ls "$DIR" | grep -c "^libpprof-$PID-.*-cpu.pb.gz$")
tmps=$(ls -A "$DIR" | grep -c '\.tmp$')
pp_check "$files dumps kept (LIBPPROF_HISTORY_DUMPS=3), $tmps temporary files left" test "$files" = 3 -a "$tmps" = 0
row=$(curl -sS --max-time 10 "$URL/" | grep -o 'dumps (LIBPPROF_HISTORY_DUMP_DIR)[^<]*')
pp_note "index: $row"
read -r written triggers <<<"$(echo "$row" | sed -n 's/.*: \([0-9]*\) written of \([0-9]*\) triggers.*/\1 \2/p')"
age=$(ps -o etimes= -p "$PID" | tr -d " ")
pp_check "the storm coalesced: ${written:-?} dumps of ${triggers:-?} triggers in ${age} s (1000 triggers or more, a dump a second at most)" \
    awk -v w="${written:-0}" -v t="${triggers:-0}" -v a="$age" 'BEGIN { exit !(t >= 1000 && w >= 3 && w <= a + 1) }'
newest=$(ls -t "$DIR"/libpprof-"$PID"-*-cpu.pb.gz | head -1)
pp_pprof -top -unit=ms "$newest" >"$TMP/newest.top" 2>&1
pp_check "the newest dump ($(basename "$newest")) reads as a CPU profile with slow_request_work" \
    grep -q 'slow_request_work' "$TMP/newest.top"
pp_check "its comment names the dump ($(go tool pprof -comments "$newest" 2>/dev/null | grep -m1 'history dump'))" \
    sh -c "go tool pprof -comments '$newest' 2>/dev/null | grep -q 'history dump [0-9]* of process $PID'"
pp_stop "$PID" >/dev/null

pp_start rel env LIBPPROF_HISTORY=60 LIBPPROF_HISTORY_DUMP_DIR=relative/dumps PROG_DUMP_STORM=5 "$PROG" 10 300 50
RPID=$PID
pp_wait_line "$TMP/rel.out" '^storm=' 10 "$RPID" >/dev/null
line=$(grep -c '^libpprof: ignoring LIBPPROF_HISTORY_DUMP_DIR=relative/dumps' "$TMP/rel.err" 2>/dev/null)
pp_check "a relative LIBPPROF_HISTORY_DUMP_DIR: one line refusing it, pprof_history_dump answers ENOTSUP ($(grep '^storm=' "$TMP/rel.out"))" \
    test "$line" = 1 -a "$(grep '^storm=' "$TMP/rel.out")" = "storm=5 ok=0"
pp_stop "$RPID" >/dev/null

# ---- thresholds and exit
DIR2=$TMP/dumps2
mkdir -p "$DIR2"
pp_start th env LIBPPROF_HISTORY=60 LIBPPROF_HISTORY_DUMP_DIR="$DIR2" LIBPPROF_HISTORY_DUMPS=10 \
    LIBPPROF_HISTORY_DUMP_CPU=50 LIBPPROF_HISTORY_DUMP_RSS_MB=1 LIBPPROF_HISTORY_DUMP_AT_EXIT=1 "$PROG" 10 300 50
TPID=$PID
pp_wait_line "$TMP/th.out" '^port=[0-9]+' 10 "$TPID" >/dev/null || pp_give_up "prog_spans_linked did not serve" th
t0=$(ps -o lstart= -p "$TPID" | xargs -I{} date -d {} +%s)
sleep 4.5
# reason FILE: the dump's comment
reason() { go tool pprof -comments "$1" 2>/dev/null | grep -m1 'history dump'; }
for f in "$DIR2"/libpprof-"$TPID"-*-cpu.pb.gz; do
    echo "$(stat -c %Y "$f") $(reason "$f")"
done >"$TMP/reasons"
pp_note "dumps before the exit: $(tr '\n' '|' <"$TMP/reasons")"
for v in RSS_MB CPU; do
    n=$(grep -c "LIBPPROF_HISTORY_DUMP_$v" "$TMP/reasons")
    when=$(awk -v v="LIBPPROF_HISTORY_DUMP_$v" -v t0="$t0" 'index($0, v) { print $1 - t0; exit }' "$TMP/reasons")
    pp_check "one dump names LIBPPROF_HISTORY_DUMP_$v ($n), ${when:-?} s after the start (3 s at most)" \
        test "$n" = 1 -a -n "$when" -a "${when:-9}" -le 3
done
kill -TERM "$TPID"
pp_check "SIGTERM: the program exits within 10 s" pp_wait_gone "$TPID" 100 0.1
last=$(ls -t "$DIR2"/libpprof-"$TPID"-*-cpu.pb.gz | head -1)
pp_check "the last dump names LIBPPROF_HISTORY_DUMP_AT_EXIT ($(reason "$last"))" \
    sh -c "go tool pprof -comments '$last' 2>/dev/null | grep -q LIBPPROF_HISTORY_DUMP_AT_EXIT"
pp_pprof_shows "... and has slow_request_work" slow_request_work -top "$last"
seq=${last%-cpu.pb.gz}
pp_check "... with allocs, mutex and block files beside it" \
    test -s "$seq-allocs.pb.gz" -a -s "$seq-mutex.pb.gz" -a -s "$seq-block.pb.gz"
pp_finish
