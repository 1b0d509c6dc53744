#!/usr/bin/env bash
# test_mallocx.sh: allocations through jemalloc's own entry points
# (mallocx, rallocx, sdallocx; BIND 9's isc_mem makes all its allocations
# so) are sampled, under LD_PRELOAD with Debian's jemalloc preloaded after
# libpprof (test-labels: plain-only quick)
#
# prog_mallocx keeps 3,000 blocks of 1,000 bytes from
# mallocx(MALLOCX_ZERO | MALLOCX_ALIGN(64)) (4,000 made, 1,000 freed with
# sdallocx) in from_mallocx, and 2,000 blocks moved to 3,000 bytes with
# rallocx in from_rallocx. At 256-byte sampling (98% of the 1,000-byte
# blocks sampled, so chance moves the totals by well under 1%):
# - every block is zeroed and aligned as asked, and moved with its bytes;
# - the heap profile's in-use bytes of from_mallocx and from_rallocx are
#   within 10% of 3,000,000 and 6,000,000 (before: 0 and 0), and the
#   allocated bytes of from_mallocx within 10% of 4,000,000. (The profile
#   counts bytes as jemalloc does, 1,024 and 3,072 a block: 2.4% over.)
# Usage: test_mallocx.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
JE=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
[ -n "$JE" ] || { pp_skip "libjemalloc2 is not installed"; pp_finish; }
PORT=$(pp_free_port)
pp_start mallocx env LD_PRELOAD="$BUILD/libpprof.so $JE" LIBPPROF_ADDR=127.0.0.1:$PORT LIBPPROF_HEAP_RATE=256 \
    "$BUILD/tests/prog_mallocx" 30
pp_wait_line "$TMP/mallocx.out" '^(ready|nojemalloc)' 100 >/dev/null || pp_give_up "prog_mallocx did not get ready" mallocx
grep -q nojemalloc "$TMP/mallocx.out" && pp_give_up "mallocx was not found with jemalloc preloaded" mallocx
bad=$(awk '$1 == "ready" { print $2 }' "$TMP/mallocx.out")
pp_check "every block zeroed and aligned as asked, and moved with its bytes ($bad bad)" test "$bad" = 0
curl -sS --max-time 20 -o "$TMP/heap.pb.gz" "http://127.0.0.1:$PORT/debug/pprof/heap"
# flat INDEX FUNCTION: the function's flat bytes of one sample index
flat() { pp_pprof -top -nodecount=100 -unit=B -sample_index="$1" "$TMP/heap.pb.gz" 2>/dev/null |
    awk -v f="$2" '$NF == f { sub(/B$/, "", $1); print $1 + 0 }'; }
m=$(flat inuse_space from_mallocx)
r=$(flat inuse_space from_rallocx)
a=$(flat alloc_space from_mallocx)
pp_check "in use from mallocx: ${m:-0} B of 3,000,000 (within 10%)" within 10 "${m:-0}" 3000000
pp_check "in use from rallocx: ${r:-0} B of 6,000,000 (within 10%)" within 10 "${r:-0}" 6000000
pp_check "allocated from mallocx: ${a:-0} B of 4,000,000 (within 10%)" within 10 "${a:-0}" 4000000
pp_stop "$PID" >/dev/null
pp_finish
