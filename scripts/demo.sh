#!/usr/bin/env bash
# demo.sh: installs what is missing, builds, and runs pprof-demo in the
# foreground, serving http://127.0.0.1:6060/debug/pprof/ (LIBPPROF_ADDR overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target pprof-demo
exec ./build/pprof-demo "$@"
