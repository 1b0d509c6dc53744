#!/usr/bin/env bash
# test-labels: plain-only slow
# test_lifecycle.sh: what daemons do to their own process, with libpprof
# preloaded (docs/daemons.md).
#   closing every inherited descriptor at start (close_range, closefrom, a
#   close loop; prog_closeall), then keeping files of its own and forking:
#     - 0 stray bytes in the program's files and pipe, 0 of its descriptors
#       closed, in the parent and in the forked child
#     - the endpoint answers at the same address after the close: the
#       index, a thread dump, a 1 s CPU profile through go tool pprof
#     - the profiler's threads use under 1% of a core while the program
#       sleeps (2 s measured)
#     - the program exits within 1 s of being told to finish
#   blocking every signal before starting two busy workers, one thread in
#   sigwait (prog_sigblock):
#     - a 3 s CPU profile holds at least 95% of the workers' CPU time in
#       that window (counted from /proc), on their own function, and no
#       "not sampled" share over 5%
#     - the sigwait thread still receives the program's signals (SIGUSR1,
#       then SIGTERM, which ends it)
#   daemonizing (prog_daemonize: fork, setsid, fork; the process started
#   exits at once; the daemon forks two busy workers):
#     - the endpoint answers at the same address within 2 s of the start
#       returning, served by the daemon
#     - a 2 s CPU profile has both workers (pid tags) on their function
#   dropping privileges after start, as root (prog_dropprivs): setuid to
#   nobody and not dumpable; chroot into an empty directory and setuid;
#   setpriv's order keeping capabilities, with a CPU and a wall profile
#   running through the drop:
#     - the CPU profile names the program's function, in the parent and in
#       a child forked after the drop (a member of the tree)
#     - a thread dump (goroutine?debug=2) names it too
#   setpriv and capsh (Debian's) dropping root under LD_PRELOAD, then
#   running a command: it runs, as 65534
# Usage: test_lifecycle.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
hz=$(getconf CLK_TCK)

closeall() { # MODE
    local mode=$1 dir=$TMP/files-$1 base t0 t1 ms
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
    pp_check_rests "$mode: the profiler's threads rest while the program sleeps" "$PID"
    t0=$(date +%s%N)
    touch "$dir/go"
    pp_wait_gone "$PID" 100 0.02 || true
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    pp_check "$mode: the program exits within 1 s of being told ($ms ms)" test "$ms" -lt 1000
    pp_stop "$PID"
    local rc=$?
    pp_check "$mode: the program exited 0 ($rc)" test "$rc" = 0
    pp_check "$mode: the forked child found every descriptor it inherited open and its own" grep -qx 'child=ok' "$out"
    pp_check "$mode: the parent found every descriptor of its own open and its own" grep -qx 'parent=ok' "$out"
    local nf
    nf=$(grep '^next_fd=' "$out")
    pp_check "$mode: after a symbolized profile the program's next open got the number it gets without libpprof ($nf)" \
        awk -v l="$nf" 'BEGIN { split(l, a, /[= ]/); exit !(a[2] != "" && a[2] == a[4]) }'
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

quiet() { "$@" >/dev/null; }

sigblock() {
    local base c0 c1 t0 t1 top burn_ms worker_ms not_ms total_ms
    PORT=$(pp_free_port)
    pp_start sigblock env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT "$BUILD/tests/prog_sigblock" 20
    base=http://127.0.0.1:$PORT/debug/pprof
    pp_wait_line "$TMP/sigblock.out" '^ready' 10 "$PID" >/dev/null
    pp_check "sigblock: the endpoint answers" pp_wait_http "$base/cmdline" 5 "$PID"
    c0=$(pp_ticks "$PID" "^prog_sigblock$")
    t0=$(date +%s%N)
    curl -sf --max-time 20 -o "$TMP/sigblock.pb.gz" "$base/profile?seconds=3"
    t1=$(date +%s%N)
    c1=$(pp_ticks "$PID" "^prog_sigblock$")
    top=$(pp_pprof -top -unit=ms -sample_index=cpu "$TMP/sigblock.pb.gz" 2>&1)
    burn_ms=$(printf '%s\n' "$top" | awk '$NF == "sigblock_worker_burn" { sub(/ms$/, "", $4); print $4 + 0 }')
    read -r total_ms not_ms < <(pp_top_ms "$TMP/sigblock.pb.gz")
    # the workers' CPU in the 3 s window: their ticks over the request,
    # scaled to the window (they burn steadily)
    worker_ms=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v w=$(((t1 - t0) / 1000000)) 'BEGIN { printf "%d", c * 1000 / hz * 3000 / w }')
    pp_check "sigblock: the CPU profile holds the workers' CPU (${burn_ms:-none} ms in sigblock_worker_burn, $worker_ms ms counted from /proc, at least 95%)" \
        awk -v b="${burn_ms:-0}" -v w="$worker_ms" 'BEGIN { exit !(w > 0 && b >= 0.95 * w) }'
    pp_check "sigblock: no more than 5% not sampled (${not_ms} of ${total_ms:-0} ms)" \
        awk -v n="$not_ms" -v t="${total_ms:-0}" 'BEGIN { exit !(t > 0 && n <= 0.05 * t) }'
    kill -USR1 "$PID"
    pp_check "sigblock: the sigwait thread still receives SIGUSR1" quiet pp_wait_line "$TMP/sigblock.out" '^sigwait=10$' 5 "$PID"
    kill -TERM "$PID"
    pp_check "sigblock: and SIGTERM, which ends the program" quiet pp_wait_line "$TMP/sigblock.out" '^done$' 5 "$PID"
    pp_check "sigblock: the workers' masks leave the profiling signal open and block the program's (SIGUSR1)" \
        grep -qx 'mask_profiling_blocked=0 mask_usr1_blocked=1' "$TMP/sigblock.out"
}
sigblock

daemonize() {
    local status=$TMP/daemon.status base d t0 ms pgid workers w n=0 idx
    PORT=$(pp_free_port)
    base=http://127.0.0.1:$PORT/debug/pprof
    pp_start daemonize env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT "$BUILD/tests/prog_daemonize" 20 "$status"
    d=$(pp_wait_line "$TMP/daemonize.out" '^daemon=' 10 "$PID") && d=${d#daemon=}
    pp_check "daemonize: the daemon started ($d)" test -n "$d"
    [ -n "$d" ] || return
    pgid=$(awk '{ print $5 }' "/proc/$d/stat" 2>/dev/null)
    [ -n "$pgid" ] && PP_GROUPS+=("$pgid")
    pp_wait_gone "$PID" 100 0.02 || true
    t0=$(date +%s%N)
    pp_wait_http "$base/cmdline" 5
    ms=$((($(date +%s%N) - t0) / 1000000))
    pp_check "daemonize: the endpoint answers at the same address within 2 s of the start returning ($ms ms)" \
        test "$ms" -lt 2000
    pp_check "daemonize: the daemon serves it (its pid on the index)" \
        sh -c "curl -s --max-time 10 '$base/' | grep -q 'this process $d (prog_daemonize) is the hub'"
    for t in $(seq 50); do
        [ -s "$status" ] && break
        sleep 0.05
    done
    workers=$(sed -n 's/^workers=//p' "$status")
    for t in $(seq 60); do # workers forked before the takeover join the new hub
        idx=$(curl -s --max-time 5 "$base/")
        n=0
        for w in $workers; do
            grep -q "pid=$w\"" <<<"$idx" && n=$((n + 1))
        done
        [ "$n" = 2 ] && break
        sleep 0.05
    done
    n=0
    curl -sf --max-time 20 -o "$TMP/daemon.pb.gz" "$base/profile?seconds=2"
    pp_pprof -tags -focus=daemon_worker_burn "$TMP/daemon.pb.gz" >"$TMP/daemon.tags" 2>&1
    for w in $workers; do
        grep -qE ": $w\$" "$TMP/daemon.tags" && n=$((n + 1))
    done
    pp_check "daemonize: the CPU profile has both workers on their function ($n of 2: $workers)" test "$n" = 2
    [ -n "$pgid" ] && kill -TERM -- "-$pgid" 2>/dev/null
}
daemonize

# A request in flight when the process that serves it exits gets an
# answer: a 503 whose one line says why (go tool pprof prints it), not a
# closed connection.
exit_mid_profile() {
    PORT=$(pp_free_port)
    pp_start exiting env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT sleep 2
    pp_wait_http "http://127.0.0.1:$PORT/debug/pprof/cmdline" 5 "$PID"
    local body
    body=$(curl -sS --max-time 15 -D "$TMP/exit.head" "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=10")
    pp_check "exit mid-profile: a 503 with its reason ($(head -n 1 "$TMP/exit.head" | tr -d '\r'): $body)" \
        eval 'grep -q "^HTTP/1.1 503" "$TMP/exit.head" && grep -qi "^X-Go-Pprof: 1" "$TMP/exit.head" &&
            grep -q "server stopped before this request was done" <<<"$body"'
}
exit_mid_profile

dropprivs() { # MODE
    local mode=$1 base out=$TMP/drop-$1.out root=$TMP/root-$1 child tags
    mkdir -p "$root"
    PORT=$(pp_free_port)
    pp_start "drop-$mode" env LD_PRELOAD="$PUB/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT "$PUB/prog_dropprivs" "$mode" 20 "$root"
    base=http://127.0.0.1:$PORT/debug/pprof
    if [[ $mode == *s* ]]; then # profiles running through the drop: their threads must follow it
        pp_wait_http "$base/" 5 >/dev/null
        curl -sf --max-time 20 -o /dev/null "$base/profile?seconds=3" &
        curl -sf --max-time 20 -o /dev/null "$base/wall?seconds=3" &
    fi
    child=$(pp_wait_line "$out" '^child=' 10 "$PID") && child=${child#child=}
    pp_check "$mode: the program dropped ($(head -1 "$out"))" test -n "$child"
    curl -sf --max-time 20 -o "$TMP/drop-$mode.pb.gz" "$base/profile?seconds=2"
    pp_check "$mode: the CPU profile names the program's function after the drop" \
        sh -c "timeout 120 go tool pprof -top '$TMP/drop-$mode.pb.gz' 2>/dev/null | grep -q 'dropped_burn\$'"
    tags=$(pp_pprof -tags -focus=dropped_burn "$TMP/drop-$mode.pb.gz" 2>/dev/null)
    pp_check "$mode: both the parent and the child forked after the drop are in it ($(echo "$tags" | grep -cE ': ([0-9]+)$') pids)" \
        sh -c "echo '$tags' | grep -qE ': $PID\$' && echo '$tags' | grep -qE ': $child\$'"
    curl -sf --max-time 20 -o "$TMP/drop-$mode.dump" "$base/goroutine?debug=2"
    pp_check "$mode: a thread dump names the program's function" grep -q '^dropped_burn$' "$TMP/drop-$mode.dump"
    pp_stop "$PID"
    wait
}
# Real tools that drop root keeping capabilities, then exec: the C library
# aborted setpriv when one of the profiler's threads could no longer follow
# its setresgid (134), and capsh passed execve an environment array the
# constructor's setenv had made and capsh's own setenv freed (EFAULT).
realtools() {
    local out i ok=0
    # 20 times: the profiler's threads are still starting as setpriv drops
    # (it was aborted about half the time when they were not all asked)
    for i in $(seq 20); do
        out=$(LD_PRELOAD=$PUB/libpprof.so LIBPPROF_ADDR=127.0.0.1:0 setpriv --reuid=65534 --regid=65534 --clear-groups \
            /bin/sh -c 'id -u' 2>"$TMP/setpriv.err")
        [ "$out" = 65534 ] && ok=$((ok + 1))
    done
    pp_check "setpriv --reuid=65534 --regid=65534 under libpprof runs its command as 65534 ($ok of 20 runs; last: '$out')" \
        test "$ok" = 20
    if ! command -v capsh >/dev/null; then
        pp_skip "capsh is not installed (libcap2-bin)"
        return
    fi
    out=$(LD_PRELOAD=$PUB/libpprof.so LIBPPROF_ADDR=127.0.0.1:0 capsh --user=nobody -- -c 'id -u' 2>"$TMP/capsh.err")
    pp_check "capsh --user=nobody under libpprof runs its shell as 65534 (got '$out')" test "$out" = 65534
}
if [ "$(id -u)" = 0 ]; then
    # After the drop the program reads its own files as 65534 (to name its
    # functions): from a copy any user can read, wherever the build is.
    PUB=$(mktemp -d /tmp/pprof-drop.XXXXXX)
    chmod 755 "$PUB"
    cp "$LIB" "$BUILD/tests/prog_dropprivs" "$PUB/"
    dropprivs ud
    dropprivs cu
    dropprivs skd
    realtools
    rm -rf "$PUB"
else
    pp_skip "dropping privileges needs root"
fi
pp_finish
