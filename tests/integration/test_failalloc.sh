#!/usr/bin/env bash
# test-labels: plain-only slow
# test_failalloc.sh: programs preloaded with libpprof and, after it, an
# allocator that fails one allocation in N (tests/integration/failalloc.c),
# at N = 1,000 and N = 100, with every profile on and every endpoint
# requested in turn for 30 s each. Two programs: prog_plain, served by the
# built-in server, and the demo, served by its own libmicrohttpd daemon
# through pprof_mhd_handle. Failures begin once the program serves, before
# any profile was asked for: the symbolizer reads debug information (with
# libdw, which does not survive a failed allocation) from the profiler's
# own heap, which the failing allocator does not serve.
#   - the program never crashes and no request hangs (20 s limit each)
#   - every response is complete: a 200 whose gzipped body is whole, or an
#     error status with a reason in its body; the built-in server answers
#     every request (its threads, libmicrohttpd's among them, allocate from
#     the profiler's own heap, which the failing allocator does not serve;
#     before, libmicrohttpd closed 0 to 2 in about 200 connections it could
#     not allocate for); the demo leaves at most ten in 100 unanswered: its
#     own daemon, whose allocations are the program's, closes what it
#     cannot allocate for (6 in 153 here at 1 in 100), so that chance alone
#     does not fail it
#   - once allocations succeed again, every endpoint answers 200 at once
# Usage: test_failalloc.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

SHIM=$BUILD/tests/libpp_failalloc.so
EPS=("" heap allocs goroutine "goroutine?debug=1" "goroutine?debug=2" threadcreate mutex "mutex?debug=1" block
    "heap?debug=1" "profile?seconds=1" "heap?seconds=1" "allocs?seconds=1" delta_heap cmdline symbol)

# one_round BASE OUT: every endpoint once; appends "code curl_rc endpoint verdict" lines to OUT
one_round() {
    local base=$1 out=$2 e code rc verdict
    for e in "${EPS[@]}"; do
        code=$(curl -s -o "$TMP/body" -w '%{http_code}' --max-time 20 "$base/$e")
        rc=$?
        verdict=ok
        if [ "$code" = 200 ]; then
            case $e in
            "" | cmdline | symbol | *debug=*) test -s "$TMP/body" || verdict=empty ;;
            *) gzip -t "$TMP/body" 2>/dev/null || verdict=truncated ;;
            esac
        elif [ "$code" != 000 ]; then
            test -s "$TMP/body" || verdict=no-reason
        fi
        echo "$code $rc /$e $verdict" >>"$out"
    done
}

# run_one NAME N CAP CMD...: CMD (serving on @PORT@) under the failing
# allocator; at most CAP in 100 requests may go unanswered
run_one() {
    local name=$1 N=$2 cap=$3
    shift 3
    rm -f "$TMP/on.$name.$N" "$TMP/off.$name.$N"
    pp_serve "$name$N" env LD_PRELOAD="$BUILD/libpprof.so:$SHIM" FAIL_EVERY=$N FAIL_ON_FILE="$TMP/on.$name.$N" \
        FAIL_OFF_FILE="$TMP/off.$name.$N" LIBPPROF_HEAP_RATE=4096 LIBPPROF_MUTEX_FRACTION=1 LIBPPROF_BLOCK_RATE=1 \
        "$@" || pp_give_up "$name under the failing allocator did not serve" "$name$N"
    local base=http://127.0.0.1:$PORT/debug/pprof log=$TMP/rounds.$name.$N what="$name, 1 in $N failing" end
    touch "$TMP/on.$name.$N"
    end=$((SECONDS + 30))
    while [ $SECONDS -lt $end ] && pp_alive "$PID"; do one_round "$base" "$log"; done
    local total hung bad silent after
    total=$(wc -l <"$log")
    pp_check "$what: the program is alive after $total requests" pp_alive "$PID"
    hung=$(awk '$2 == 28' "$log" | wc -l)
    pp_check "$what: no request hung ($hung)" test "$hung" = 0
    bad=$(awk '$4 != "ok"' "$log" | sort | uniq -c)
    pp_check "$what: every response complete, errors with a reason" test -z "$bad"
    [ -z "$bad" ] || pp_note "$bad"
    silent=$(awk '$1 == "000" && $2 != 28' "$log" | wc -l)
    pp_check "$what: unanswered requests ($silent) at most $cap in 100 of $total" \
        test "$silent" -le "$((total * cap / 100))"
    [ "$silent" = 0 ] || pp_note "unanswered: $(awk '$1 == "000" { print $3 }' "$log" | tr '\n' ' ')"
    pp_note "$what: $(awk '{ print $1 }' "$log" | sort | uniq -c | tr -s ' \n' ' ')(status: count)"
    touch "$TMP/off.$name.$N"
    sleep 1
    : >"$TMP/after.$name.$N"
    one_round "$base" "$TMP/after.$name.$N"
    after=$(awk '$1 != 200' "$TMP/after.$name.$N")
    pp_check "$what, then none: every endpoint answers 200" test -z "$after"
    [ -z "$after" ] || pp_note "$after"
    pp_stop "$PID"
}

for N in 1000 100; do
    run_one prog_plain "$N" 0 env LIBPPROF_ADDR=127.0.0.1:@PORT@ "$BUILD/tests/prog_plain" 300 -1
    run_one demo "$N" 10 env LIBPPROF_ADDR=off "$BUILD/pprof-demo" --addr 127.0.0.1:@PORT@
done
pp_finish
