#!/usr/bin/env bash
# test_history_tree.sh: the history in a process tree: the hub's
# allocs?last=, mutex?last= and block?last= merge its members' own
# histories (test-labels: plain-only slow)
#
# prog_tree_linked with LIBPPROF_HISTORY=60 and every allocation and
# contended wait sampled (LIBPPROF_HEAP_RATE=1, LIBPPROF_MUTEX_FRACTION=1,
# LIBPPROF_BLOCK_RATE=1) forks two workers that wait 7 s before their
# work (a forked child's history cuts 5 s slices: the work falls in its
# second slice). Worker i then keeps
# 500 blocks from worker_keep and waits 20 + 10 i times in
# worker_contend_wait (0.6 s at most). 10 s after the start, through the
# hub (the counts are exact: nothing is left to chance at these rates):
#   - allocs?last=60: under each worker's pid, exactly 500 worker_keep
#     objects allocated and 500 live;
#   - mutex?last=60: exactly 20 and 30 contentions under the workers'
#     pids;
#   - block?last=60: worker_contend_wait blocked under each pid;
#   - allocs?from=START&until=START+4 (the members' first slices, before
#     the work): no worker_keep object allocated or live; mutex the same;
#   - each answer's comment says "history:".
# A second copy whose workers start their work 200 ms after the fork (a
# child's history starts 50 ms after it; it used to start a second
# after, and so miss it): the same exact counts in its mutex?last=60
# and allocs?last=60.
# Usage: test_history_tree.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

t0=$(date +%s)
pp_start_helper prog env LIBPPROF_HISTORY=60 LIBPPROF_HEAP_RATE=1 LIBPPROF_MUTEX_FRACTION=1 LIBPPROF_BLOCK_RATE=1 \
    PROG_TREE_DELAY_MS=7000 "$BUILD/tests/prog_tree_linked" || pp_give_up "prog_tree_linked did not serve" prog
base=http://127.0.0.1:$PORT/debug/pprof
pp_wait_line "$TMP/prog.out" '^worker=' 10 "$PID" >/dev/null
pp_start_helper early env LIBPPROF_HISTORY=60 LIBPPROF_HEAP_RATE=1 LIBPPROF_MUTEX_FRACTION=1 LIBPPROF_BLOCK_RATE=1 \
    PROG_TREE_DELAY_MS=200 "$BUILD/tests/prog_tree_linked" || pp_give_up "prog_tree_linked did not serve" early
ebase=http://127.0.0.1:$PORT/debug/pprof
pp_wait_line "$TMP/early.out" '^worker=' 10 "$PID" >/dev/null
sleep 0.5
mapfile -t workers < <(sed -n 's/^worker=//p' "$TMP/prog.out")
pp_check "two workers forked (${workers[*]})" test "${#workers[@]}" = 2
mapfile -t eworkers < <(sed -n 's/^worker=//p' "$TMP/early.out")
pp_check "two early workers forked (${eworkers[*]})" test "${#eworkers[@]}" = 2
sleep $((t0 + 10 - $(date +%s)))

for q in "allocs?last=60:eallocs" "mutex?last=60:emutex"; do
    curl -sS --max-time 30 -o "$TMP/${q##*:}.pb.gz" "$ebase/${q%:*}"
done
for q in "allocs?last=60:allocs" "mutex?last=60:mutex" "block?last=60:block" \
    "allocs?from=$t0&until=$((t0 + 4)):allocs_before" "mutex?from=$t0&until=$((t0 + 4)):mutex_before"; do
    code=$(curl -sS --max-time 30 -o "$TMP/${q##*:}.pb.gz" -w '%{http_code}' "$base/${q%:*}")
    pp_check "${q%:*}: 200 with a history comment ($code)" \
        eval 'test "$code" = 200 && pp_pprof -comments "$TMP/${q##*:}.pb.gz" 2>/dev/null | grep -q "history:"'
done

# flat NAME INDEX FILE PID [COLUMN]: NAME's flat value (or go tool
# pprof -top's COLUMN: 4 is cum) under pid PID
flat() {
    pp_pprof -top -nodecount=200 -sample_index="$2" -tagfocus="pid=$4" "$3" 2>/dev/null |
        awk -v n="$1" -v c="${5:-1}" '$NF == n { print $c; exit }'
}
for i in 0 1; do
    w=${workers[$i]}
    a=$(flat worker_keep alloc_objects "$TMP/allocs.pb.gz" "$w")
    l=$(flat worker_keep inuse_objects "$TMP/allocs.pb.gz" "$w")
    pp_check "allocs?last=60: pid $w allocated 500 worker_keep objects (${a:-none}) and keeps 500 (${l:-none})" \
        test "${a:-0}" = 500 -a "${l:-0}" = 500
    m=$(flat worker_contend_wait contentions "$TMP/mutex.pb.gz" "$w" 4)
    pp_check "mutex?last=60: pid $w waited exactly $((20 + 10 * i)) times (${m:-none})" test "${m:-0}" = $((20 + 10 * i))
    b=$(flat worker_contend_wait contentions "$TMP/block.pb.gz" "$w" 4)
    pp_check "block?last=60: worker_contend_wait blocked under pid $w (${b:-none} events)" \
        test "${b:-0}" -ge $((20 + 10 * i))
    a=$(flat worker_keep alloc_objects "$TMP/allocs_before.pb.gz" "$w")
    l=$(flat worker_keep inuse_objects "$TMP/allocs_before.pb.gz" "$w")
    m=$(flat worker_contend_wait contentions "$TMP/mutex_before.pb.gz" "$w" 4)
    pp_check "from=start&until=start+4: pid $w had no worker_keep object (${a:-none}, ${l:-none} live) and no wait (${m:-none})" \
        test -z "$a$l$m"
    w=${eworkers[$i]}
    a=$(flat worker_keep alloc_objects "$TMP/eallocs.pb.gz" "$w")
    m=$(flat worker_contend_wait contentions "$TMP/emutex.pb.gz" "$w" 4)
    pp_check "200 ms after the fork: pid $w allocated 500 worker_keep objects (${a:-none}), waited $((20 + 10 * i)) times (${m:-none})" \
        test "${a:-0}" = 500 -a "${m:-0}" = $((20 + 10 * i))
done
pp_finish
