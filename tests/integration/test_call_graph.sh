#!/usr/bin/env bash
# test-labels: quick
# test_call_graph.sh: who calls whom, from the build's objects
# (scripts/graph.py): no cycle of calls across folders but through
# interpose/'s functions with C library names (which every libc call of
# the library reaches: docs/architecture.md), and none between heap/'s
# files (its countdown, re-entry guard and granule map are a leaf file,
# heap_guard.c, below the sampler and the tables).
# Usage: test_call_graph.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$ROOT/scripts/graph.py" "$BUILD" --dot "$TMP/graph.dot" >"$TMP/graph.txt" 2>&1
rc=$?
pp_check "graph.py reads the build's objects (exit $rc)" test "$rc" = 0
pp_check "no cycle across folders without the libc names ($(grep 'libc names left out' "$TMP/graph.txt"))" \
    grep -q 'libc names left out: none$' "$TMP/graph.txt"
pp_check "the cycle with them runs through interpose/" grep -q 'with them: .*interpose' "$TMP/graph.txt"
pp_check "no cycle between heap/'s files ($(grep '(heap)' "$TMP/graph.txt" || echo none))" \
    sh -c "! grep -q '(heap)\$' '$TMP/graph.txt'"
pp_check "the drawing for graphviz names every folder's calls" grep -q '"server" -> "recorder"' "$TMP/graph.dot"
pp_finish
