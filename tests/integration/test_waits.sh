#!/usr/bin/env bash
# test_waits.sh: a wait that libpprof's signals interrupt ends exactly when
# it would have (test-labels: plain-only timing)
#
# prog_waits runs, per kind of wait (poll, ppoll, select, pselect,
# epoll_wait, epoll_pwait, epoll_pwait2, nanosleep with and without a
# place for the time left, clock_nanosleep, usleep, a futex wait through
# syscall(), sem_timedwait, pthread_cond_timedwait, sigtimedwait, recv on a
# socket with SO_RCVTIMEO, and poll and epoll_wait with no timeout for a
# timerfd that fires 3 ms after), one thread that waits 3 ms for nothing
# over and over and one that burns a little CPU between its waits, for
# 6 s: about 3,800 waits of each kind. Preloaded, with a 1000 Hz CPU profile, a
# 400 Hz wall profile and a thread dump every 50 ms through the run:
# not one wait fails with EINTR, ends before its deadline or returns
# another result than its timeout's, and at most 1% of each kind end more
# than 2 ms past their deadline (the control run without libpprof shows
# how often the machine itself is that late; recv's timeout is counted in
# the kernel's ticks, 4 ms here, so only its EINTR and early ends count).
# Before the waits were wrapped (wait_hooks.c, sock_hooks.c), pselect,
# epoll_pwait, epoll_pwait2, the futex wait and recv failed with EINTR 12
# to 31 times each in such a run, and a poll ended early now and then.
# A dump's stacks of the 36 waiting threads reach the program's function
# with no frame of libpprof's wrappers in them (before the wrappers were
# hidden, 30 frames of wait_hooks.c and the like showed, and a walk from
# /proc through a wrapper's frame-pointer rule could go astray). When the
# first dump misses a thread (2 of about 8 CI runs, under load: 30 and 31
# of the 32 there were then), the test prints how the missed threads were shown and a second
# dump must reach all 36.
# Usage: test_waits.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

pp_start control "$BUILD/tests/prog_waits" 6 3
control=$PID
if ! pp_serve prog env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ \
    "$BUILD/tests/prog_waits" 6 3; then
    pp_give_up "prog_waits did not serve" prog
fi
base=http://127.0.0.1:$PORT/debug/pprof
curl -sS --max-time 20 -o "$TMP/cpu.pb.gz" -w '%{http_code}\n' "$base/profile?seconds=5&hz=1000" >"$TMP/cpu.code" &
cpu=$!
curl -sS --max-time 20 -o "$TMP/wall.pb.gz" -w '%{http_code}\n' "$base/wall?seconds=5&hz=400" >"$TMP/wall.code" &
wall=$!
# A dump's stacks of the waiting threads: each reaches the program's own
# function, and no frame of libpprof's wrappers stands between it and the
# C library's wait (they are hidden, and walked through from /proc).
# reach FILE: how many of the dump's threads reach waiter(); unreached
# FILE: the first lines of those that do not (but the main thread's)
reach() { awk '/^thread /{ if (t) n += ok; t = 1; ok = 0 } /^waiter/{ ok = 1 } END { n += ok; print n }' "$1"; }
unreached() {
    awk 'function out() { if (t && !ok && blk !~ /[|] main [|]/) print blk }
         /^thread /{ out(); t = 1; ok = 0; blk = $0; next }
         /^waiter/{ ok = 1 } { if (length(blk) < 600) blk = blk " | " $0 } END { out() }' "$1" | head -3 | cut -c1-600
}
curl -sS --max-time 10 "$base/goroutine?debug=2" >"$TMP/dump.txt"
reached=$(reach "$TMP/dump.txt")
if [ "$reached" != 36 ]; then
    # Once in a few CI runs under load one or two threads are not reached:
    # say how they were shown, then take a second dump, which must reach all.
    pp_note "the first dump reached $reached of 36 threads; the others: $(unreached "$TMP/dump.txt")"
    sleep 0.5
    curl -sS --max-time 10 "$base/goroutine?debug=2" >"$TMP/dump.txt"
    reached=$(reach "$TMP/dump.txt")
fi
wrapped=$(grep -c 'interpose/wait_hooks.c\|interpose/sock_hooks.c\|interpose/syscall_hook.c' "$TMP/dump.txt" || true)
pp_check "a dump walks every waiting thread to its function ($reached of 36), through no wrapper frame ($wrapped)" \
    test "$reached" = 36 -a "$wrapped" = 0
dumps=0
while pp_alive "$PID" && [ $dumps -lt 90 ]; do
    curl -sS --max-time 5 -o /dev/null "$base/goroutine?debug=2" && dumps=$((dumps + 1))
    sleep 0.05
done
wait $cpu $wall
pp_check "the CPU and wall profiles ran through the waits ($(cat "$TMP/cpu.code") $(cat "$TMP/wall.code"), $dumps dumps)" \
    test "$(cat "$TMP/cpu.code")" = 200 -a "$(cat "$TMP/wall.code")" = 200 -a $dumps -ge 50
pp_wait_gone "$PID" 150 0.1
pp_wait_gone "$control" 150 0.1

total=0
while read -r line; do
    kind=$(sed -n 's/^kind=\([a-z_0-9]*\).*/\1/p' <<<"$line")
    val() { sed -n "s/.* $1=\\([0-9]*\\).*/\\1/p" <<<"$2"; }
    ctl=$(grep "^kind=$kind " "$TMP/control.out")
    waits=$(val waits "$line")
    total=$((total + waits))
    bad="$(val eintr "$line") EINTR, $(val wrong "$line") other results, $(val early "$line") early"
    pp_check "$kind: $waits waits under profiles: $bad" \
        test "$waits" -gt 1000 -a "$bad" = "0 EINTR, 0 other results, 0 early"
    [ "$kind" = recv_timeo ] && continue
    late=$(val late "$line")
    pp_check "$kind: $late waits over 2 ms late (control: $(val late "$ctl") of $(val waits "$ctl"); the latest $(val over_us_max "$line") us past)" \
        test "$late" -le $((waits / 100))
done < <(grep '^kind=' "$TMP/prog.out")
pp_check "at least 10,000 waits in all ($total)" test "$total" -ge 10000
pp_finish
