#!/usr/bin/env bash
# test-labels: timing
# test_heap_preload.sh: heap profiles of an unmodified C++ program under
# LD_PRELOAD, alone and on top of Debian's jemalloc and tcmalloc (libpprof
# first in LD_PRELOAD, so it wraps them). With a 1 KiB rate:
#   heap:   keep_new (about 64 MiB of operator new[]) and keep_malloc
#           (about 32 MiB of malloc) in use within 3% of the bytes the
#           allocator gave them, as the program sums them
#           (malloc_usable_size; 900-byte requests are 1,024-byte blocks
#           in jemalloc and tcmalloc);
#   allocs: churn (a million operator new) allocated within 3% of its
#           bytes, nothing in use.
# The estimates' standard deviation is sqrt(rate / bytes): 0.55% for the
# smallest (keep_malloc, 32 to 36 MiB), so 3% is 5.4 of them.
# and, with jemalloc and tcmalloc, the allocator itself reports the kept
# memory (the allocations went to it, not to glibc). Then the endpoints'
# forms: debug=1 text, seconds=N windows (nothing allocated meanwhile:
# alloc 0, in-use live), seconds with debug (400), delta_heap.
# Usage: test_heap_preload.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_heap
MiB=1048576
if readelf -W -d "$PROG" | grep -q 'NEEDED.*libpprof'; then
    pp_bad "premise: prog_heap must not be linked with libpprof"
fi

# mib FILE INDEX FUNCTION: the flat value of FUNCTION in MiB.
mib() {
    pp_pprof -top -nodecount=200 -unit=MB -sample_index="$2" "$1" 2>/dev/null |
        awk -v f="$3" '$NF == f || $NF == f "()" { v = $1; sub(/MB$/, "", v); if ($1 ~ /kB$/) { sub(/kB$/, "", v); v /= 1024 } if ($1 ~ /GB$/) { sub(/GB$/, "", v); v *= 1024 } if ($1 ~ /^0$/) v = 0; print v; exit }'
}

run_one() { # NAME PRELOAD
    local name=$1 preload=$2
    if ! pp_serve "$name" env LD_PRELOAD="$preload" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HEAP_RATE=1024 "$PROG"; then
        pp_bad "$name: preloaded prog_heap did not serve" "$(cat "$TMP/$name.err" 2>/dev/null)"
        return
    fi
    if ! pp_wait_line "$TMP/$name.out" '^ready$' 60 "$PID" >/dev/null; then
        pp_bad "$name: prog_heap did not get ready" "$(cat "$TMP/$name.err")"
        return
    fi
    local base=http://127.0.0.1:$PORT/debug/pprof
    curl -sS --max-time 30 -o "$TMP/$name.heap" "$base/heap"
    curl -sS --max-time 30 -o "$TMP/$name.allocs" "$base/allocs"
    local kn km ch chi
    kn=$(mib "$TMP/$name.heap" inuse_space keep_new)
    km=$(mib "$TMP/$name.heap" inuse_space keep_malloc)
    ch=$(mib "$TMP/$name.allocs" alloc_space churn)
    chi=$(mib "$TMP/$name.allocs" inuse_space churn)
    local tn tm tc
    tn=$(awk -F= '/^keep_new_bytes=/ { printf "%.3f", $2 / 1048576 }' "$TMP/$name.out")
    tm=$(awk -F= '/^keep_malloc_bytes=/ { printf "%.3f", $2 / 1048576 }' "$TMP/$name.out")
    tc=$(awk -F= '/^churn_bytes=/ { printf "%.3f", $2 / 1048576 }' "$TMP/$name.out")
    pp_check "$name: keep_new in use ${kn:-?} MiB, the allocator's ${tn:-?} MiB (within 3%)" \
        within 3 "${kn:-0}" "$tn"
    pp_check "$name: keep_malloc in use ${km:-?} MiB, the allocator's ${tm:-?} MiB (within 3%)" \
        within 3 "${km:-0}" "$tm"
    pp_check "$name: churn allocated ${ch:-?} MiB, the allocator's ${tc:-?} MiB (within 3%)" \
        within 3 "${ch:-0}" "$tc"
    pp_check "$name: churn has nothing in use (${chi:-none})" test -z "$chi" -o "$chi" = 0
    local alloc bytes
    alloc=$(sed -n 's/^allocator=//p' "$TMP/$name.out")
    bytes=$(sed -n 's/^allocator_bytes=//p' "$TMP/$name.out")
    case $name in
    jemalloc | tcmalloc)
        pp_check "$name: the program sees $name (${alloc:-?})" test "$alloc" = "$name"
        pp_check "$name: $name itself holds the kept memory ($((${bytes:-0} / MiB)) MiB >= 96)" \
            test "${bytes:-0}" -ge $((96 * MiB))
        ;;
    esac
    if [ "$name" = glibc ]; then
        # the endpoints' other forms
        local t
        t=$(curl -sS --max-time 30 "$base/heap?debug=1")
        pp_check "heap?debug=1 is Go's text format" grep -qE '^heap profile: [0-9]+: [0-9]+ \[[0-9]+: [0-9]+\] @ heap/2048$' <<<"$t"
        pp_check "heap?debug=1 names keep_new with its offset in a frame line" \
            grep -qP '^#\t0x[0-9a-f]+\tkeep_new(\(\))?\+0x[0-9a-f]+\t\S+prog_heap.cpp:[0-9]+$' <<<"$t"
        curl -sS --max-time 30 -D "$TMP/h400" -o "$TMP/b400" "$base/heap?seconds=1&debug=1"
        pp_check "heap?seconds&debug: 400 with Go's text" \
            test "$(pp_status "$TMP/h400")" = 400 -a "$(cat "$TMP/b400")" = "seconds and debug params are incompatible"
        curl -sS --max-time 30 -D "$TMP/hd" -o "$TMP/delta.pb.gz" "$base/heap?seconds=1"
        pp_check "heap?seconds=1: Content-Disposition heap-delta" \
            test "$(pp_header "$TMP/hd" Content-Disposition)" = 'attachment; filename="heap-delta"'
        local dn dc
        dn=$(mib "$TMP/delta.pb.gz" inuse_space keep_new)
        dc=$(mib "$TMP/delta.pb.gz" alloc_space churn)
        pp_check "heap?seconds=1: keep_new still in use in the window (${dn:-?} MiB), not a difference" pp_in_range "$dn" 54.4 73.6
        pp_check "heap?seconds=1: churn allocated nothing in the window (${dc:-none})" test -z "$dc" -o "$dc" = 0
        curl -sS --max-time 30 -D "$TMP/dh1" -o "$TMP/dh1.pb.gz" "$base/delta_heap"
        curl -sS --max-time 30 -o "$TMP/dh2.pb.gz" "$base/delta_heap"
        pp_check "delta_heap: Content-Disposition heap.pprof.gz" \
            test "$(pp_header "$TMP/dh1" Content-Disposition)" = 'attachment; filename="heap.pprof.gz"'
        local c1 c2 k2
        c1=$(mib "$TMP/dh1.pb.gz" alloc_space churn)
        c2=$(mib "$TMP/dh2.pb.gz" alloc_space churn)
        k2=$(mib "$TMP/dh2.pb.gz" inuse_space keep_new)
        pp_check "delta_heap first call: every allocation so far (churn ${c1:-?} MiB)" pp_in_range "$c1" 217.6 294.4
        local d1
        d1=$(pp_pprof -raw "$TMP/dh1.pb.gz" 2>/dev/null | sed -n 's/^Duration: //p')
        pp_check "delta_heap first call: its duration runs from the profiler's start (${d1:-?} s, the program ran longer than 1 s)" \
            awk -v d="${d1:-0}" 'BEGIN { exit !(d >= 1) }'
        pp_check "delta_heap second call: no new allocation (churn ${c2:-none})" test -z "$c2" -o "$c2" = 0
        pp_check "delta_heap second call: in-use live (keep_new ${k2:-?} MiB)" pp_in_range "$k2" 54.4 73.6
    fi
    pp_stop "$PID" >/dev/null 2>&1
}

run_one glibc "$LIB"
over() { run_one "$1" "$LIB:$2"; }
pp_each_allocator over
pp_finish
