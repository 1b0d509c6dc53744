#!/usr/bin/env bash
# test-labels: slow
# test_threads.sh: thread dumps (goroutine, threads, threadcreate) of a
# program with threads parked in poll, epoll_wait, nanosleep, sem_wait and pause
# (named, two of them labeled) and one spinning with the profiling signal
# blocked by name:
#   - debug=2 names each parked thread, the function it waits in, the call
#     and its labels; the masked thread is listed as not answering, and the
#     request still answers within about a second; libpprof's own
#     threads are left out, behind one summary line
#   - a hundred dumps in a row: not one EINTR in the parked threads
#   - go tool pprof -raw reads goroutine/count with labels; debug=1 is Go's
#     text; threadcreate shows the pthread_create call in main; seconds=N
#     gives the difference (the parked threads did not change: absent)
#   - the program's custom profile open_files over HTTP and on the index
#   - a CPU profile shows the masked thread's time as not sampled
# Usage: test_threads.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

pp_start_helper prog "$BUILD/tests/prog_threads_linked" ||
    pp_give_up "prog_threads_linked did not serve" prog
base=http://127.0.0.1:$PORT/debug/pprof
sleep 0.5

start=$(date +%s%N)
curl -sS --max-time 10 "$base/goroutine?debug=2" >"$TMP/dump.txt"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
pp_check "debug=2 answered in ${ms} ms despite a thread blocking every signal (< 1500)" test "$ms" -lt 1500
stanza() { awk -v n="\"$1\"" '$1 == "thread" && $3 == n { on = 1 } on { print } on && /^$/ { exit }' "$TMP/dump.txt"; }
for spec in "park-poll:park_in_poll:poll" "park-epoll:park_in_epoll:epoll_wait" \
    "park-sleep:park_in_nanosleep:(clock_)?nanosleep" "park-sem:park_in_sem_wait:futex" \
    "park-pause:park_in_pause:pause"; do
    IFS=: read -r name fn call <<<"$spec"
    s=$(stanza "$name")
    pp_check "$name: walked to $fn" grep -qx "$fn" <<<"$s"
    pp_check "$name: waits in $call" grep -qE "in $call\\]" <<<"$s"
done
pp_check "park-poll carries role=poller" grep -q '"role":"poller"' <<<"$(stanza park-poll)"
pp_check "park-sleep carries role=sleeper" grep -q '"role":"sleeper"' <<<"$(stanza park-sleep)"
pp_check "spin-masked is listed as not answering" grep -q 'no answer' <<<"$(stanza spin-masked)"
pp_check "the main thread waits in sigwait under main" grep -qx main <<<"$(stanza prog_threads_li)"
own=$(grep -m1 "^# libpprof's own threads, left out: " "$TMP/dump.txt")
pp_check "libpprof's own threads: one summary line (${own:-none})" \
    eval 'echo "$own" | grep -qE ": [1-9][0-9]* \(.*pprof-" && ! grep -qE "^thread [0-9]+ \"(pprof-|MHD-)" "$TMP/dump.txt"'

# the masked thread's CPU time: not sampled, and the profile says so
pp_pprof -top "$base/profile?seconds=2" >"$TMP/cpu.top" 2>&1
v=$(awk '/not sampled: the thread blocks the profiling signal/ { print $1; exit }' "$TMP/cpu.top")
pp_check "profile: the masked thread's CPU time shows as not sampled (${v:-none}, >= 0.5s of 2 s)" \
    awk -v v="${v:-0s}" 'BEGIN { sub(/s$/, "", v); exit !(v + 0 >= 0.5) }'

bad=0
for i in $(seq 100); do
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' "$base/threads?debug=$((i % 3))" >>"$TMP/codes.txt" || bad=$((bad + 1))
done
pp_check "100 dumps answered 200 ($(sort "$TMP/codes.txt" | uniq -c | tr '\n' ' '))" \
    test "$bad" = 0 -a "$(grep -c '^200$' "$TMP/codes.txt")" = 100

pp_pprof -raw "$base/goroutine" >"$TMP/raw.txt" 2>&1
pp_check "go tool pprof -raw: goroutine/count" grep -q '^goroutine/count' "$TMP/raw.txt"
pp_check "go tool pprof -raw: labels" grep -q 'role:\[poller\]' "$TMP/raw.txt"
pp_pprof -top "$base/goroutine" >"$TMP/top.txt" 2>&1
pp_check "go tool pprof -top: park_in_epoll" grep -q 'park_in_epoll' "$TMP/top.txt"
curl -sS --max-time 10 "$base/goroutine?debug=1" >"$TMP/d1.txt"
pp_check "debug=1: Go's header" grep -qE '^goroutine profile: total [0-9]+$' "$TMP/d1.txt"
curl -sS --max-time 10 "$base/threadcreate?debug=1" >"$TMP/tc.txt"
pp_check "threadcreate: total 7 (main, 6 parked; libpprof's own left out) ($(head -1 "$TMP/tc.txt"))" \
    grep -qx 'threadcreate profile: total 7' "$TMP/tc.txt"
pp_check "threadcreate: the pthread_create call in main" grep -qP '^#\t0x[0-9a-f]+\tmain\+0x[0-9a-f]+\t' "$TMP/tc.txt"
curl -sS --max-time 10 -D "$TMP/h" -o "$TMP/delta.pb.gz" "$base/goroutine?seconds=1"
pp_check "goroutine?seconds=1: goroutine-delta" test "$(pp_header "$TMP/h" Content-Disposition)" = 'attachment; filename="goroutine-delta"'
pp_pprof -raw "$TMP/delta.pb.gz" >"$TMP/delta.txt" 2>&1
pp_pprof -top "$TMP/delta.pb.gz" >"$TMP/delta.top" 2>&1
pp_check "goroutine?seconds=1: the parked threads did not change, so they are not in it" \
    test -z "$(grep park_in "$TMP/delta.top")"
pp_check "goroutine?seconds=1: is a goroutine profile" grep -q '^goroutine/count' "$TMP/delta.txt"

# the program's custom profile
curl -sS --max-time 10 "$base/open_files?debug=1" >"$TMP/of.txt"
pp_check "custom profile: open_files?debug=1 total 3" grep -qx 'open_files profile: total 3' "$TMP/of.txt"
pp_pprof -top "$base/open_files" >"$TMP/of.top" 2>&1
pp_check "custom profile: go tool pprof names open_log_files" grep -q 'open_log_files' "$TMP/of.top"
pp_check "custom profile: type open_files" grep -q '^Type: open_files' "$TMP/of.top"
curl -sS --max-time 10 "$base/" >"$TMP/index.html"
pp_check "index lists open_files with its count" grep -q '<td>3</td><td><a href="open_files?debug=1">open_files</a>' "$TMP/index.html"
pp_check "index counts the threads (goroutine)" grep -qE '<td>[0-9]+</td><td><a href="goroutine\?debug=1">' "$TMP/index.html"
pp_check "index lists goroutine and threadcreate" grep -q 'href="threadcreate?debug=1"' "$TMP/index.html"
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$base/open_filez")
pp_check "an unknown profile is still 404 ($code)" test "$code" = 404

kill -TERM "$PID"
e=$(pp_wait_line "$TMP/prog.out" '^eintr=' 5) && e=${e#eintr=}
pp_check "no EINTR in the parked threads (eintr=${e:-?})" test "${e:-x}" = 0
pp_finish
