#!/usr/bin/env bash
# test_dump_eintr.sh: thread dumps do not break event loops' waits
# (test-labels: plain-only timing)
#
# prog_eventloop_linked's threads wait in poll, epoll_wait, nanosleep and
# sem_timedwait for 1 ms over and over, so a dump often sees one running
# and signals it just as it enters its next wait (about 5% of dumps gave an
# EINTR before the handler learned to enter the wait again). After 2,000
# goroutine?debug=2 dumps and 2,000 goroutine profiles, with a 1000 Hz CPU
# profile running through them (its timer, window-end and catch-up
# signals reach the same threads) and a 99 Hz wall profile (which signals
# the threads it finds running): not one EINTR.
# Meanwhile the program breaks another thread's 10 s poll with its own
# SIGUSR1 every 20 ms (once the previous one has ended the wait and the
# thread is in poll again): those still end the wait with EINTR. One
# race remains (restart.c): a profiling signal that lands just as the
# program's own handler returns into the ended wait sends the thread back
# into it. The dumper finds that thread running only then, and its CPU
# timer fires only then, so runs meet it now and then: a mean of 0.3 a
# run with the dumps alone (2,000 dumps), 0.65 with the CPU profile too
# (13 in 20 runs, at most 2 in one); a run fails past 6 (Poisson: about
# 1 in 180,000 runs at 0.65, 1 in 12,000 at 1). A signal of the program's that
# arrives while the profiling handler runs is never lost.
# Usage: test_dump_eintr.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

pp_start_helper prog env LIBPPROF_CPU_HZ=1000 "$BUILD/tests/prog_eventloop_linked" ||
    pp_give_up "prog_eventloop_linked did not serve" prog
base=http://127.0.0.1:$PORT/debug/pprof
N=2000

curl -sS --max-time 60 -o "$TMP/cpu.pb.gz" -w '%{http_code}\n' "$base/profile?seconds=6" >"$TMP/cpu.code" 2>&1 &
cpu=$!
curl -sS --max-time 60 -o "$TMP/wall.pb.gz" -w '%{http_code}\n' "$base/wall?seconds=6&hz=99" >"$TMP/wall.code" 2>&1 &
wall=$!
for kind in "goroutine?debug=2" "goroutine"; do
    for i in $(seq $N); do
        printf 'url = "%s/%s"\noutput = /dev/null\n' "$base" "$kind"
    done >"$TMP/urls"
    start=$SECONDS
    curl -sS --max-time 600 -K "$TMP/urls" -w '%{http_code}\n' >"$TMP/codes" 2>"$TMP/curl.err"
    pp_check "$N dumps of $kind answered 200 in $((SECONDS - start)) s ($(sort "$TMP/codes" | uniq -c | tr '\n' ' '))" \
        test "$(grep -c '^200$' "$TMP/codes")" = "$N"
done

wait $cpu $wall
pp_check "a CPU profile ran through the dumps ($(cat "$TMP/cpu.code"))" test "$(cat "$TMP/cpu.code")" = 200
pp_check "a 99 Hz wall profile ran through the dumps ($(cat "$TMP/wall.code"))" test "$(cat "$TMP/wall.code")" = 200
pp_stop "$PID"
line=$(grep '^eintr=' "$TMP/prog.out")
eintr=$(sed -n 's/^eintr=\([0-9]*\).*/\1/p' <<<"$line")
waits=$(sed -n 's/.* waits=\([0-9]*\).*/\1/p' <<<"$line")
sent=$(sed -n 's/.* own_sent=\([0-9]*\).*/\1/p' <<<"$line")
own=$(sed -n 's/.* own_eintr=\([0-9]*\).*/\1/p' <<<"$line")
pp_check "no EINTR in the event loops' ${waits:-?} waits over $((2 * N)) dumps (${eintr:-?})" \
    test -n "$eintr" -a "${eintr:-1}" = 0 -a "${waits:-0}" -gt 1000
lost=$(sed -n 's/.* own_lost=\([0-9]*\).*/\1/p' <<<"$line")
pp_check "the program's own signal still breaks its wait: ${own:-?} EINTR for ${sent:-?} signals, ${lost:-?} lost" \
    test -n "$sent" -a "${sent:-0}" -gt 10 -a "${own:-0}" -ge $((${sent:-0} - 1 - ${lost:-0})) -a "${own:-0}" -le "${sent:-0}" \
    -a "${lost:-9}" -le 6
pp_finish
