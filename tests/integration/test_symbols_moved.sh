#!/usr/bin/env bash
# test-labels: quick
# test_symbols_moved.sh: a CPU profile names a static function and a static
# function inlined into it (at -O2, in a binary linked without -rdynamic),
# with source file and line, the inlined one as an inline frame, when go tool
# pprof reads the profile after the binary is gone: (A) removed after the
# profile was fetched, (B) removed while the program runs, before the fetch.
# Usage: test_symbols_moved.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

SRC=$(cd "$(dirname "$0")" && pwd)/prog_inline_linked.c
PROG=$BUILD/tests/prog_inline_linked
begin=$(grep -n '@inline-begin' "$SRC" | cut -d: -f1)
end=$(grep -n '@inline-end' "$SRC" | cut -d: -f1)
callsite=$(grep -n '@call-site' "$SRC" | cut -d: -f1)

# Premises: the names exist only in .symtab (not exported), and the
# binary has a build ID to compare with the profile's mapping.
if [ -x "$PROG" ] && [ -n "$begin" ] && [ -n "$end" ] && [ -n "$callsite" ]; then
    pp_ok "helper program built and source markers found"
else
    pp_bad "helper program $PROG or the markers in $SRC are missing"
    pp_finish
fi
dyn=$(readelf -W --dyn-syms "$PROG" | grep -E 'churn_static_outer|blend_inlined_kernel')
sym=$(readelf -W -s "$PROG" | grep -E 'FUNC +LOCAL .* churn_static_outer')
if [ -z "$dyn" ] && [ -n "$sym" ]; then
    pp_ok "churn_static_outer is a local symbol, absent from the dynamic symbol table"
else
    pp_bad "premise: churn_static_outer should be in .symtab only" "dynsym: $dyn" "symtab: $sym"
fi
buildid=$(readelf -n "$PROG" | awk '/Build ID:/ { print $3 }')

mkdir -p "$TMP/a" "$TMP/b"
cp "$PROG" "$TMP/a/prog_inline_linked"
cp "$PROG" "$TMP/b/prog_inline_linked"

# A: fetch, then remove the binary.
pp_start a "$TMP/a/prog_inline_linked" 127.0.0.1:0
pid_a=$PID
line=$(pp_wait_line "$TMP/a.out" '^port=[0-9]+$' 10 "$pid_a") && port_a=${line#port=}
# B: remove the binary while the program runs, then fetch.
pp_start b "$TMP/b/prog_inline_linked" 127.0.0.1:0
pid_b=$PID
line=$(pp_wait_line "$TMP/b.out" '^port=[0-9]+$' 10 "$pid_b") && port_b=${line#port=}
if [ -z "${port_a:-}" ] || [ -z "${port_b:-}" ]; then
    pp_bad "helper programs did not start" "$(cat "$TMP/a.err" "$TMP/b.err")"
    pp_finish
fi
rm -f "$TMP/b/prog_inline_linked"

curl -sS --max-time 15 -o "$TMP/a.pb.gz" -w '%{http_code}' \
    "http://127.0.0.1:$port_a/debug/pprof/profile?seconds=2" >"$TMP/a.code" 2>&1 &
fetch_a=$!
curl -sS --max-time 15 -o "$TMP/b.pb.gz" -w '%{http_code}' \
    "http://127.0.0.1:$port_b/debug/pprof/profile?seconds=2" >"$TMP/b.code" 2>&1 &
fetch_b=$!
wait $fetch_a $fetch_b
rm -f "$TMP/a/prog_inline_linked"
pp_stop "$pid_a"
pp_stop "$pid_b"

for w in a b; do
    case $w in
    a) what="removed after the fetch" ;;
    b) what="removed before the fetch" ;;
    esac
    prof=$TMP/$w.pb.gz
    if [ "$(cat "$TMP/$w.code")" = 200 ] && [ -s "$prof" ] && [ ! -e "$TMP/$w/prog_inline_linked" ]; then
        pp_ok "[$w] profile fetched (binary $what)"
    else
        pp_bad "[$w] profile fetch failed" "$(cat "$TMP/$w.code")"
        continue
    fi

    raw=$(pp_pprof -raw "$prof" 2>&1)
    # The inlined function is the first line of a location, within its
    # body's lines; the next line of that location is its caller at the
    # call site.
    inl=$(printf '%s\n' "$raw" | awk -v b="$begin" -v e="$end" -v c="$callsite" '
        /^Locations/ { inloc = 1; next }
        /^Mappings/ { inloc = 0 }
        !inloc { next }
        /^ +[0-9]+: 0x/ { first = ($4 == "blend_inlined_kernel" && $5 ~ /prog_inline_linked\.c:[0-9]+$/);
                          if (first) { n = $5; sub(/.*:/, "", n); first = (n + 0 > b && n + 0 < e) }
                          next }
        first && $1 ~ /^churn_static_outer(\.[a-z]+\.[0-9]+)*$/ && $2 ~ ("prog_inline_linked\\.c:" c "$") { found = 1 }
        { first = 0 }
        END { exit !found }' && echo yes)
    if [ "$inl" = yes ]; then
        pp_ok "[$w] -raw: blend_inlined_kernel (file:line in its body) inlined in churn_static_outer at line $callsite"
    else
        pp_bad "[$w] -raw: no location with blend_inlined_kernel inlined into churn_static_outer:$callsite" "$raw"
    fi

    map=$(printf '%s\n' "$raw" | awk '/^Mappings/ { m = 1; next } m && /prog_inline_linked/')
    if printf '%s\n' "$map" | grep -qE "/prog_inline_linked $buildid \[FN\]\[FL\]\[LN\]\[IN\]$"; then
        pp_ok "[$w] executable mapping: path without ' (deleted)', build ID $buildid, [FN][FL][LN][IN]"
    else
        pp_bad "[$w] executable mapping wrong (want path, build ID $buildid, [FN][FL][LN][IN])" "$map"
    fi

    traces=$(pp_pprof -traces "$prof" 2>&1)
    if printf '%s\n' "$traces" | awk '
            prev ~ /^ +[0-9.]+[a-z]*s +blend_inlined_kernel \(inline\)$/ && $0 ~ /^ +churn_static_outer(\.[a-z]+\.[0-9]+)*$/ { ok = 1 }
            { prev = $0 } END { exit !ok }'; then
        pp_ok "[$w] -traces: blend_inlined_kernel (inline) directly above churn_static_outer"
    else
        pp_bad "[$w] -traces: inline frame not shown above its caller" "$traces"
    fi

    lines=$(pp_pprof -lines -top -nodecount=50 "$prof" 2>&1)
    if printf '%s\n' "$lines" | grep -qE " blend_inlined_kernel \S*prog_inline_linked\.c:[0-9]+ \(inline\)$" &&
        printf '%s\n' "$lines" | grep -qE " churn_static_outer(\.[a-z]+\.[0-9]+)* \S*prog_inline_linked\.c:$callsite$"; then
        pp_ok "[$w] -lines -top: both functions with prog_inline_linked.c:line"
    else
        pp_bad "[$w] -lines -top: names with file:line missing" "$lines"
    fi

    # The names must come from the profile itself, not from a lookup.
    nosym=$(pp_pprof -symbolize=none -top -nodecount=50 "$prof" 2>&1)
    if printf '%s\n' "$nosym" | grep -qE ' blend_inlined_kernel \(inline\)$' &&
        printf '%s\n' "$nosym" | grep -qE ' churn_static_outer(\.[a-z]+\.[0-9]+)*$'; then
        pp_ok "[$w] -symbolize=none: names are in the profile"
    else
        pp_bad "[$w] -symbolize=none: names missing" "$nosym"
    fi
done

pp_finish
