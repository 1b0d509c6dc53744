#!/usr/bin/env bash
# test_heap_views.sh: the heap's peak, leaks by age, a window's survivors
# (test-labels: plain-only slow)
#
# prog_leak under LD_PRELOAD:
#   peak (LIBPPROF_HEAP_RATE=16384: a 64 KiB block is sampled with
#   probability 0.98, so the estimate of 3,200 of them is within 0.1%):
#   the program builds 204.8 MB in peak_build and frees 9 of every 10;
#   heap?peak=1 is within 3% of its own count at the top, peak_build on
#   top, the time of the peak in a comment; heap now holds a tenth;
#   heap?peak=1&seconds=2 over a quiet window holds the tenth, not the
#   old peak.
#   leak (the default rate): 1,000 requests a second, each 100 KiB of
#   freed work and 1 KiB kept by leak_session, for 2 minutes: in
#   heap?min_age=60, leak_session holds at least 90% of the bytes (about
#   60 MB of 1 KiB objects, some 120 samples of them; the rest of the
#   heap older than 60 s is the program's start-up, a few KB), every
#   sample labelled age=1m-10m; heap?seconds=5&window_live=1: leak_session
#   holds at least 90% of the in-use bytes (the work is freed), while
#   alloc_space is mostly do_work's.
#   Bad values: a 400 with a reason.
# Usage: test_heap_views.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so

top() { # FILE [ARGS...]: go tool pprof -top in bytes
    local f=$1
    shift
    pp_pprof -top -nodefraction=0 -nodecount=100000 -unit=B "$@" "$f" 2>/dev/null
}
cum_of() { # FILE RE [ARGS...]: the cumulative bytes of the first node matching RE
    local f=$1 re=$2
    shift 2
    top "$f" "$@" | awk -v re="$re" '$6 ~ re { v = $4; sub(/B$/, "", v); print v; exit }'
}
total() { top "$@" | sed -n 's/^Showing nodes accounting for [0-9.]*B, [0-9.]*% of \([0-9]*\)B total.*/\1/p'; }

# --- peak
pp_start peak env LD_PRELOAD="$LIB" LIBPPROF_HEAP_RATE=16384 LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_PRINT_ADDR=1 \
    "$BUILD/tests/prog_leak" peak
pp_wait_line "$TMP/peak.out" '^ready$' 20 "$PID" >/dev/null || pp_give_up "prog_leak peak did not start"
URL=$(pp_serving_url peak "$PID")
want=$(sed -n 's/^peak_bytes=//p' "$TMP/peak.out")
after=$(sed -n 's/^after_bytes=//p' "$TMP/peak.out")
curl -sf --max-time 30 -o "$TMP/peak.pb.gz" "$URL/heap?peak=1"
v=$(total "$TMP/peak.pb.gz")
pp_check "heap?peak=1: $v B within 3% of the program's $want B at its top" within 3 "$v" "$want"
first=$(top "$TMP/peak.pb.gz" | awk '/^ *flat/ { getline; print $6; exit }')
pp_check "heap?peak=1: peak_build on top ($first)" grep -q '^peak_build' <<<"$first"
pp_check "heap?peak=1: a comment gives the peak's time" grep -q 'peak of the live heap: [0-9]* bytes .* at 20[0-9-]*T' \
    <(top "$TMP/peak.pb.gz")
curl -sf --max-time 30 -o "$TMP/now.pb.gz" "$URL/heap"
v=$(total "$TMP/now.pb.gz" -sample_index=inuse_space)
pp_check "heap now: $v B within 3% of the $after B left" within 3 "$v" "$after"
curl -sf --max-time 30 -o "$TMP/wpeak.pb.gz" "$URL/heap?peak=1&seconds=2"
v=$(total "$TMP/wpeak.pb.gz")
pp_check "heap?peak=1&seconds=2 over a quiet window: $v B, the $after B left, not the old peak" within 3 "$v" "$after"
for q in "min_age=x" "max_age=-2" "min_age=5&max_age=2" "peak=1&min_age=3" "min_age=3&seconds=2" "window_live=1" \
    "peak=1&debug=1"; do
    code=$(curl -s --max-time 10 -o "$TMP/body" -w '%{http_code}' "$URL/heap?$q")
    pp_check "heap?$q: 400 with one line ($(head -c 80 "$TMP/body"))" \
        test "$code" = 400 -a "$(wc -l <"$TMP/body")" = 1
done

# --- leak
pp_start leak env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_PRINT_ADDR=1 "$BUILD/tests/prog_leak" leak
pp_wait_line "$TMP/leak.out" '^ready$' 20 "$PID" >/dev/null || pp_give_up "prog_leak leak did not start"
URL=$(pp_serving_url leak "$PID")
sleep 60
curl -sf --max-time 30 -o "$TMP/win.pb.gz" "$URL/heap?seconds=5&window_live=1"
t=$(total "$TMP/win.pb.gz" -sample_index=inuse_space)
v=$(cum_of "$TMP/win.pb.gz" '^leak_session' -sample_index=inuse_space)
pp_check "heap?seconds=5&window_live=1: leak_session $v B of $t B in use (90% or more)" \
    awk -v v="$v" -v t="$t" 'BEGIN { exit !(t > 0 && v >= 0.9 * t) }'
t=$(total "$TMP/win.pb.gz" -sample_index=alloc_space)
v=$(cum_of "$TMP/win.pb.gz" '^do_work' -sample_index=alloc_space)
pp_check "the same window's alloc_space: do_work $v B of $t B (80% or more)" \
    awk -v v="$v" -v t="$t" 'BEGIN { exit !(t > 0 && v >= 0.8 * t) }'
sleep 55
curl -sf --max-time 30 -o "$TMP/old.pb.gz" "$URL/heap?min_age=60"
t=$(total "$TMP/old.pb.gz")
v=$(cum_of "$TMP/old.pb.gz" '^leak_session')
pp_check "heap?min_age=60 after 2 minutes: leak_session $v B of the $t B older than 60 s (90% or more)" \
    awk -v v="$v" -v t="$t" 'BEGIN { exit !(t > 0 && v >= 0.9 * t) }'
tags=$(pp_pprof -tags "$TMP/old.pb.gz" 2>/dev/null)
pp_check "heap?min_age=60: every sample labelled age=1m-10m" \
    grep -qE '\( *100%\): 1m-10m' <<<"$tags"
pp_finish
