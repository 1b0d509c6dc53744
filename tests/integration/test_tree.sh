#!/usr/bin/env bash
# test_tree.sh: one endpoint for a process tree (test-labels: plain-only slow)
#
# prog_tree_linked serves (the hub) and forks two workers; worker i keeps
# 500 blocks of 1000+i bytes (LIBPPROF_HEAP_RATE=1: every one sampled) and
# burns CPU. Through the hub's endpoint, with go tool pprof:
#   - the index lists both workers
#   - profile?seconds=2: worker_burn, CPU time under each worker's pid tag
#   - mutex: exactly 20 and 30 contended waits under the workers' pids,
#     with their labels
#   - heap: exactly 500 worker_keep objects under each worker's pid
#     (-tagfocus=pid=N); goroutine: threads of all three processes
#   - format=folded: the tree's merge folded (process frames with
#     labels=1, exact counts); its bad parameters 400s; format=proto a 400
#   - ?pid=N: that process's profile as it is; goroutine?debug=2&pid=N its
#     text dump; ?tree=0 the hub alone; an unknown pid a 404
#   - a member that is stopped: the rest answers after the grace, the
#     member named in the comments and counted late on the index
#   - delta_heap and delta_mutex across a worker restart: the new worker's
#     totals, none of the old one's, no negative value
#   - a hub that is killed: its workers run on
#   - 500 children that fork and exit at once while a profile runs: the
#     hub answers, and keeps no fd or thread for them
#   - a shell under LD_PRELOAD (the hub) running two programs it execs
#     with the preload inherited: their CPU time under process=prog_plain
#   - without a server (pprof_tree_start), pprof_tree_collect's heap and
#     CPU profiles: the same per-worker counts and functions
#   - a member that exits during a window answers with what it had
#   - the members leave the names in the hub's files to the hub (a
#     comment says so), also workers that dropped to another user (as
#     root)
# Usage: test_tree.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

pp_start_helper prog env LIBPPROF_HEAP_RATE=1 LIBPPROF_MUTEX_FRACTION=1 "$BUILD/tests/prog_tree_linked" ||
    pp_give_up "prog_tree_linked did not serve" prog
hub=$PID
base=http://127.0.0.1:$PORT/debug/pprof
pp_wait_line "$TMP/prog.out" '^worker=' 10 "$hub" >/dev/null
sleep 1
mapfile -t workers < <(sed -n 's/^worker=//p' "$TMP/prog.out")
pp_check "two workers forked (${workers[*]})" test "${#workers[@]}" = 2
w1=${workers[0]} w2=${workers[1]}

# the workers join as their agents connect: wait for both on the index
both_members() { grep -q "pid=$w1\">$w1</a>" "$TMP/index.html" && grep -q "pid=$w2\">$w2</a>" "$TMP/index.html"; }
for i in $(seq 100); do
    curl -sS --max-time 10 "$base/" >"$TMP/index.html"
    both_members && break
    sleep 0.1
done
pp_check "index: both workers are members" both_members

curl -sS --max-time 30 -o "$TMP/cpu.pb.gz" "$base/profile?seconds=2"
pp_pprof -top "$TMP/cpu.pb.gz" >"$TMP/cpu.top" 2>&1
pp_check "profile: the workers' worker_burn" grep -q worker_burn "$TMP/cpu.top"
pp_pprof -tags "$TMP/cpu.pb.gz" >"$TMP/cpu.tags" 2>&1
for w in "$w1" "$w2"; do
    pp_check "profile: CPU time under pid $w" grep -qE "^ +[0-9.]+m?s .*: $w\$" "$TMP/cpu.tags"
done
pp_pprof -comments "$TMP/cpu.pb.gz" >"$TMP/cpu.comments" 2>&1
pp_check "profile: the workers left the names in the hub's files to the hub ($(grep -c 'left to it to name' "$TMP/cpu.comments") comments)" \
    test "$(grep -c 'left to it to name' "$TMP/cpu.comments")" -ge 1

curl -sS --max-time 30 -o "$TMP/heap.pb.gz" "$base/heap"
for w in "$w1" "$w2"; do
    n=$(pp_pprof -top -sample_index=inuse_objects -tagfocus="pid=$w" "$TMP/heap.pb.gz" 2>/dev/null |
        awk '$NF == "worker_keep" { print $1; exit }')
    pp_check "heap: pid $w keeps exactly 500 worker_keep objects (${n:-none})" test "${n:-0}" = 500
done
# format=folded for the whole tree: the merge, folded (labels=1: the
# process frame first)
curl -sS --max-time 30 -D "$TMP/hf" -o "$TMP/heap.folded" "$base/heap?format=folded&sample_index=inuse_objects&labels=1"
n=$(awk '/^\[[^]]*process=prog_tree_linke[^]]*\];.*worker_keep/ { s += $NF } END { print s + 0 }' "$TMP/heap.folded")
pp_check "heap?format=folded&labels=1 for the tree: 200, worker_keep under a process frame, 1000 objects ($n)" \
    test "$(pp_status "$TMP/hf")" = 200 -a "$n" = 1000
pp_check "heap?format=folded for the tree: text/plain" \
    sh -c "grep -qi '^content-type: text/plain' '$TMP/hf'"
for q in "heap?format=folded&labels=2" "heap?format=folded&sample_index=nope" "heap?format=proto" \
    "heap?format=folded&format=folded"; do
    curl -sS --max-time 30 -D "$TMP/h400" -o "$TMP/b400" "$base/$q"
    pp_check "$q for the tree: 400 with a reason ($(head -c 80 "$TMP/b400"))" \
        test "$(pp_status "$TMP/h400")" = 400 -a -s "$TMP/b400"
done
# mutex: worker i's 20 + 10 i contended waits, each under its pid (every
# contended wait recorded at LIBPPROF_MUTEX_FRACTION=1); they end 0.6 s in
sleep 1
curl -sS --max-time 30 -o "$TMP/mutex.pb.gz" "$base/mutex"
for i in 0 1; do
    w=${workers[$i]}
    n=$(pp_pprof -top -nodecount=100 -sample_index=contentions -tagfocus="pid=$w" "$TMP/mutex.pb.gz" 2>/dev/null |
        awk '$NF == "worker_contend_wait" { print $4; exit }')
    pp_check "mutex: pid $w waited exactly $((20 + 10 * i)) times in worker_contend_wait (${n:-none})" \
        test "${n:-0}" = $((20 + 10 * i))
done
pp_pprof -tags -sample_index=contentions "$TMP/mutex.pb.gz" >"$TMP/mutex.tags" 2>&1
pp_check "mutex: the waits carry the workers' labels" grep -q '^ *worker: Total' "$TMP/mutex.tags"
pp_pprof -tags "$base/goroutine" >"$TMP/g.tags" 2>&1
pp_check "goroutine: threads of the hub and both workers" \
    test "$(grep -cE ": ($hub|$w1|$w2)\$" "$TMP/g.tags")" = 3

curl -sS --max-time 30 -o "$TMP/one.pb.gz" "$base/heap?pid=$w2"
n=$(pp_pprof -top -sample_index=inuse_objects "$TMP/one.pb.gz" 2>/dev/null | awk '$NF == "worker_keep" { print $1; exit }')
pp_check "heap?pid=$w2: that worker's own profile (${n:-none} worker_keep objects)" test "${n:-0}" = 500
pp_check "heap?pid=$w2: as it is, without pid tags" test -z "$(pp_pprof -tags "$TMP/one.pb.gz" 2>/dev/null | grep 'pid:')"
curl -sS --max-time 30 "$base/goroutine?debug=2&pid=$w1" >"$TMP/dump.txt"
pp_check "goroutine?debug=2&pid=$w1: its thread dump" grep -q "^thread $w1 .*" "$TMP/dump.txt"
curl -sS --max-time 30 -o "$TMP/hub.pb.gz" "$base/heap?tree=0"
pp_check "heap?tree=0: the hub alone" test -z "$(pp_pprof -top "$TMP/hub.pb.gz" 2>/dev/null | grep worker_keep)"
curl -sS --max-time 10 "$base/" >"$TMP/index2.html"
for w in "$w1" "$w2"; do
    a=$(grep -o "pid=$w\">$w</a> ([^)]*)" "$TMP/index2.html" | sed -n 's/.*answered \([0-9]*\) of \([0-9]*\) requests.*/\1 \2/p')
    pp_check "index: worker $w answered every request it was asked (${a:-none})" \
        awk -v a="$a" 'BEGIN { n = split(a, f, " "); exit !(n == 2 && f[1] == f[2] && f[2] >= 3) }'
done
curl -sS --max-time 10 -D "$TMP/h404" -o "$TMP/b404" "$base/heap?pid=1"
pp_check "heap?pid=1: 404 with a reason and the tree's pids ($(cat "$TMP/b404"))" \
    awk -v s="$(pp_status "$TMP/h404")" -v b="$(cat "$TMP/b404")" -v h="$PID" -v a="$w1" -v c="$w2" \
        'BEGIN { exit !(s == 404 && index(b, "no process 1 in the tree; the tree: " h " ") == 1 &&
                        (" " b " ") ~ (" " a " ") && (" " b " ") ~ (" " c " ")) }'

# A member that does not answer (stopped): the rest of the tree's profile
# comes after the 5 s grace, the late member named in its comments and
# counted on the index; running again, it answers again.
keep_of() { pp_pprof -top -sample_index=inuse_objects -tagfocus="pid=$2" "$1" 2>/dev/null | awk '$NF == "worker_keep" { print $1; exit }'; }
kill -STOP "$w2"
start=$SECONDS
curl -sS --max-time 30 -o "$TMP/hung.pb.gz" "$base/heap"
took=$((SECONDS - start))
w2_state=$(cut -d' ' -f3 "/proc/$w2/stat" 2>&1) # T while stopped
kill -CONT "$w2"
n=$(keep_of "$TMP/hung.pb.gz" "$w1")
pp_check "a stopped member: the heap came in ${took} s (grace 5 s) with pid $w1's 500 worker_keep objects (${n:-none})" \
    test "${n:-0}" = 500 -a "$took" -ge 3 -a "$took" -le 9
pp_pprof -comments "$TMP/hung.pb.gz" >"$TMP/hung.comments" 2>&1
if grep -q "process $w2 .*did not answer in time" "$TMP/hung.comments"; then
    pp_ok "a stopped member: the profile's comments name it"
else # what the hub said instead, and where the member was
    pp_bad "a stopped member: the profile's comments name it" "$(cat "$TMP/hung.comments")" \
        "$w2's state while stopped: $w2_state" "$(curl -sS --max-time 10 "$base/" | grep -o "pid=$w2[^)]*)")"
fi
pp_check "a stopped member: the index counts it late" \
    sh -c "curl -sS --max-time 10 '$base/' | grep -qE 'pid=$w2\">$w2</a> \([^)]*, [1-9][0-9]* late\)'"
curl -sS --max-time 30 -o "$TMP/resumed.pb.gz" "$base/heap"
n=$(keep_of "$TMP/resumed.pb.gz" "$w2")
pp_check "the member, running again, answers again (pid $w2: ${n:-none} worker_keep objects)" test "${n:-0}" = 500

fds0=$(ls /proc/$hub/fd | wc -l)
threads0=$(ls /proc/$hub/task | wc -l)
curl -sS --max-time 30 -o "$TMP/churn.pb.gz" "$base/profile?seconds=3" &
curler=$!
sleep 0.5
kill -USR1 "$hub"
pp_wait_line "$TMP/prog.out" '^churned$' 60 "$hub" >/dev/null
wait "$curler"
pp_check "500 short-lived children during a profile: the profile still came" \
    test -n "$(pp_pprof -top "$TMP/churn.pb.gz" 2>/dev/null | grep worker_burn)"
sleep 2
fds1=$(ls /proc/$hub/fd | wc -l)
threads1=$(ls /proc/$hub/task | wc -l)
pp_check "the hub keeps no fd or thread for them (fds $fds0 -> $fds1, threads $threads0 -> $threads1)" \
    test "$fds1" -le $((fds0 + 1)) -a "$threads1" -le $((threads0 + 1))

# Deltas across a worker restart: each process keeps its own delta state,
# so the replaced worker's values leave with it and the new one's first
# delta is its totals; no value of the tree's delta goes negative.
# negatives FILE: sample values below zero in go tool pprof -raw's output.
negatives() {
    pp_pprof -raw "$1" 2>/dev/null | awk '/^Samples:/ { on = 1; getline; next } /^Locations/ { on = 0 }
        on && /^ +-?[0-9]+/ { split($0, a, ":"); if (a[1] ~ /-/) n++ } END { print n + 0 }'
}
curl -sS --max-time 30 -o "$TMP/dh1.pb.gz" "$base/delta_heap"
curl -sS --max-time 30 -o "$TMP/dm1.pb.gz" "$base/delta_mutex"
old=${workers[1]}
kill -USR2 "$hub"
new=$(pp_wait_line "$TMP/prog.out" '^restarted=' 10 "$hub")
new=${new#restarted=}
sleep 2 # the new worker joins, keeps its blocks and waits its 30 times
curl -sS --max-time 30 -o "$TMP/dh2.pb.gz" "$base/delta_heap"
curl -sS --max-time 30 -o "$TMP/dm2.pb.gz" "$base/delta_mutex"
n=$(keep_of "$TMP/dh2.pb.gz" "$new")
o=$(keep_of "$TMP/dh2.pb.gz" "$old")
pp_check "delta_heap after worker $old was replaced by $new: the new one's 500 live objects (${n:-none}), none of the old one's (${o:-none})" \
    test "${n:-0}" = 500 -a -z "$o"
m=$(pp_pprof -top -nodecount=100 -sample_index=contentions -tagfocus="pid=$new" "$TMP/dm2.pb.gz" 2>/dev/null |
    awk '$NF == "worker_contend_wait" { print $4; exit }')
m1=$(pp_pprof -top -nodecount=100 -sample_index=contentions -tagfocus="pid=${workers[0]}" "$TMP/dm2.pb.gz" 2>/dev/null |
    awk '$NF == "worker_contend_wait" { print $4; exit }')
pp_check "delta_mutex after the restart: the new worker's 30 waits (${m:-none}), none more of the other's (${m1:-none})" \
    test "${m:-0}" = 30 -a -z "$m1"
neg=$(( $(negatives "$TMP/dh2.pb.gz") + $(negatives "$TMP/dm2.pb.gz") + $(negatives "$TMP/dh1.pb.gz") ))
pp_check "no negative value in the tree's deltas across the restart ($neg)" test "$neg" = 0

# A hub that dies leaves its workers running and unharmed: they go on
# burning their CPU (no thread of theirs stuck on the hub's socket).
utime() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }
kill -KILL "$hub"
{ wait "$hub"; } 2>/dev/null
sleep 1
for w in "${workers[0]}" "$new"; do
    u0=$(utime "$w")
    sleep 1
    u1=$(utime "$w")
    pp_check "the hub killed: worker $w still runs its own work ($((u1 - u0)) ticks of CPU in 1 s)" \
        test -n "$u1" -a $((u1 - u0)) -ge 10
    kill -TERM "$w" 2>/dev/null
done

# exec'd children: a shell serving, running two burning programs
pp_serve sh env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ \
    bash -c "'$BUILD/tests/prog_plain' 60 -1 & '$BUILD/tests/prog_plain' 60 -1 & wait" ||
    pp_give_up "bash under LD_PRELOAD did not serve" sh
sleep 1
curl -sS --max-time 30 -o "$TMP/sh.pb.gz" "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=2"
pp_pprof -tags "$TMP/sh.pb.gz" >"$TMP/sh.tags" 2>&1
pp_pprof -top -tagfocus=process=prog_plain "$TMP/sh.pb.gz" >"$TMP/sh.top" 2>&1
pp_check "exec'd children: their CPU time under process=prog_plain, in busy_loop_for_preload" \
    grep -q busy_loop_for_preload "$TMP/sh.top"
pp_check "exec'd children: two prog_plain pids besides the shell's" \
    test "$(awk '/^ pid:/ { on = 1; next } on && NF == 0 { on = 0 } on' "$TMP/sh.tags" | grep -c .)" -ge 2
pp_stop "$PID" >/dev/null 2>&1

# Without the server: pprof_tree_start makes prog_tree_linked the hub and
# pprof_tree_collect writes the tree's heap and CPU profiles to files.
mkdir -p "$TMP/collect"
pp_start collect env LIBPPROF_HEAP_RATE=1 "$BUILD/tests/prog_tree_linked" --collect "$TMP/collect"
chub=$PID
pp_wait_line "$TMP/collect.out" '^worker=' 10 "$chub" >/dev/null
sleep 1
mapfile -t cworkers < <(sed -n 's/^worker=//p' "$TMP/collect.out")
kill -USR2 "$chub"
pp_wait_line "$TMP/collect.out" '^(collected|collect failed)' 30 "$chub" >/dev/null
pp_check "pprof_tree_collect without a server: both profiles written ($(grep -m1 '^collect' "$TMP/collect.out"))" \
    grep -q '^collected$' "$TMP/collect.out"
for w in "${cworkers[@]}"; do
    n=$(pp_pprof -top -sample_index=inuse_objects -tagfocus="pid=$w" "$TMP/collect/heap.pb.gz" 2>/dev/null |
        awk '$NF == "worker_keep" { print $1; exit }')
    pp_check "pprof_tree_collect heap: pid $w keeps exactly 500 worker_keep objects (${n:-none})" test "${n:-0}" = 500
    pp_check "pprof_tree_collect profile?seconds=1: worker_burn under pid $w" \
        grep -q worker_burn <(pp_pprof -top -tagfocus="pid=$w" "$TMP/collect/cpu.pb.gz" 2>/dev/null)
done
pp_stop "$chub" >/dev/null 2>&1

# A member that exits during a window answers with what the window held
# until then: a prog_plain that burns 4 s, another that burns 60 s, a
# 6-second profile asked once both have joined.
pp_serve sh2 env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ \
    bash -c "'$BUILD/tests/prog_plain' 4 -1 & '$BUILD/tests/prog_plain' 60 -1 & wait" ||
    pp_give_up "bash under LD_PRELOAD did not serve" sh2
base=http://127.0.0.1:$PORT/debug/pprof
for _ in $(seq 100); do
    # members only: the index lists those that left after "every profile answers"
    [ "$(curl -sS --max-time 5 "$base/" | grep -o 'members: .*; every profile' | grep -o '(prog_plain, parent' |
        wc -l)" = 2 ] && break
    sleep 0.1
done
curl -sS --max-time 30 -o "$TMP/exit.pb.gz" "$base/profile?seconds=6"
pp_pprof -raw -symbolize=none "$TMP/exit.pb.gz" >"$TMP/exit.raw" 2>&1
pp_pprof -tags -tagfocus=process=prog_plain "$TMP/exit.pb.gz" >"$TMP/exit.tags" 2>&1
pp_check "a member that exited during the window is not reported as gone" \
    test -z "$(grep 'ended before it answered' "$TMP/exit.raw")"
pp_check "a member that exited during the window: CPU time under both prog_plain pids" \
    test "$(awk '/^ pid:/ { on = 1; next } on && NF == 0 { on = 0 } on' "$TMP/exit.tags" | grep -c .)" = 2
left=
for _ in $(seq 50); do
    left=$(curl -sS --max-time 5 "$base/" | grep -o 'left lately: [^<]*')
    echo "$left" | grep -q '(prog_plain,' && break
    sleep 0.1
done
pp_check "index: the member that exited is listed as left, having answered its request (${left:-none})" \
    eval 'echo "$left" | grep -qE "[0-9]+ \(prog_plain, parent [0-9]+, left [0-9]+ s ago after [0-9]+ s, answered 1 of 1 requests, 0 late\)"'
# Workers that drop to another user cannot read the hub's /proc maps: the
# hub sends them along, and names their code (even where the build
# directory is closed to that user).
if [ "$(id -u)" = 0 ]; then
    pp_start_helper dprog env PROG_TREE_WORKER_UID=65534 "$BUILD/tests/prog_tree_linked" ||
        pp_give_up "prog_tree_linked with dropping workers did not serve" dprog
    dhub=$PID
    base=http://127.0.0.1:$PORT/debug/pprof
    pp_wait_line "$TMP/dprog.out" '^worker=' 10 "$dhub" >/dev/null
    mapfile -t dworkers < <(sed -n 's/^worker=//p' "$TMP/dprog.out")
    for _ in $(seq 100); do
        [ "$(curl -sS --max-time 5 "$base/" | grep -c 'pid=[0-9]*">[0-9]*</a>')" -ge 2 ] && break
        sleep 0.1
    done
    curl -sS --max-time 30 -o "$TMP/drop.pb.gz" "$base/profile?seconds=2"
    for w in "${dworkers[@]}"; do
        pp_check "workers as user 65534 (not reading the hub's maps): worker_burn under pid $w ($(stat -c %u /proc/$w))" \
            grep -q worker_burn <(pp_pprof -top -tagfocus="pid=$w" "$TMP/drop.pb.gz" 2>/dev/null)
    done
    pp_check "workers as user 65534: they left the names to the hub" \
        test "$(pp_pprof -comments "$TMP/drop.pb.gz" 2>&1 | grep -c 'left to it to name')" -ge 1
    pp_stop "$dhub" >/dev/null 2>&1
fi
pp_finish
