#!/usr/bin/env bash
# test_partial_alloc.sh: an allocator after libpprof that defines only part
# of the malloc family (tests/integration/partial_*.c), under Debian's
# python3 doing real work:
#   - python3 runs and finishes as it does without libpprof (no starving
#     in the bootstrap buffer, no "Out of memory" abort)
#   - heap profiling steps aside with one line on stderr; heap answers with
#     that reason (as with LIBPPROF_HEAP_RATE=0), and the CPU profile shows
#     the interpreter's loop
# test-labels: plain-only slow
# Usage: test_partial_alloc.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

PY=/usr/bin/python3
[ -x "$PY" ] || { pp_skip "no $PY (scripts/deps.sh installs python3)"; pp_finish; }
WORK='import json, time
end = time.time() + 20
while time.time() < end:
    s = json.dumps([{"k": i, "v": str(i) * 3} for i in range(20000)])
    assert len(json.loads(s)) == 20000
print("python done")'

for shim in partial_only_malloc partial_no_memalign; do
    pp_serve "$shim" env LD_PRELOAD="$BUILD/libpprof.so $BUILD/tests/libpp_$shim.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ \
        "$PY" -c "$WORK" || pp_give_up "$shim: python3 did not serve" "$shim"
    base=http://127.0.0.1:$PORT/debug/pprof
    code=$(curl -s -o "$TMP/heap.txt" -w '%{http_code}' --max-time 20 "$base/heap")
    pp_check "$shim: heap says why it is off ($code: $(head -c 200 "$TMP/heap.txt"))" \
        grep -q 'allocator after libpprof defines malloc without its own free or memalign' "$TMP/heap.txt"
    curl -sS --max-time 30 -o "$TMP/cpu.pb.gz" "$base/profile?seconds=2"
    pp_pprof -top "$TMP/cpu.pb.gz" >"$TMP/cpu.top" 2>&1
    pp_check "$shim: the CPU profile shows the interpreter (_PyEval_EvalFrameDefault)" \
        grep -q _PyEval_EvalFrameDefault "$TMP/cpu.top"
    wait "$PID"
    rc=$?
    pp_check "$shim: python3 finished its work (exit $rc)" test "$rc" = 0 -a -n "$(grep 'python done' "$TMP/$shim.out")"
    n=$(grep -c 'libpprof: heap profiling is off' "$TMP/$shim.err")
    pp_check "$shim: heap profiling stepped aside with one line on stderr ($n)" test "$n" = 1
done
pp_finish
