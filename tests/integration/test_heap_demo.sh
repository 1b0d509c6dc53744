#!/usr/bin/env bash
# test-labels: quick
# test_heap_demo.sh: pprof-demo's heap profiles through its own mounted
# endpoints, read with go tool pprof straight from the URL: the search
# cache (cache_search_results) is the live heap, the per-request carts
# (build_cart) are allocated and freed; heap samples carry the request
# labels (endpoint, tenant), so -tags and -tagfocus split them; Go's sample
# and period types; the index lists heap and allocs; the mutex and block
# profiles (on in the demo) show the inventory lock, with labels. The
# profiler's own work is not in them: after a CPU profile (whose
# symbolizing fills libdw's tables), no heap, allocs or block sample has a
# frame of libpprof, libdw, libelf or libmicrohttpd, and the index shows
# the symbolizer's tables in libpprof's own heap; no stack shows the
# thread-start prologue.
# Usage: test_heap_demo.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

pp_serve demo env LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HEAP_RATE=65536 "$BUILD/pprof-demo" ||
    pp_give_up "pprof-demo did not serve" demo
base=http://127.0.0.1:$PORT/debug/pprof
sleep 4 # a few hundred requests

# flat FUNCTION TOP_FILE: the flat column of FUNCTION (with its unit).
flat() { awk -v f="$1" '$NF == f { print $1; exit }' "$2"; }

pp_pprof -top -sample_index=inuse_space "$base/heap" >"$TMP/heap.top" 2>"$TMP/heap.err"
v=$(flat cache_search_results "$TMP/heap.top")
pp_check "heap: cache_search_results holds live memory ($v)" test -n "$v" -a "$v" != 0
pp_check "heap: build_cart holds none" test -z "$(flat build_cart "$TMP/heap.top")"
pp_pprof -top -sample_index=alloc_space "$base/allocs" >"$TMP/allocs.top" 2>&1
v=$(flat build_cart "$TMP/allocs.top")
pp_check "allocs: build_cart allocated ($v)" test -n "$v" -a "$v" != 0
pp_check "allocs: pprof shows alloc_space first" grep -q '^Type: alloc_space' "$TMP/allocs.top"
pp_check "heap: pprof shows inuse_space first" grep -q '^Type: inuse_space' "$TMP/heap.top"

pp_pprof -tags -sample_index=inuse_space "$base/heap" >"$TMP/tags.txt" 2>&1
pp_check "heap: samples carry the endpoint label" grep -q '/search' "$TMP/tags.txt"
pp_check "heap: samples carry the tenant label" grep -q 'globex' "$TMP/tags.txt"
pp_check "heap: numeric bytes label" grep -qE '^ *bytes:' "$TMP/tags.txt"
pp_pprof -top -sample_index=inuse_space -tagfocus=endpoint=/checkout "$base/heap" >"$TMP/focus.top" 2>&1
pp_check "heap: -tagfocus=endpoint=/checkout leaves no search cache" \
    test -z "$(flat cache_search_results "$TMP/focus.top")"
pp_pprof -top -sample_index=inuse_space -tagfocus=endpoint=/search "$base/heap" >"$TMP/focus2.top" 2>&1
pp_check "heap: -tagfocus=endpoint=/search keeps it" test -n "$(flat cache_search_results "$TMP/focus2.top")"

curl -sS --max-time 30 -o "$TMP/heap.pb.gz" "$base/heap"
pp_pprof -raw "$TMP/heap.pb.gz" >"$TMP/raw.txt" 2>&1
pp_check "Go's sample types" grep -q 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes' "$TMP/raw.txt"
pp_check "period type space/bytes" grep -q '^PeriodType: space bytes' "$TMP/raw.txt"
pp_check "period = the rate" grep -q '^Period: 65536' "$TMP/raw.txt"
# the demo turns the contention profiles on: checkouts wait for the inventory lock
pp_pprof_shows "mutex: reserve_inventory waits for the inventory lock" reserve_inventory -top "$base/mutex"
pp_pprof_shows "mutex: with the request's labels" /checkout -tags "$base/mutex"
pp_pprof_shows "block: reserve_inventory blocks" reserve_inventory -top "$base/block"
curl -sS --max-time 10 "$base/" >"$TMP/index.html"
pp_check "index lists heap" grep -q 'href="heap?debug=1"' "$TMP/index.html"
pp_check "index lists allocs" grep -q 'href="allocs?debug=1"' "$TMP/index.html"

# the profiler's own work
curl -sS --max-time 30 -o "$TMP/cpu.pb.gz" "$base/profile?seconds=2"
OWN='pp_|pprof_http|dwfl|dwarf_|elf_|libdw|MHD_|scheduler_main|finisher_main|collector_main|deflate'
for k in heap allocs; do
    pp_pprof -top -nodecount=1000 "$base/$k" >"$TMP/own-$k.top" 2>&1
    # (the demo's own daemon is the program's: its start-up allocations are)
    found=$(awk 'f; /flat%/ { f = 1 }' "$TMP/own-$k.top" | grep -v 'MHD_start_daemon' | grep -E "$OWN" | head -3)
    if [ -z "$found" ]; then
        pp_ok "$k: no frame of the profiler's own work"
    else
        pp_bad "$k: no frame of the profiler's own work" "$found"
    fi
done
pp_pprof -top -nodecount=1000 "$base/block?seconds=2" >"$TMP/own-block.top" 2>&1
pp_check "block: no wait of the profiler's threads" \
    test -z "$(awk 'f; /flat%/ { f = 1 }' "$TMP/own-block.top" | grep -E "$OWN" | head -3)"
curl -sS --max-time 10 "$base/" >"$TMP/index2.html"
own=$(grep -o "and [0-9.]* MiB of its own" "$TMP/index2.html" | grep -o '[0-9.]*')
pp_check "index: the symbolizer's own heap shown (${own:-?} MiB)" awk -v v="${own:-0}" 'BEGIN { exit !(v > 0) }'
pp_pprof -traces "$TMP/cpu.pb.gz" >"$TMP/cpu.traces" 2>&1
pp_check "profile: stacks run from start_thread to the thread's function, no prologue" \
    test -z "$(grep -wE "(pp_threads_)?trampoline" "$TMP/cpu.traces")" -a -n "$(grep -w start_thread "$TMP/cpu.traces")"
pp_finish
