#!/usr/bin/env bash
# test_lifecycle.sh: what daemons do to their own process, with libpprof
# preloaded (README "Daemons").
#   closing every inherited descriptor at start (close_range, closefrom, a
#   close loop; prog_closeall), then keeping files of its own and forking:
#     - 0 stray bytes in the program's files and pipe, 0 of its descriptors
#       closed, in the parent and in the forked child
#     - the endpoint answers at the same address after the close: the
#       index, a thread dump, a 1 s CPU profile through go tool pprof
#     - the profiler's threads use under 1% of a core while the program
#       sleeps (2 s measured)
#     - the program exits within 1 s of being told to finish
# test-labels: plain-only
# Usage: test_lifecycle.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
hz=$(getconf CLK_TCK)

# The CPU ticks (user + system) of every thread of $1 but the first.
other_threads_ticks() {
    local t sum=0
    for t in /proc/"$1"/task/*; do
        [ "${t##*/}" = "$1" ] && continue
        sum=$((sum + $(awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null || echo 0)))
    done
    echo "$sum"
}

closeall() { # MODE
    local mode=$1 dir=$TMP/files-$1 base t0 t1 c0 c1 ms
    mkdir -p "$dir"
    PORT=$(pp_free_port)
    pp_start "closeall-$mode" env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT \
        "$BUILD/tests/prog_closeall" "$mode" "$dir"
    local out=$TMP/closeall-$mode.out ready
    base=http://127.0.0.1:$PORT/debug/pprof
    ready=$(pp_wait_line "$out" '^ready' 10 "$PID")
    pp_check "$mode: the program closed every descriptor and opened its own ($ready)" test -n "$ready"
    pp_check "$mode: the endpoint answers within 2 s of the close" pp_wait_http "$base/cmdline" 2 "$PID"
    pp_check "$mode: the endpoint answers after the close (index)" \
        curl -sf --max-time 10 -o "$TMP/index-$mode" "$base/"
    pp_check "$mode: a thread dump answers after the close" \
        curl -sf --max-time 10 -o "$TMP/dump-$mode" "$base/goroutine?debug=1"
    pp_pprof -raw "$base/profile?seconds=1" >"$TMP/raw-$mode" 2>&1
    pp_check "$mode: go tool pprof reads a 1 s CPU profile after the close" grep -q '^Samples:' "$TMP/raw-$mode"
    c0=$(other_threads_ticks "$PID")
    sleep 2
    c1=$(other_threads_ticks "$PID")
    pp_check "$mode: the profiler's threads rest while the program sleeps ($((c1 - c0)) ticks of $hz/s in 2 s, under 1%)" \
        test $(((c1 - c0) * 100)) -lt $((hz * 2))
    t0=$(date +%s%N)
    touch "$dir/go"
    for t in $(seq 100); do
        pp_alive "$PID" || break
        sleep 0.02
    done
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    pp_check "$mode: the program exits within 1 s of being told ($ms ms)" test "$ms" -lt 1000
    pp_stop "$PID"
    local rc=$?
    pp_check "$mode: the program exited 0 ($rc)" test "$rc" = 0
    pp_check "$mode: the forked child found every descriptor it inherited open and its own" grep -qx 'child=ok' "$out"
    pp_check "$mode: the parent found every descriptor of its own open and its own" grep -qx 'parent=ok' "$out"
    if grep -qx 'files=ok' "$out"; then
        pp_ok "$mode: 0 stray bytes in the program's files"
    else
        pp_bad "$mode: the program's files hold what it did not write" "$(cat "$out")"
    fi
    grep -q 'descriptor\|stray\|file [0-9]' "$out" && pp_note "$mode: $(grep 'descriptor\|stray\|file [0-9]' "$out" | head -3)"
}

for mode in close_range closefrom loop; do
    closeall "$mode"
done
pp_finish
