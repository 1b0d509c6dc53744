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
# Usage: test_history_spans.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
PROG=$BUILD/tests/prog_spans_linked

pp_start spans env LIBPPROF_HISTORY=120 "$PROG" 10 300 50
port=$(pp_wait_line "$TMP/spans.out" '^port=[0-9]+' 10 "$PID" | cut -d= -f2) ||
    pp_give_up "prog_spans_linked did not serve" spans
URL=http://127.0.0.1:$port/debug/pprof
sleep 25
curl -sS --max-time 30 -o "$TMP/slow.pb.gz" "$URL/profile?last=60&min_span_ms=200"
own=$(grep '^slow_cpu_ns=' "$TMP/spans.out" | tail -1)
curl -sS --max-time 30 -o "$TMP/all.pb.gz" "$URL/profile?last=60"

# cum NAME FILE: the cumulative ms of NAME in a CPU profile
cum() {
    pp_pprof -top -nodecount=1000 -unit=ms "$2" 2>/dev/null |
        awk -v n="$1" '$NF == n { v = $4; sub(/ms$/, "", v); print v; exit }'
}
total() {
    pp_pprof -top -unit=ms "$1" 2>/dev/null | sed -n 's/.*Total samples = \([0-9.]*\)ms.*/\1/p'
}
slow=$(cum slow_request_work "$TMP/slow.pb.gz")
tot=$(total "$TMP/slow.pb.gz")
pp_check "min_span_ms=200: slow_request_work ${slow:-?} ms of ${tot:-?} ms, at least 90%" \
    pp_in_range "${slow:-0}" "$(awk -v t="${tot:-0}" 'BEGIN { print t * 0.9 }')" "${tot:-0}"
own_ms=$(awk -v s="${own#slow_cpu_ns=}" 'BEGIN { printf "%d", s / 1e6 }')
pp_check "min_span_ms=200: slow_request_work ${slow:-?} ms, within 15% of the program's ${own_ms} ms" \
    pp_in_range "${slow:-0}" "$(awk -v o="$own_ms" 'BEGIN { print o * 0.85 }')" "$(awk -v o="$own_ms" 'BEGIN { print o * 1.15 }')"
pp_check "min_span_ms=200: the comment names the filter" \
    sh -c "go tool pprof -comments '$TMP/slow.pb.gz' 2>/dev/null | grep -q 'spans that lasted 200 ms or more'"
aslow=$(cum slow_request_work "$TMP/all.pb.gz")
atot=$(total "$TMP/all.pb.gz")
pp_check "unfiltered: slow_request_work ${aslow:-?} ms of ${atot:-?} ms, a minority" \
    awk -v s="${aslow:-0}" -v t="${atot:-0}" 'BEGIN { exit !(t > 0 && s > 0 && s < t / 2) }'
pp_note "slow share: $(awk -v s="${slow:-0}" -v t="${tot:-1}" 'BEGIN { printf "%.1f%%", 100 * s / t }') filtered, $(awk -v s="${aslow:-0}" -v t="${atot:-1}" 'BEGIN { printf "%.1f%%", 100 * s / t }') unfiltered"

for q in "last=60&min_span_ms=50:at least 100 ms" "min_span_ms=500:goes with last, from or until"; do
    code=$(curl -sS --max-time 10 -o "$TMP/bad.txt" -w '%{http_code}' "$URL/profile?${q%%:*}")
    pp_check "profile?${q%%:*}: 400, one line saying it (${code}: $(head -c 120 "$TMP/bad.txt"))" \
        eval 'test "$code" = 400 && test "$(wc -l <"$TMP/bad.txt")" -le 1 && grep -qF "${q#*:}" "$TMP/bad.txt"'
done
pp_finish
