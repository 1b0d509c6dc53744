#!/usr/bin/env bash
# test.sh: installs what is missing, then builds and runs the whole suite:
#   plain build      every test (unit, integration with curl and go tool pprof,
#                    signal/hook tests)
#   ASan+UBSan build the unit tests not labelled plain-only
#   TSan build       the tests labelled concurrency
#   clang build      the whole tree built with clang (warnings are errors
#                    there too), the unit tests not labelled plain-only
#   fuzz build       clang with libFuzzer, ASan and UBSan: each fuzz target
#                    of tests/fuzz for PPROF_FUZZ_SECONDS (30), two at a time
set -euo pipefail
cd "$(dirname "$0")/.."
# the heap tests run over both allocators; clang builds too; the real-services
# test runs Debian's memcached, redis, nginx and postgresql (with their load tools) and python3
# under LD_PRELOAD; test_ui drives the flame-graph page in headless chromium
scripts/deps.sh libjemalloc2 libtcmalloc-minimal4 clang memcached libmemcached-tools redis-server redis-tools \
    python3 nginx-light wrk gdb postgresql openssl golang-github-google-pprof-dev chromium python3-websocket
jobs=$(nproc)
run() { # dir label-args cmake-args...
  local dir=$1 sel=$2; shift 2
  cmake -S . -B "$dir" -DPPROF_BENCH=OFF "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  (cd "$dir" && ctest --output-on-failure $sel)
}
run build/test-plain "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
run build/test-asan "-L unit -LE plain-only" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_ASAN=ON
run build/test-tsan "-L concurrency" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_TSAN=ON
CC=clang CXX=clang++ run build/test-clang "-L unit -LE plain-only" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_BENCH=ON
CC=clang CXX=clang++ run build/test-fuzz "-L fuzz -j2" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_FUZZ=ON -DPPROF_TESTS=OFF
echo "all test builds passed"
