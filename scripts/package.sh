#!/usr/bin/env bash
# package.sh: builds the Debian packages from the tree (libpprof0: the
# library; libpprof-dev: headers, static libraries, pkg-config and CMake
# files; libpprof-tools: libpprof-run and pprof-demo) with CPack, for
# /usr, and prints their paths. Installs the build's own dependencies
# first. Install them with: apt-get install ./build/package/*.deb
# Usage: scripts/package.sh [BUILD_DIR]   (default build/package)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
dir=${1:-build/package}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
    -DPPROF_TESTS=OFF -DPPROF_BENCH=OFF -DPPROF_DEMO=ON -DPPROF_DEBIAN_DOCS=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
rm -f "$dir"/*.deb
(cd "$dir" && cpack -G DEB >/dev/null)
ls "$(cd "$dir" && pwd)"/*.deb
