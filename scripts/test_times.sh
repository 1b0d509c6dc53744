#!/usr/bin/env bash
# test_times.sh: each test's time in the builds of the last run, from
# ctest's own log (BUILD/Testing/Temporary/LastTest.log), slowest first.
#
#   scripts/test_times.sh [BUILD_DIR...]
#
# With no argument: the builds scripts/test.sh makes (build/test-plain,
# -asan, -tsan, -clang, -fuzz, -arm64, and build/test-quick), those that
# exist. Prints "SECONDS BUILD TEST STATUS" lines, then each build's sum.
cd "$(dirname "$0")/.." || exit 1
if [ $# -eq 0 ]; then
    set -- build/test-plain build/test-asan build/test-tsan build/test-clang build/test-fuzz build/test-arm64 \
        build/test-quick
fi
logs=()
for b in "$@"; do
    [ -r "$b/Testing/Temporary/LastTest.log" ] && logs+=("$b")
done
[ ${#logs[@]} -gt 0 ] || { echo "test_times.sh: no Testing/Temporary/LastTest.log in: $*" >&2; exit 1; }
for b in "${logs[@]}"; do
    log=$b/Testing/Temporary/LastTest.log
    awk -v b="$(basename "$b")" '
        /^[0-9]+\/[0-9]+ Test: / { t = $3 }
        /^Test time = / { s = $4 }
        /^Test (Passed|Failed)/ || /^Test.*(Failed|Timeout|Not Run)/ {
            if (t != "") { printf "%8.2f %-12s %-28s %s\n", s, b, t, substr($2, 1, length($2) - 1); sum += s; n++ }
            t = ""
        }
        END { if (n) printf "%8.2f %-12s %-28s (%d tests)\n", sum, b, "total", n }' "$log"
done | sort -rn
