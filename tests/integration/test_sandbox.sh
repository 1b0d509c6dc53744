#!/usr/bin/env bash
# test_sandbox.sh: a process that sandboxes itself is never killed or hung
# by libpprof, and the tree says why it is not profiled
# (test-labels: plain-only timing)
#
# prog_sandbox (preloaded, serving) forks a child every 0.5 s for 12 s;
# each lowers RLIMIT_NOFILE to 0 and enters a seccomp filter that kills
# the process on any call but the few it makes (as sshd's pre-auth child
# does), or, every other one, seccomp strict mode through syscall(). While
# they run, a CPU profile, a 400 Hz wall profile, the heap and a thread
# dump of the tree every 0.3 s are asked. Every child exits 0 (before,
# the dump's restart path called rt_sigpending in the child, which the
# filter killed, and the killed children stayed behind as zombies holding
# libpprof's threads, hanging the parent's wait); every dump answers 200
# within 2 s; the index names the sandboxed children and why; heap?pid=
# of one answers 404 with the reason.
# Usage: test_sandbox.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

pp_serve prog env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ "$BUILD/tests/prog_sandbox" 12 ||
    pp_give_up "prog_sandbox did not serve" prog
base=http://127.0.0.1:$PORT/debug/pprof
curl -sS --max-time 20 -o "$TMP/cpu.pb.gz" -w '%{http_code}\n' "$base/profile?seconds=5" >"$TMP/cpu.code" &
jobs=($!)
curl -sS --max-time 20 -o "$TMP/wall.pb.gz" -w '%{http_code}\n' "$base/wall?seconds=5&hz=400" >"$TMP/wall.code" &
jobs+=($!)
curl -sS --max-time 20 -o "$TMP/heap.pb.gz" -w '%{http_code}\n' "$base/heap?seconds=3" >"$TMP/heap.code" &
jobs+=($!)
slow=0 n=0
for _ in $(seq 16); do
    t=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code} %{time_total}' "$base/goroutine?debug=2")
    n=$((n + 1))
    awk -v t="$t" 'BEGIN { split(t, a, " "); exit !(a[1] == 200 && a[2] < 2) }' || slow=$((slow + 1))
    sleep 0.3
done
wait "${jobs[@]}"
pp_check "$n dumps of the tree answered 200 within 2 s ($slow did not)" test $slow = 0
pp_check "the CPU ($(cat "$TMP/cpu.code")), wall ($(cat "$TMP/wall.code")) and heap ($(cat "$TMP/heap.code")) profiles of the tree answered" \
    test "$(cat "$TMP/cpu.code") $(cat "$TMP/wall.code") $(cat "$TMP/heap.code")" = "200 200 200"
index=$(curl -sS --max-time 5 "$base/")
filter=$(grep -o 'not profiled: it entered a seccomp filter' <<<"$index" | wc -l)
strict=$(grep -o 'not profiled: it entered seccomp strict mode' <<<"$index" | wc -l)
pp_check "the index names sandboxed children and why ($filter filter, $strict strict mode)" \
    test "$filter" -ge 1 -a "$strict" -ge 1
child=$(sed -n 's/^child \([0-9]*\) filter$/\1/p' "$TMP/prog.out" | tail -n 2 | head -n 1)
body=$(curl -sS --max-time 5 -w '%{http_code}' "$base/heap?pid=$child" | tr '\n' ' ')
pp_check "heap?pid= of a sandboxed child answers 404 with the reason ($body)" \
    grep -q "entered a seccomp filter.* 404$" <<<"$body"
pp_wait_gone "$PID" 150 0.1 || pp_bad "prog_sandbox did not end (a child left behind?)" "$(ps -o pid,stat,comm --ppid "$PID")"
line=$(grep '^children=' "$TMP/prog.out")
pp_check "every sandboxed child exited 0 ($line)" \
    awk -v l="$line" 'BEGIN { split(l, a, /[= ]/); exit !(a[2] >= 10 && a[2] == a[4] && a[6] == 0) }'
pp_finish
