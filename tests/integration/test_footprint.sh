#!/usr/bin/env bash
# test_footprint.sh: what libpprof adds to a program's size (docs/cost.md).
#   - the virtual size of a preloaded program grows by under 3 GiB (the
#     own heap's 1 GiB reservation and the record tables, reserved and
#     not committed), its resident size by under 16 MiB
#   - under a virtual-memory limit of 1 GB (ulimit -v) the preloaded
#     program still runs and serves a heap profile (the own heap reserves
#     less)
# test-labels: plain-only quick
# Usage: test_footprint.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_plain

# The virtual and resident size (kB) of a python3 started by "$@".
sizes() {
    "$@" python3 -c 'import re
s = open("/proc/self/status").read()
print(re.search(r"VmSize:\s+(\d+)", s).group(1), re.search(r"VmRSS:\s+(\d+)", s).group(1))'
}
read -r v0 r0 < <(sizes env)
read -r v1 r1 < <(sizes env LD_PRELOAD="$LIB")
pp_check "virtual size grows by under 3 GiB ($v0 kB -> $v1 kB)" test $((v1 - v0)) -lt $((3 * 1024 * 1024))
pp_check "resident size grows by under 16 MiB ($r0 kB -> $r1 kB)" test $((r1 - r0)) -lt $((16 * 1024))

port=$(pp_free_port)
( ulimit -v 1000000; exec env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$port LIBPPROF_HEAP_RATE=4096 "$PROG" 6 -1 ) \
    >"$TMP/limited.out" 2>"$TMP/limited.err" &
pid=$!
PP_GROUPS+=("$pid")
if pp_wait_http "http://127.0.0.1:$port/debug/pprof/cmdline" 10 "$pid"; then
    code=$(curl -s --max-time 20 -o "$TMP/heap.pb.gz" -w '%{http_code}' "http://127.0.0.1:$port/debug/pprof/heap")
    pp_check "under ulimit -v 1000000 the program serves a heap profile ($code)" test "$code" = 200
    pp_check "go tool pprof reads it" sh -c "timeout 120 go tool pprof -raw '$TMP/heap.pb.gz' 2>&1 | grep -q '^Samples:'"
else
    pp_bad "under ulimit -v 1000000 the program did not serve" "$(cat "$TMP/limited.err")"
fi
wait "$pid"
pp_check "and runs to its end (exit $?)" grep -qx done "$TMP/limited.out"
pp_finish
