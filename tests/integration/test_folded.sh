#!/usr/bin/env bash
# test-labels: quick
# test_folded.sh: ?format=folded and ?format=proto with curl and go tool
# pprof.
#   prog_sds under LD_PRELOAD (the built-in server; a heap that stays as
#   it is once the program is ready):
#   - format=folded: 200, text/plain, lines "frame;...;frame value", each
#     stack once; heap's default value is inuse_space, and its total equals
#     the inuse_space total go tool pprof reads from format=proto
#     (uncompressed, which pprof reads as is), whose top function is the
#     folded lines' largest leaf;
#   - sample_index by name and by index agree;
#   - the prefix without its slash answers 301 to the index.
#   The demo (its own libmicrohttpd daemon):
#   - labels=1 puts the labels first as "[key=value]";
#   - a CPU profile over a window, folded, has the demo's workers;
#   - bad values (format=, sample_index=, labels=, with debug=1, labels
#     without format=folded) get 400 with a reason.
# Usage: test_folded.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

fetch() { # NAME QUERY: body to $TMP/NAME, headers to $TMP/NAME.h; prints the status
    curl -s -D "$TMP/$1.h" -o "$TMP/$1" -w '%{http_code}' --max-time 30 "$base/$2"
}

pp_serve sds env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HEAP_RATE=16384 \
    "$BUILD/tests/prog_sds" grow || pp_give_up "prog_sds serves under LD_PRELOAD" sds
base=http://127.0.0.1:$PORT/debug/pprof
pp_wait_line "$TMP/sds.out" '^ready$' 120 "$PID" >/dev/null || pp_give_up "prog_sds gets ready" sds
code=$(fetch heap.folded "heap?format=folded")
pp_check "heap?format=folded: 200 text/plain ($code, $(pp_header "$TMP/heap.folded.h" Content-Type))" \
    eval 'test "$code" = 200 && pp_header "$TMP/heap.folded.h" Content-Type | grep -q "^text/plain"'
bad=$(grep -cvE '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$TMP/heap.folded")
dups=$(sed 's/ [0-9]*$//' "$TMP/heap.folded" | sort | uniq -d | wc -l)
pp_check "heap folded: $(wc -l <"$TMP/heap.folded") lines, all 'frames value' ($bad not), each stack once ($dups repeated)" \
    test "$(wc -l <"$TMP/heap.folded")" -gt 0 -a "$bad" = 0 -a "$dups" = 0
fetch heap.pb "heap?format=proto" >/dev/null
pp_check "heap?format=proto: uncompressed (no gzip magic), octet-stream" \
    eval '[ "$(head -c2 "$TMP/heap.pb" | od -An -tx1 | tr -d " ")" != 1f8b ] &&
          pp_header "$TMP/heap.pb.h" Content-Type | grep -q "^application/octet-stream"'
folded_total=$(awk '{ t += $NF } END { print t + 0 }' "$TMP/heap.folded")
# pprof -raw: each sample's values (alloc_objects alloc_space inuse_objects inuse_space)
pprof_total=$(pp_pprof -raw "$TMP/heap.pb" 2>/dev/null |
    awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $1 ~ /^[0-9]+$/ && $4 ~ /:$/ { t += $4 } END { print t + 0 }')
pp_check "heap folded total $folded_total B within 0.1% of go tool pprof's inuse_space total $pprof_total B" \
    awk -v a="$folded_total" -v b="$pprof_total" 'BEGIN { exit !(b > 0 && a <= 1.001 * b && b <= 1.001 * a) }'
leaf=$(awk '{ n = split($0, f, ";"); v = $NF; sub(/ [0-9]+$/, "", f[n]); s[f[n]] += v }
            END { for (k in s) if (s[k] > m) { m = s[k]; best = k } print best }' "$TMP/heap.folded")
top=$(pp_pprof -top -sample_index=inuse_space "$TMP/heap.pb" 2>/dev/null | awk '/flat%/ { getline; print $NF; exit }')
pp_check "heap folded: the largest leaf ($leaf) is go tool pprof's top function ($top)" test -n "$leaf" -a "$leaf" = "$top"

fetch alloc.folded "heap?format=folded&sample_index=alloc_objects" >/dev/null
fetch alloc1.folded "heap?format=folded&sample_index=0" >/dev/null
# (scaled counts carry their rounding from record to record, so two
# snapshots may differ by one object here and there)
stacks() { sed 's/ [0-9]*$//' "$1"; }
total() { awk '{ t += $NF } END { print t + 0 }' "$1"; }
pp_check "sample_index=alloc_objects and sample_index=0: the same stacks, totals within 0.1% ($(total "$TMP/alloc.folded"), $(total "$TMP/alloc1.folded")), not inuse_space's" \
    eval 'test -s "$TMP/alloc.folded" && [ "$(stacks "$TMP/alloc.folded")" = "$(stacks "$TMP/alloc1.folded")" ] &&
          awk -v a="$(total "$TMP/alloc.folded")" -v b="$(total "$TMP/alloc1.folded")" "BEGIN { exit !(a > 0 && a <= 1.001 * b && b <= 1.001 * a) }" &&
          ! cmp -s "$TMP/alloc.folded" "$TMP/heap.folded"'
code=$(curl -s -D "$TMP/r.h" -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$PORT/debug/pprof")
pp_check "/debug/pprof: 301 to /debug/pprof/ ($code, $(pp_header "$TMP/r.h" Location))" \
    test "$code" = 301 -a "$(pp_header "$TMP/r.h" Location)" = /debug/pprof/
pp_stop "$PID" >/dev/null 2>&1

pp_serve demo env LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HEAP_RATE=65536 "$BUILD/pprof-demo" ||
    pp_give_up "the demo serves" demo
base=http://127.0.0.1:$PORT/debug/pprof
for _ in $(seq 20); do # the workers build up some heap: labeled samples come within seconds
    fetch labels.folded "heap?format=folded&labels=1" >/dev/null
    grep -q '^\[' "$TMP/labels.folded" && break
    sleep 0.5
done
pp_check "labels=1: labeled stacks start with [key=value] ($(grep -c '^\[' "$TMP/labels.folded") lines)" \
    grep -qE '^\[[^]=]+=[^]]*\];' "$TMP/labels.folded"

code=$(fetch cpu.folded "profile?seconds=2&format=folded")
pp_check "profile?seconds=2&format=folded: 200 with the demo's work ($code, $(wc -l <"$TMP/cpu.folded") stacks)" \
    eval 'test "$code" = 200 && grep -q "worker" "$TMP/cpu.folded"'

for q in "heap?format=json" "heap?format=folded&sample_index=nope" "heap?format=folded&labels=2" \
    "heap?format=folded&debug=1" "heap?labels=1" "heap?sample_index=cpu"; do
    code=$(fetch bad "$q")
    pp_check "$q: 400 with a reason ($code: $(head -c 120 "$TMP/bad"))" \
        eval 'test "$code" = 400 && test "$(wc -l <"$TMP/bad")" = 1'
done
pp_stop "$PID" >/dev/null 2>&1
pp_finish
