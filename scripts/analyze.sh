#!/usr/bin/env bash
# analyze.sh: the static-analysis stage: cppcheck and clang-tidy over the
# library's sources (profiler/, server/, include/), at zero findings.
#
#   scripts/analyze.sh [BUILD_DIR]     (default build/test-analyze)
#
# Configures BUILD_DIR for its compile_commands.json (and the generated
# protobuf-c sources), then runs:
#   - cppcheck: warning, portability and performance checks, every
#     configuration of the sources (but arch.h's #error for an
#     architecture libpprof does not build for); a finding that is not a
#     bug is suppressed where it is, `cppcheck-suppress ID ; reason`;
#   - clang-tidy: the check set in .clang-tidy (the clang static
#     analyzer's core, unix and security checks, and bugprone's); a
#     finding that is not a bug gets `// NOLINT(check): reason`.
# Prints each finding and exits 1 when there is any.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${1:-build/test-analyze}
JOBS=${PPROF_JOBS:-$(nproc)}
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DPPROF_TESTS=OFF -DPPROF_BENCH=OFF -DPPROF_DEMO=OFF -DPPROF_ASSERTS=ON >"$BUILD/analyze-configure.log" 2>&1 ||
    { cat "$BUILD/analyze-configure.log"; exit 1; }
# the generated sources the library's files include
cmake --build "$BUILD" -j"$JOBS" --target pp_proto >"$BUILD/analyze-build.log" 2>&1 ||
    { tail -30 "$BUILD/analyze-build.log"; exit 1; }
# the library's own files: a compile database of them alone
mkdir -p "$BUILD/analyze"
python3 - "$BUILD/compile_commands.json" "$BUILD/analyze/compile_commands.json" <<'PY'
import json, os, sys
root = os.getcwd()
keep, seen = [], set()
for e in json.load(open(sys.argv[1])):
    f = os.path.relpath(os.path.join(e["directory"], e["file"]), root)
    if f.startswith(("profiler/", "server/")) and f.endswith(".c") and f not in seen:
        seen.add(f)
        # gcc's TLS-descriptor flag (CMakeLists.txt), which clang's parser lacks
        e["command"] = e["command"].replace(" -mtls-dialect=gnu2", "")
        keep.append(e)
json.dump(keep, open(sys.argv[2], "w"), indent=1)
PY
mapfile -t SRCS < <(python3 -c 'import json, os, sys
for e in json.load(open(sys.argv[1])): print(os.path.relpath(os.path.join(e["directory"], e["file"])))' \
    "$BUILD/analyze/compile_commands.json")
[ ${#SRCS[@]} -gt 50 ] || { echo "analyze.sh: only ${#SRCS[@]} sources in $BUILD/compile_commands.json" >&2; exit 1; }
fail=0

t0=$SECONDS
out=$BUILD/cppcheck.txt
cppcheck --project="$BUILD/analyze/compile_commands.json" --enable=warning,portability,performance \
    --inline-suppr --inconclusive -j"$JOBS" --quiet --suppress=missingIncludeSystem \
    --suppress='preprocessorErrorDirective:*/arch/arch.h' \
    --suppress='*:*/build/*' --suppress='*:/usr/*' --error-exitcode=3 \
    --template='{file}:{line}: {severity} ({id}): {message}' 2>"$out" >/dev/null
rc=$?
n=$(grep -c ': ' "$out" || true)
[ "$rc" = 0 ] || [ "$n" != 0 ] || { echo "cppcheck failed ($rc):"; cat "$out"; fail=1; }
echo "cppcheck: ${#SRCS[@]} files, $n findings, $((SECONDS - t0)) s"
[ "$n" = 0 ] || { cat "$out"; fail=1; }

t0=$SECONDS
out=$BUILD/clang-tidy.txt
printf '%s\n' "${SRCS[@]}" | xargs -P"$JOBS" -n8 clang-tidy -p "$BUILD/analyze" --quiet 2>/dev/null >"$out"
n=$(grep -cE ': (warning|error): ' "$out" || true)
echo "clang-tidy: ${#SRCS[@]} files, $n findings, $((SECONDS - t0)) s"
[ "$n" = 0 ] || { grep -E -A3 ': (warning|error): ' "$out"; fail=1; }
exit $fail
