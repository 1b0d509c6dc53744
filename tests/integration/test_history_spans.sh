#!/usr/bin/env bash
# test_history_spans.sh: the history's slow spans only (min_span_ms)
# (test-labels: slow)
#
# prog_spans_linked (LIBPPROF_HISTORY=120): one worker handles requests,
# each in a span of its own; one in 50 burns 300 ms of CPU in
# slow_request_work, the others 10 ms in fast_request_work. After 25 s,
# profile?last=60 (the whole history):
#   with min_span_ms=200: slow_request_work is at least 90% of the
#     profile (every sample of a slow span is in it), and its CPU within
#     15% of the program's own count of the slow requests' CPU (about
#     1,000 samples at 100 Hz: a deviation of 3%, so 15% less what one
#     request in flight adds, 2.7%, is 4 of them), and the comment names
#     the filter;
#   without it: slow_request_work a minority (300 / (300 + 49 * 10) =
#     38% expected; under 50% is 12 deviations);
#   min_span_ms under LIBPPROF_HISTORY_SPAN_MS (100), or without last,
#     from or until: a 400 with its reason.
# The same program with its requests as pprof_do units of work (label
# request=handle, no span), burning and (with LIBPPROF_HISTORY_WALL=1)
# sleeping: the same bounds with min_span_ms=200 in the CPU and the wall
# profile, the comment counts the units, and no profile carries the
# unit's label (pprof.unit: the history's windows keep it to choose the
# samples, and leave it out of what they write), while request=handle
# stays. A waiting thread's unit is read from outside it.
# The same program with LIBPPROF_HISTORY_WALL=1, its requests sleeping
# (300 ms in slow_request_work one in 50, else 1 ms), wall?last=60:
#   with min_span_ms=200: slow_request_work at least 90% of the profile,
#     and within 15% of the program's own count of the slow requests'
#     time (about 2,000 samples at 99 Hz, taken on a clock: the in-flight
#     request is the error, 1.5%);
#   without it: slow_request_work a minority (the program's other threads
#     wait all along);
#   hz= or state= with last=: a 400; wall?last= where only the CPU's
#     history is kept: a 404 that says how to keep it;
#   wall?seconds=3&hz=400 asked 8 s in, beside the history's 99 Hz: a
#     200 sampled at 400 Hz (its samples per second of wall time within
#     2% of 400: the sampler at 99 Hz would give 99), and wall time
#     counted exactly in both: the program's threads (3, as /proc lists
#     them; libpprof's, its history thread too, are left out) each
#     counted all along, so wall ns / duration is their number within 2%
#     in the 400 Hz window and in wall?last=60 (the history's slices
#     across both rate changes:
#     a period lost or counted twice at each change is 0.3%; a slice
#     counted at the wrong period, 4 times too much or too little).
# Usage: test_history_spans.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
PROG=$BUILD/tests/prog_spans_linked

pp_start spans env LIBPPROF_HISTORY=120 "$PROG" 10 300 50
port=$(pp_wait_line "$TMP/spans.out" '^port=[0-9]+' 10 "$PID" | cut -d= -f2) ||
    pp_give_up "prog_spans_linked did not serve" spans
URL=http://127.0.0.1:$port/debug/pprof
pp_start sleeps env LIBPPROF_HISTORY=120 LIBPPROF_HISTORY_WALL=1 "$PROG" 1 300 50 sleep
WPID=$PID
wport=$(pp_wait_line "$TMP/sleeps.out" '^port=[0-9]+' 10 "$WPID" | cut -d= -f2) ||
    pp_give_up "prog_spans_linked sleep did not serve" sleeps
WURL=http://127.0.0.1:$wport/debug/pprof
pp_start units env LIBPPROF_HISTORY=120 "$PROG" 10 300 50 burn do
UPID=$PID
uport=$(pp_wait_line "$TMP/units.out" '^port=[0-9]+' 10 "$UPID" | cut -d= -f2) ||
    pp_give_up "prog_spans_linked do did not serve" units
UURL=http://127.0.0.1:$uport/debug/pprof
pp_start usleeps env LIBPPROF_HISTORY=120 LIBPPROF_HISTORY_WALL=1 "$PROG" 1 300 50 sleep do
uwport=$(pp_wait_line "$TMP/usleeps.out" '^port=[0-9]+' 10 "$PID" | cut -d= -f2) ||
    pp_give_up "prog_spans_linked sleep do did not serve" usleeps
UWURL=http://127.0.0.1:$uwport/debug/pprof
sleep 8
nthr=0 # the program's threads, libpprof's left out
for t in /proc/"$WPID"/task/*; do
    [[ "$(cat "$t/comm" 2>/dev/null)" =~ $PP_OWN_THREADS ]] || nthr=$((nthr + 1))
done
w400=$(curl -sS --max-time 30 -o "$TMP/w400.pb.gz" -w '%{http_code}' "$WURL/wall?seconds=3&hz=400")
sleep 14
curl -sS --max-time 30 -o "$TMP/slow.pb.gz" "$URL/profile?last=60&min_span_ms=200"
own=$(grep '^slow_cpu_ns=' "$TMP/spans.out" | tail -1)
curl -sS --max-time 30 -o "$TMP/all.pb.gz" "$URL/profile?last=60"
curl -sS --max-time 30 -o "$TMP/wslow.pb.gz" "$WURL/wall?last=60&min_span_ms=200"
wown=$(grep '^slow_wall_ns=' "$TMP/sleeps.out" | tail -1 | sed 's/ .*//')
curl -sS --max-time 30 -o "$TMP/wall.pb.gz" "$WURL/wall?last=60"
curl -sS --max-time 30 -o "$TMP/uslow.pb.gz" "$UURL/profile?last=60&min_span_ms=200"
uown=$(grep '^slow_cpu_ns=' "$TMP/units.out" | tail -1 | sed 's/ .*//')
curl -sS --max-time 30 -o "$TMP/uall.pb.gz" "$UURL/profile?last=60"
curl -sS --max-time 30 -o "$TMP/uwslow.pb.gz" "$UWURL/wall?last=60&min_span_ms=200"
uwown=$(grep '^slow_wall_ns=' "$TMP/usleeps.out" | tail -1 | sed 's/ .*//')
curl -sS --max-time 30 -o "$TMP/uwall.pb.gz" "$UWURL/wall?last=60"

# cum NAME FILE: the cumulative ms of NAME in a CPU profile
cum() {
    pp_pprof -top -nodecount=1000 -unit=ms "$2" 2>/dev/null |
        awk -v n="$1" '$NF == n { v = $4; sub(/ms$/, "", v); print v; exit }'
}
total() {
    pp_pprof -top -unit=ms "$1" 2>/dev/null | sed -n 's/.*Total samples = \([0-9.]*\)ms.*/\1/p'
}
# judge WHAT FILTERED ALL OWN_NS HISTORY_COMMENT: the filtered profile's
# share of slow_request_work, against the program's own count, and the
# unfiltered profile's
judge() {
    local what=$1 slow tot aslow atot own_ms
    slow=$(cum slow_request_work "$2")
    tot=$(total "$2")
    pp_check "$what, min_span_ms=200: slow_request_work ${slow:-?} ms of ${tot:-?} ms, at least 90%" \
        pp_in_range "${slow:-0}" "$(awk -v t="${tot:-0}" 'BEGIN { print t * 0.9 }')" "${tot:-0}"
    own_ms=$(awk -v s="$4" 'BEGIN { printf "%d", s / 1e6 }')
    pp_check "$what, min_span_ms=200: slow_request_work ${slow:-?} ms, within 15% of the program's ${own_ms} ms" \
        pp_in_range "${slow:-0}" "$(awk -v o="$own_ms" 'BEGIN { print o * 0.85 }')" "$(awk -v o="$own_ms" 'BEGIN { print o * 1.15 }')"
    go tool pprof -comments "$2" >"$TMP/comments" 2>/dev/null
    pp_check "$what, min_span_ms=200: the comments say '$5' and name the filter" \
        sh -c "grep -q '$5' '$TMP/comments' && grep -q 'that lasted 200 ms or more' '$TMP/comments'"
    aslow=$(cum slow_request_work "$3")
    atot=$(total "$3")
    pp_check "$what, unfiltered: slow_request_work ${aslow:-?} ms of ${atot:-?} ms, a minority" \
        awk -v s="${aslow:-0}" -v t="${atot:-0}" 'BEGIN { exit !(t > 0 && s > 0 && s < t / 2) }'
    pp_note "$what slow share: $(awk -v s="${slow:-0}" -v t="${tot:-1}" 'BEGIN { printf "%.1f%%", 100 * s / t }') filtered, $(awk -v s="${aslow:-0}" -v t="${atot:-1}" 'BEGIN { printf "%.1f%%", 100 * s / t }') unfiltered"
}
judge CPU "$TMP/slow.pb.gz" "$TMP/all.pb.gz" "${own#slow_cpu_ns=}" "history: CPU samples"
judge wall "$TMP/wslow.pb.gz" "$TMP/wall.pb.gz" "${wown#slow_wall_ns=}" "history: wall samples"
judge "CPU, pprof_do units" "$TMP/uslow.pb.gz" "$TMP/uall.pb.gz" "${uown#slow_cpu_ns=}" "[1-9][0-9]* units of work"
judge "wall, pprof_do units" "$TMP/uwslow.pb.gz" "$TMP/uwall.pb.gz" "${uwown#slow_wall_ns=}" "[1-9][0-9]* units of work"
for f in uslow uall uwslow uwall; do
    go tool pprof -tags "$TMP/$f.pb.gz" >"$TMP/$f.tags" 2>/dev/null
    pp_check "$f: request=handle among the tags, pprof.unit not" \
        sh -c "grep -q 'handle' '$TMP/$f.tags' && ! grep -q 'pprof.unit' '$TMP/$f.tags'"
done
# rawsum FILE: "SAMPLES NANOSECONDS DURATION_S" of a wall profile
rawsum() {
    pp_pprof -raw "$1" 2>/dev/null | awk '
        /^Duration: / { d = $2 }
        /^ +[0-9]+ +[0-9]+: / { c += $1; n += $2 }
        END { printf "%.0f %.0f %s\n", c, n, d }'
}
read -r c400 n400 d400 <<<"$(rawsum "$TMP/w400.pb.gz")"
pp_check "wall?seconds=3&hz=400 beside the history at 99 Hz: 200 ($w400)" test "$w400" = 200
pp_check "wall?seconds=3&hz=400: $c400 samples in $n400 ns of wall time, 400 a second within 2%" \
    within 2 "$(awk -v c="$c400" -v n="$n400" 'BEGIN { if (n > 0) print c * 1e9 / n }')" 400
pp_check "wall?seconds=3&hz=400: $n400 ns over ${d400} s, its $nthr threads within 2%" \
    within 2 "$(awk -v n="$n400" -v d="$d400" 'BEGIN { if (d > 0) print n / d / 1e9 }')" "$nthr"
read -r chist nhist dhist <<<"$(rawsum "$TMP/wall.pb.gz")"
pp_check "wall?last=60 across the 400 Hz window: $nhist ns over ${dhist} s, $nthr threads within 2%" \
    within 2 "$(awk -v n="$nhist" -v d="$dhist" 'BEGIN { if (d > 0) print n / d / 1e9 }')" "$nthr"
for q in "$WURL/wall?last=60&hz=5|400|do not apply to the history" \
    "$WURL/wall?last=60&state=off-cpu|400|do not apply to the history" \
    "$URL/wall?last=60|404|LIBPPROF_HISTORY_WALL=1"; do
    IFS='|' read -r u want why <<<"$q"
    code=$(curl -sS --max-time 10 -o "$TMP/bad.txt" -w '%{http_code}' "$u")
    pp_check "${u##*/}: $want, one line saying it (${code}: $(head -c 120 "$TMP/bad.txt"))" \
        eval 'test "$code" = "$want" && test "$(wc -l <"$TMP/bad.txt")" -le 1 && grep -qF "$why" "$TMP/bad.txt"'
done

for q in "last=60&min_span_ms=50:at least 100 ms" "min_span_ms=500:goes with last, from or until"; do
    code=$(curl -sS --max-time 10 -o "$TMP/bad.txt" -w '%{http_code}' "$URL/profile?${q%%:*}")
    pp_check "profile?${q%%:*}: 400, one line saying it (${code}: $(head -c 120 "$TMP/bad.txt"))" \
        eval 'test "$code" = 400 && test "$(wc -l <"$TMP/bad.txt")" -le 1 && grep -qF "${q#*:}" "$TMP/bad.txt"'
done
pp_finish
