#!/usr/bin/env bash
# test.sh: installs what is missing, then builds and runs the tests.
# Usage: scripts/test.sh           the full run (what .ci/run runs)
#        scripts/test.sh --quick   the quick run (a few minutes)
#
# The full run, five builds:
#   plain build      every test (unit, integration with curl and go tool pprof,
#                    signal/hook tests)
#   ASan+UBSan build the unit tests not labelled plain-only
#   TSan build       the tests labelled concurrency
#   clang build      the whole tree built with clang (warnings are errors
#                    there too), the unit tests not labelled plain-only
#   fuzz build       clang with libFuzzer, ASan and UBSan: each fuzz target
#                    of tests/fuzz for PPROF_FUZZ_SECONDS (30), two at a time
# The quick run: the plain build alone (build/test-quick), every test not
# labelled slow; no service is installed (the slow tests need them).
# Tests run two at a time, except those labelled timing or slow
# (RUN_SERIAL: ctest runs each alone). docs/testing.md lists the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
# the heap tests run over both allocators (jemalloc, tcmalloc); test_tls makes
# certificates with openssl and builds Debian's standalone pprof; python3 finds
# free ports. The full run also builds with clang; the real-services test runs
# Debian's memcached, redis, nginx and postgresql (with their load tools) and
# python3 under LD_PRELOAD, test_daemons those daemonized and dnsmasq and
# rsyslog (dig and logger drive them); test_ui drives the flame-graph page
# in headless chromium; test_package runs lintian on the Debian packages;
# test_lifecycle drops root with setpriv and capsh (libcap2-bin); test_phpfpm
# runs Debian's php-fpm driven by cgi-fcgi (libfcgi-bin), test_sshd a second
# sshd with ssh logins, test_varnish varnish driven by wrk, test_squid squid
# as a reverse proxy driven by wrk, test_haproxy haproxy in front of nginx,
# test_chrony chronyd in its seccomp filter (an NTP client in python3),
# test_apache Apache httpd driven by wrk, test_vsftpd vsftpd's sessions
# (an FTP client in python3),
# test_postfix private postfix instances driven by smtp-source;
# test_debuginfod serves debug files with Debian's debuginfod and builds
# memcached from Debian's source (libevent-dev, patch, xz-utils);
# test_mariadb runs mariadb-server under sysbench's load, test_named
# bind9's named under dnsperf's;
# scripts/analyze.sh runs clang-tidy and cppcheck
base=(libjemalloc2 libtcmalloc-minimal4 python3 openssl golang-github-google-pprof-dev)
if ((quick)); then
  scripts/deps.sh "${base[@]}"
else
  scripts/deps.sh "${base[@]}" clang memcached libmemcached-tools redis-server redis-tools \
      nginx-light wrk gdb postgresql chromium python3-websocket dnsmasq-base rsyslog dnsutils lintian \
      libcap2-bin php8.2-fpm libfcgi-bin openssh-server openssh-client varnish squid postfix haproxy chrony \
      apache2 vsftpd debuginfod libevent-dev patch xz-utils clang-tidy cppcheck mariadb-server sysbench bind9 dnsperf
fi
jobs=$(nproc)
run() { # dir label-args cmake-args...
  local dir=$1 sel=$2 t0=$SECONDS t1
  shift 2
  cmake -S . -B "$dir" -DPPROF_BENCH=OFF "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  t1=$SECONDS
  # shellcheck disable=SC2086 # sel is a list of ctest arguments
  (cd "$dir" && ctest --output-on-failure -j2 $sel)
  echo "$dir: built in $((t1 - t0)) s, tested in $((SECONDS - t1)) s"
}
if ((quick)); then
  run build/test-quick "-LE slow" -DCMAKE_BUILD_TYPE=RelWithDebInfo
  echo "quick run passed (the full run: scripts/test.sh)"
  exit 0
fi
scripts/analyze.sh build/test-analyze # static analysis: cppcheck and clang-tidy, at zero findings
run build/test-plain "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
run build/test-asan "-L unit -LE plain-only" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_ASAN=ON
run build/test-tsan "-L concurrency" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_TSAN=ON
CC=clang CXX=clang++ run build/test-clang "-L unit -LE plain-only" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_BENCH=ON
CC=clang CXX=clang++ run build/test-fuzz "-L fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_FUZZ=ON -DPPROF_TESTS=OFF
scripts/test-arm64.sh build/test-arm64 # arm64: cross-built, run under qemu-aarch64-static
echo "all test builds passed"
