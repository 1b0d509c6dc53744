#!/usr/bin/env bash
# test-labels: timing
# test_dlopen.sh: libpprof loaded with dlopen (prog_dlopen), where none of
# its overrides binds, neither for the program nor for libpprof's own calls
# (docs/architecture.md, "Overrides and the profiler's own calls"):
#   - the server starts and the index, cmdline and goroutine answer;
#   - goroutine?debug=2 leaves libpprof's own threads out, as with the
#     preload: its summary line names them (its acceptor, its
#     libmicrohttpd thread at least), and no thread of theirs is listed
#     (the pthread_create override that registers them does not bind:
#     each registers itself as it starts);
#   - profile?seconds=2: both burning threads, the one started before the
#     dlopen and the one after, are sampled, by name (go tool pprof -top);
#     libpprof's own threads used under 100 ms of CPU meanwhile (its
#     condition waits once bound to glibc's 2.2.5 versions here, and its
#     scheduler spun through the window);
#   - heap: 200, a profile go tool pprof reads (empty: malloc is the C
#     library's), whose comment says so and names dlopen;
#   - SIGTERM: the program ends normally (0, "done").
# Usage: test_dlopen.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
[ -e "$LIB" ] || pp_give_up "no $LIB (build the tree)" none

pp_start_helper prog "$BUILD/tests/prog_dlopen" "$LIB" || pp_give_up "prog_dlopen serves" prog
base=http://127.0.0.1:$PORT/debug/pprof

for q in "" cmdline goroutine?debug=2; do
    code=$(curl -s -o "$TMP/q.out" -w '%{http_code}' --max-time 10 "$base/$q")
    pp_check "${q:-index}: 200 ($code)" test "$code" = 200
done
pp_check "goroutine?debug=2: both burning threads listed" \
    eval 'curl -s --max-time 10 "$base/goroutine?debug=2" | grep -cE "^burn_(before|after)_dlopen$" | grep -qx 2'
curl -s --max-time 10 "$base/goroutine?debug=2" >"$TMP/dump.txt"
listed=$(grep -cE '^thread [0-9]+ "(pprof-|MHD-)' "$TMP/dump.txt" || true)
pp_check "goroutine?debug=2: libpprof's threads left out ($(grep -m1 "own threads" "$TMP/dump.txt"); $listed listed)" \
    eval 'grep -q "^# libpprof.s own threads, left out: .*MHD-.*pprof-accept" "$TMP/dump.txt" && test "$listed" = 0'

own_ticks() { cat /proc/"$PID"/task/*/stat 2>/dev/null | awk '$2 ~ /^\((pprof-|MHD-)/ { t += $14 + $15 } END { print t + 0 }'; }
own0=$(own_ticks)
pp_pprof -top "$base/profile?seconds=2" >"$TMP/cpu.top" 2>&1
own1=$(own_ticks)
for fn in burn_before_dlopen burn_after_dlopen; do
    cum=$(awk -v f="$fn" '$NF == f { print $5; exit }' "$TMP/cpu.top")
    pp_check "profile?seconds=2: $fn sampled (${cum:-none} of the samples, at least 20%)" \
        awk -v v="${cum:-0%}" 'BEGIN { sub(/%$/, "", v); exit !(v + 0 >= 20) }'
done

pp_check "libpprof's own threads over the profile: $(( ${own1:-0} - ${own0:-0} )) ticks of CPU (under 10)" \
    test "$(( ${own1:-0} - ${own0:-0} ))" -lt 10

code=$(curl -s -o "$TMP/heap.pb.gz" -w '%{http_code}' --max-time 10 "$base/heap")
pp_pprof -top -sample_index=alloc_space "$TMP/heap.pb.gz" >"$TMP/heap.top" 2>&1
pp_note "heap: $code; $(grep -m1 -E 'Total|Showing' "$TMP/heap.top"); comments: $(pp_pprof -comments "$TMP/heap.pb.gz" 2>/dev/null | tr '\n' ' ')"
pp_check "heap: 200, a profile go tool pprof reads ($code)" eval 'test "$code" = 200 && grep -q "^Type: alloc_space" "$TMP/heap.top"'
pp_check "heap: its comment says why it is empty (malloc is not libpprof's: dlopen)" \
    sh -c "timeout 120 go tool pprof -comments '$TMP/heap.pb.gz' 2>/dev/null | grep -q 'loaded with dlopen'"

kill -TERM "$PID"
pp_wait_gone "$PID" 100 0.1
wait "$PID"
rc=$?
pp_check "SIGTERM: the program ends normally (exit $rc, $(tail -1 "$TMP/prog.out"))" \
    test "$rc" = 0 -a "$(tail -1 "$TMP/prog.out")" = done
pp_finish
