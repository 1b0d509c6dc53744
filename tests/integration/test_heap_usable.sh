#!/usr/bin/env bash
# test_heap_usable.sh: a sampled object looks to the program like any other
# (test-labels: plain-only timing)
#
# Over glibc, jemalloc and tcmalloc, prog_sds under LD_PRELOAD:
#   sizes: with every allocation sampled (LIBPPROF_HEAP_RATE=1), the usable
#          size the program sees (malloc_usable_size, and jemalloc's
#          sallocx) for each request size equals what it sees without
#          libpprof;
#   grow:  a program that sizes its strings by malloc_usable_size and trims
#          their slack with realloc has the in-use bytes it counted itself
#          in the heap profile, within 10% (sampled objects once showed a
#          page of slack, were trimmed, and left the profile: -80%);
#          over glibc also within 10% of the allocator's own count
#          (mallinfo2); over jemalloc and tcmalloc, whose size classes
#          round requests up, that count (stats.allocated,
#          generic.current_allocated_bytes) is reported beside it;
#   cost:  the allocator's own count of live bytes with sampling at the
#          default rate is within 2% of its count with sampling off (a
#          sampled object takes a page-aligned block).
# Usage: test_heap_usable.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_sds

run_one() { # NAME ALLOCATOR ("" for glibc)
    local name=$1 alloc=$2 pre
    pre=${alloc:+:$alloc}
    env ${alloc:+LD_PRELOAD=$alloc} "$PROG" sizes >"$TMP/$name.plain" 2>&1
    env LD_PRELOAD="$LIB$pre" LIBPPROF_HEAP_RATE=1 "$PROG" sizes >"$TMP/$name.sampled" 2>&1
    local n diff
    n=$(wc -l <"$TMP/$name.plain")
    diff=$(diff "$TMP/$name.plain" "$TMP/$name.sampled" | grep -c '^>')
    pp_check "$name: every sampled block's usable size as unsampled ($n sizes, $diff differ)" \
        test "$n" -gt 100 -a "$diff" = 0
    [ "$diff" = 0 ] || diff "$TMP/$name.plain" "$TMP/$name.sampled" | head -5 >&2

    if ! pp_serve "$name" env LD_PRELOAD="$LIB$pre" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HEAP_RATE=16384 \
        "$PROG" grow; then
        pp_bad "$name: prog_sds did not serve" "$(cat "$TMP/$name.err" 2>/dev/null)"
        return
    fi
    if ! pp_wait_line "$TMP/$name.out" '^ready$' 120 "$PID" >/dev/null; then
        pp_bad "$name: prog_sds did not get ready" "$(cat "$TMP/$name.err")"
        return
    fi
    local own total alloc how
    own=$(sed -n 's/^own_bytes=//p' "$TMP/$name.out")
    alloc=$(sed -n 's/^allocator_bytes=\([0-9]*\).*/\1/p' "$TMP/$name.out")
    how=$(sed -n 's/^allocator_bytes=[0-9]* //p' "$TMP/$name.out")
    curl -sS --max-time 60 -o "$TMP/$name.heap" "http://127.0.0.1:$PORT/debug/pprof/heap"
    # pprof -raw lists each sample's values: alloc_objects alloc_space inuse_objects inuse_space
    total=$(pp_pprof -raw "$TMP/$name.heap" 2>/dev/null |
        awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $1 ~ /^[0-9]+$/ && $4 ~ /:$/ { t += $4 } END { print t + 0 }')
    pp_check "$name: heap in use $total B against the program's own $own B (within 10%)" \
        awk -v t="$total" -v o="$own" 'BEGIN { exit !(o > 0 && t >= 0.9 * o && t <= 1.1 * o) }'
    pp_stop "$PID" >/dev/null 2>&1
    local off on
    off=$(allocator_count "$name.off" "$pre" 0)
    on=$(allocator_count "$name.on" "$pre" "")
    if [ "$name" = glibc ]; then
        pp_check "$name: heap in use $total B against the allocator's own $alloc B ($how; within 10%)" \
            awk -v t="$total" -v o="$alloc" 'BEGIN { exit !(o > 0 && t >= 0.9 * o && t <= 1.1 * o) }'
    else
        pp_note "$name: heap in use $total B, the program's own $own B; $how: $off B with sampling off (its size classes round requests up), $alloc B at this test's rate of 16 KiB (and the sampled objects' pages)"
    fi
    pp_check "$name: the allocator's live bytes with sampling at the default rate $on B, off $off B (within 2%)" \
        awk -v a="$on" -v b="$off" 'BEGIN { exit !(b > 0 && a >= 0.98 * b && a <= 1.02 * b) }'
}

# allocator_count NAME PRELOAD_SUFFIX RATE ("": the default): prog_sds
# grow's allocator_bytes under libpprof at that heap rate.
allocator_count() {
    pp_serve "$1" env LD_PRELOAD="$LIB$2" LIBPPROF_ADDR=127.0.0.1:@PORT@ ${3:+LIBPPROF_HEAP_RATE=$3} "$PROG" grow >/dev/null ||
        return
    pp_wait_line "$TMP/$1.out" '^ready$' 120 "$PID" >/dev/null &&
        sed -n 's/^allocator_bytes=\([0-9]*\).*/\1/p' "$TMP/$1.out"
    pp_stop "$PID" >/dev/null 2>&1
}

run_one glibc ""
pp_each_allocator run_one
pp_finish
