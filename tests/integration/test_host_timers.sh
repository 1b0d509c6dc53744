#!/usr/bin/env bash
# test_host_timers.sh: a program's own profiling signals and timers keep
# their meaning while every kind of profile is asked of it
# (test-labels: plain-only timing)
#
# prog_host_timers (preloaded) times itself as PHP does: setitimer
# ITIMER_PROF and ITIMER_VIRTUAL, a timer_create timer on SIGRTMIN+2, its
# handlers installed again every 20 ms, and a handler of its own on
# SIGSTKFLT (libpprof's default signal) that it raises itself. While it
# runs: a 4 s CPU profile, a 400 Hz wall profile, a thread dump every
# 0.2 s and a heap profile. Each of its handlers gets only its own
# signals (0 foreign; before the profiling signal left SIGPROF its SIGPROF
# handler got about 3,500 of libpprof's ticks in such a run), as many as
# its CPU time gives (within 2% + 5 of cpu_ms / 10), and the SIGSTKFLTs
# it raised (at least 99%: one raised while one of libpprof's is pending
# merges with it; a program that uses SIGSTKFLT itself sets
# LIBPPROF_SIGNAL). The CPU profile covers at least 95% of the program's own
# threads' CPU in the window. Run twice: with the default signal and with
# LIBPPROF_SIGNAL=27 (SIGPROF, the program's own: told apart).
# Usage: test_host_timers.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

run() { # LABEL ENV...
    local label=$1 c0 c1 total not line
    shift
    if ! pp_serve "$label" env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ "$@" \
        "$BUILD/tests/prog_host_timers" 7; then
        pp_bad "$label: prog_host_timers did not serve" "$(cat "$TMP/$label.err")"
        return
    fi
    local base=http://127.0.0.1:$PORT/debug/pprof pid=$PID
    { # the program's threads' CPU at the profile's start and end
        pp_ticks "$pid" "" "$PP_OWN_THREADS"
        curl -sS --max-time 20 -o "$TMP/$label.cpu.pb.gz" "$base/profile?seconds=4"
        pp_ticks "$pid" "" "$PP_OWN_THREADS"
    } >"$TMP/$label.ticks" &
    local cpu=$!
    curl -sS --max-time 20 -o "$TMP/$label.wall.pb.gz" "$base/wall?seconds=4&hz=400" &
    local wall=$!
    for _ in $(seq 18); do
        curl -sS --max-time 5 -o /dev/null "$base/goroutine?debug=2"
        sleep 0.2
    done
    curl -sS --max-time 10 -o "$TMP/$label.heap.pb.gz" "$base/heap"
    wait $cpu $wall
    { read -r c0; read -r c1; } <"$TMP/$label.ticks"
    pp_wait_gone "$pid" 150 0.1
    line=$(grep '^prof=' "$TMP/$label.out")
    pp_note "$label: $line"
    val() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$line"; }
    local cpu_ms user_ms
    cpu_ms=$(val cpu_ms)
    user_ms=$(val user_ms)
    pp_check "$label: no foreign signal reached the program's handlers" \
        test -n "$line" -a "$(val prof_foreign)" = 0 -a "$(val vtalrm_foreign)" = 0 -a "$(val rt_foreign)" = 0 \
        -a "$(val stkflt_foreign)" = 0
    near() { awk -v n="$1" -v e="$2" 'BEGIN { d = n - e; if (d < 0) d = -d; exit !(e > 100 && d <= e * 0.02 + 5) }'; }
    pp_check "$label: ITIMER_PROF's SIGPROF $(val prof) times for ${cpu_ms:-?} ms of CPU" near "$(val prof)" "$((cpu_ms / 10))"
    pp_check "$label: ITIMER_VIRTUAL's SIGVTALRM $(val vtalrm) times for ${user_ms:-?} ms of user CPU" \
        near "$(val vtalrm)" "$((user_ms / 10))"
    pp_check "$label: the CPU-clock timer's SIGRTMIN+2 $(val rt) + $(val rt_overrun) overruns" \
        near "$(($(val rt) + $(val rt_overrun)))" "$((cpu_ms / 10))"
    # a raise that lands while one of libpprof's own is pending merges with
    # it (standard signals do not queue): at most 1% may be lost that way
    pp_check "$label: the SIGSTKFLTs the program raised reached its handler ($(val stkflt) of $(val raised))" \
        awk -v g="$(val stkflt)" -v r="$(val raised)" 'BEGIN { exit !(r > 100 && g <= r && g >= r * 0.99) }'
    read -r total not < <(pp_top_ms "$TMP/$label.cpu.pb.gz")
    local own=$(((c1 - c0) * 10))
    pp_check "$label: the CPU profile covers the program's CPU ($total ms for $own ms from /proc, at least 95%)" \
        awk -v p="$total" -v c="$own" 'BEGIN { exit !(c > 2000 && p >= 0.95 * c) }'
    pp_check "$label: the wall and heap profiles were served" \
        test -s "$TMP/$label.wall.pb.gz" -a -s "$TMP/$label.heap.pb.gz"
}

run default
run sigprof LIBPPROF_SIGNAL=27
pp_finish
