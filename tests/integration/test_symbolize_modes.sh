#!/usr/bin/env bash
# test-labels: slow
# test_symbolize_modes.sh: ?symbolize= and LIBPPROF_SYMBOLIZE
#
# pprof-demo's heap, read with go tool pprof -raw -symbolize=none (so the
# tool adds nothing of its own):
#   full:       function names, files and lines; mappings [FN][FL][LN]
#   functions:  names only (no DWARF read); mappings [FN]
#   none:       addresses, mappings and build IDs only; go tool pprof then
#               symbolizes the profile itself from the binary at hand
#   a bad value is a 400 with a one-line reason; LIBPPROF_SYMBOLIZE sets
#   the default (functions here), a request still chooses.
# The pages of the files read for a profile are given back when it is
# symbolized: libelf's mapping of pprof-demo keeps only its section header
# table's pages (44 kB resident without the release).
# The symbolizer gives its memory back when idle (LIBPPROF_SYMBOLIZER_IDLE=1
# here): the symbolizer's own heap on the index drops to under 1 MiB, and the
# next profile is symbolized again.
# Usage: test_symbolize_modes.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

# locations FILE: the Locations section of pprof -raw, tool symbolization off
locations() { pp_pprof -raw -symbolize=none "$1" 2>/dev/null | sed -n '/^Locations/,/^Mappings/p'; }
mappings() { pp_pprof -raw -symbolize=none "$1" 2>/dev/null | sed -n '/^Mappings/,$p'; }

pp_serve demo env LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HEAP_RATE=16384 "$BUILD/pprof-demo" ||
    pp_give_up "pprof-demo did not serve" demo
base=http://127.0.0.1:$PORT/debug/pprof
sleep 2
for m in full functions none; do
    curl -sS --max-time 30 -o "$TMP/$m.pb.gz" "$base/heap?symbolize=$m"
done
# libelf's private mapping of the whole executable (rw-p from offset 0):
# "<count> <Rss kB>" of such mappings
libelf_rss() {
    awk '/^[0-9a-f]+-[0-9a-f]+ rw-p 00000000 .*\/pprof-demo$/ { n++; m = 1; next }
         /^[0-9a-f]+-/ { m = 0 } m && /^Rss:/ { kb += $2 } END { print n + 0, kb + 0 }' "/proc/$PID/smaps"
}
read -r nmaps kb <<<"$(libelf_rss)"
pp_check "full: the executable's debug sections read for it are given back (libelf mappings $nmaps, resident $kb kB: the section header table's pages stay)" \
    test "$nmaps" -ge 1 -a "$kb" -le 8
pp_check "full: names with files and lines" grep -qE ' cache_search_results \S*demo\.c:[0-9]+ ' <(locations "$TMP/full.pb.gz")
pp_check "full: the executable's mapping has functions, files, lines and inlined calls looked for" \
    grep -qE 'pprof-demo [0-9a-f]+ \[FN\]\[FL\]\[LN\]\[IN\]' <(mappings "$TMP/full.pb.gz")
pp_check "functions: names without files or lines" grep -qE ' cache_search_results :0 ' <(locations "$TMP/functions.pb.gz")
pp_check "functions: no location has a file" test -z "$(locations "$TMP/functions.pb.gz" | grep -E '\.c:[0-9]')"
pp_check "functions: mappings say functions only" grep -qE 'pprof-demo [0-9a-f]+ \[FN\]$' <(mappings "$TMP/functions.pb.gz")
pp_check "none: no function names" test -z "$(locations "$TMP/none.pb.gz" | grep -E 'cache_search_results|build_cart')"
pp_check "none: mappings keep path and build ID, no flags" grep -qE 'pprof-demo [0-9a-f]{40} *$' <(mappings "$TMP/none.pb.gz")
pp_pprof -top -sample_index=inuse_space "$TMP/none.pb.gz" >"$TMP/none.top" 2>&1
pp_check "none: go tool pprof symbolizes it from the binary" grep -q cache_search_results "$TMP/none.top"
curl -sS --max-time 10 -D "$TMP/h400" -o "$TMP/b400" "$base/heap?symbolize=some"
pp_check "symbolize=some: 400 with a reason" \
    test "$(pp_status "$TMP/h400")" = 400 -a "$(cat "$TMP/b400")" = 'invalid value for "symbolize" - must be full, functions or none'
curl -sS --max-time 30 -o "$TMP/cpu-none.pb.gz" "$base/profile?seconds=1&symbolize=none"
pp_check "profile?seconds=1&symbolize=none: a CPU profile without names" \
    test -n "$(locations "$TMP/cpu-none.pb.gz" | grep -E '^ +[0-9]+: 0x')" -a \
    -z "$(locations "$TMP/cpu-none.pb.gz" | grep -E 'worker|pprof_do')"
pp_stop "$PID" >/dev/null 2>&1

pp_serve demo2 env LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HEAP_RATE=16384 LIBPPROF_SYMBOLIZE=functions LIBPPROF_SYMBOLIZER_IDLE=1 \
    "$BUILD/pprof-demo" ||
    pp_give_up "pprof-demo with LIBPPROF_SYMBOLIZE did not serve" demo2
base=http://127.0.0.1:$PORT/debug/pprof
sleep 2
curl -sS --max-time 30 -o "$TMP/env.pb.gz" "$base/heap"
curl -sS --max-time 30 -o "$TMP/env-full.pb.gz" "$base/heap?symbolize=full"
pp_check "LIBPPROF_SYMBOLIZE=functions: the default is names only" \
    grep -qE ' cache_search_results :0 ' <(locations "$TMP/env.pb.gz")
pp_check "LIBPPROF_SYMBOLIZE=functions: symbolize=full still gives lines" \
    grep -qE ' cache_search_results \S*demo\.c:[0-9]+ ' <(locations "$TMP/env-full.pb.gz")

own() { curl -sS --max-time 10 "$base/" | grep -o "and [0-9.]* MiB of its own" | grep -o '[0-9.]*'; }
busy=$(own)
sleep 3
idle=$(own)
pp_check "idle symbolizer: the symbolizer's own heap ${busy:-?} MiB after symbolizing, ${idle:-?} MiB 3 s later (< 1)" \
    awk -v b="${busy:-0}" -v i="${idle:-99}" 'BEGIN { exit !(b >= 1 && i < 1) }'
curl -sS --max-time 30 -o "$TMP/again.pb.gz" "$base/heap?symbolize=full"
pp_check "idle symbolizer: the next profile is symbolized again" \
    grep -qE ' cache_search_results \S*demo\.c:[0-9]+ ' <(locations "$TMP/again.pb.gz")
row=$(curl -sS --max-time 10 "$base/" | grep -o '<td>Symbolizer</td><td>[^<]*')
pp_check "index: the symbolizer's row counts page releases and the idle release (${row#*<td>Symbolizer</td><td>})" \
    grep -qE 'tables built; cache of answers [1-9][0-9]* addresses.*given back after [1-9][0-9]*, everything dropped [1-9][0-9]* times' <<<"$row"

pp_stop "$PID" >/dev/null 2>&1

# Compressed debug sections are inflated whole by libelf: an object whose
# sections would inflate past LIBPPROF_SYMBOLIZER_INFLATE_MB is symbolized
# from its symbol tables only, and the profile says so.
GZ=$BUILD/tests/prog_plain_gz
pp_check "premise: prog_plain_gz has compressed debug sections" \
    test -n "$(readelf -S -W "$GZ" | grep -E '\.debug_info .* C ')"
# budget_profiles NAME PROG: PROG preloaded with inflate budgets 0 and 128,
# a 1 s CPU profile of each as pprof -raw in $TMP/NAME0.raw, $TMP/NAME128.raw
budget_profiles() {
    local name=$1 prog=$2 budget
    for budget in 0 128; do
        pp_serve "$name$budget" env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ \
            LIBPPROF_SYMBOLIZER_INFLATE_MB=$budget "$prog" 30 -1 ||
            pp_give_up "preloaded $prog did not serve" "$name$budget"
        curl -sS --max-time 30 -o "$TMP/$name$budget.pb.gz" "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=1"
        pp_stop "$PID" >/dev/null 2>&1
        pp_pprof -raw -symbolize=none "$TMP/$name$budget.pb.gz" >"$TMP/$name$budget.raw" 2>&1
    done
}
budget_profiles gz "$GZ"
pp_check "inflate budget 0: the profile says why prog_plain_gz has no lines" \
    grep -qE 'Comment: .*prog_plain_gz: its compressed debug sections would take [0-9]+ MB inflated, over LIBPPROF_SYMBOLIZER_INFLATE_MB \(0\)' "$TMP/gz0.raw"
pp_check "inflate budget 0: functions only for it" \
    grep -qE 'prog_plain_gz [0-9a-f]+ \[FN\]$' "$TMP/gz0.raw"
# budget_named_and_lines NAME WHAT: over the budget (0) busy_loop_for_preload
# is named without a file; within it (128) it has lines and the profile no
# comment about NAME.
budget_named_and_lines() {
    pp_check "$2, budget 0: busy_loop_for_preload named, without a file" \
        grep -qE ' busy_loop_for_preload :0 ' "$TMP/${1}0.raw"
    pp_check "$2, budget 128: lines, no comment" \
        test -n "$(grep -E ' busy_loop_for_preload \S*prog_plain\.c:[0-9]+ ' "$TMP/${1}128.raw")" -a \
        -z "$(grep "Comment: .*prog_plain_$1" "$TMP/${1}128.raw")"
}
budget_named_and_lines gz "compressed sections"

# The same with the debug sections in a separate, compressed file found
# through .gnu_debuglink (as distributions ship them), the program stripped
# of its symbol table too: over the budget, names still come from the
# debug file's symbol table, and no DWARF is read.
SP=$TMP/split/prog_plain_split
mkdir -p "$TMP/split"
cp "$BUILD/tests/prog_plain" "$SP"
objcopy --only-keep-debug --compress-debug-sections=zlib "$SP" "$SP.debug" &&
    strip --strip-all "$SP" && objcopy --add-gnu-debuglink="$SP.debug" "$SP" ||
    pp_give_up "objcopy could not split prog_plain's debug file" split
budget_profiles split "$SP"
pp_check "separate debug file, budget 0: the comment names it" \
    grep -qE 'Comment: .*prog_plain_split\.debug: its compressed debug sections would take' "$TMP/split0.raw"
budget_named_and_lines split "separate debug file"
pp_finish
