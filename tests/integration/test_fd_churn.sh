#!/usr/bin/env bash
# test_fd_churn.sh: a program that closes every descriptor and opens its
# own files again in a tight loop keeps them while the profiler works: no
# descriptor of the program's is closed or replaced, no byte lands in its
# files but its own (test-labels: plain-only slow)
#
# prog_fdchurn runs closefrom(3) (close_range on odd rounds), opens two
# files and a pipe, writes to them and checks them, for 12 s, preloaded.
# Meanwhile thread dumps (goroutine?debug=2 and 1), the index, symbolized
# CPU, wall and heap profiles and the memory profile are asked one after
# another: each makes the profiler open /proc files, directories and
# debug files for a moment. Before, a thread dump's closedir could close
# the number the program had just reused (sshd's child lost its log and
# wrote it to the client's socket); now every round finds its descriptors
# open and its own, and the files hold exactly what the program wrote.
# Usage: test_fd_churn.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

D=$TMP/churn
mkdir -p "$D"
PORT=$(pp_free_port)
pp_start churn env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT "$BUILD/tests/prog_fdchurn" "$D" 12
out=$TMP/churn.out
ready=$(pp_wait_line "$out" '^ready' 10 "$PID")
pp_check "the program runs its rounds ($ready)" test -n "$ready"
base=http://127.0.0.1:$PORT/debug/pprof
pp_wait_http "$base/cmdline" 10 "$PID" || pp_give_up "the endpoint did not answer" churn
asker() { # PATHS...: asks each in turn until the program ends
    while pp_alive "$PID"; do
        for p in "$@"; do
            curl -s --max-time 10 -o /dev/null "$base/$p"
        done
    done
}
asker 'goroutine?debug=2' 'goroutine?debug=1' '' &
a1=$!
asker 'profile?seconds=1&hz=1000' 'wall?seconds=1' 'heap' 'memory' &
a2=$!
wait "$PID"
rc=$?
wait $a1 $a2
rounds=$(sed -n 's/^rounds=\([0-9]*\) .*/\1/p' "$out")
pp_check "the program ran at least 10000 rounds (${rounds:-none})" test "${rounds:-0}" -ge 10000
pp_check "every round found the program's descriptors open, its own, and its files hold only its bytes (exit $rc)" \
    grep -qx 'rounds=[0-9]* bad=0' "$out"
grep -q '^round ' "$out" && pp_note "$(grep '^round ' "$out" | head -n 5)"
[ "$rc" -gt 1 ] && pp_note "exit $rc: $(tail -n 5 "$TMP/churn.err")"
pp_finish
