#!/usr/bin/env bash
# test-arm64.sh: libpprof on arm64, cross-built here and run under
# qemu-aarch64-static (user-mode emulation: real per-thread CPU timers and
# signals, emulated instructions). scripts/test.sh's full run runs it.
# Usage: scripts/test-arm64.sh [build dir]   (default build/test-arm64; as root)
#
# 1. Installs what is missing: Debian's cross compiler, qemu-user-static,
#    and the :arm64 packages of the dependencies (multiarch: the arm64
#    architecture is added to dpkg when it is not there).
# 2. Registers the emulator for arm64 programs with binfmt_misc (mounted
#    if needed) for the run, so that tests which re-execute themselves
#    (/proc/self/exe) work, and removes the registration it made at exit
#    (where binfmt_misc cannot be had, those four tests are left out).
# 3. Builds the tree (the library, the demo, the tests) with
#    cmake/aarch64-linux-gnu.cmake (warnings are errors there too).
# 4. Runs those unit tests under the emulator (test_unwind_guard: the walk
#    through a bogus x29 into a guard page is refused, not a fault; its
#    statistic, 300 samples in a second of CPU, held here under load;
#    test_unwind_stop: stacks the walk cannot follow end with a frame
#    saying why, real ones at _start or clone3 with none).
#    Left out, and why:
#      test_signal         reads /proc/self/timers, which shows the
#                          emulator's own host timers and signal numbers
#      test_contention     does not finish under qemu 7.2 (its lock waits)
#      test_fork_locks     300 forks take 35 s or more emulated (3.5 s
#                          natively), past its 60 s watchdog under load
#      test_cpu, test_fork, test_heap, test_labels_leak, test_trace,
#      test_signal_displaced
#                          statistics on CPU time and sample counts (and
#                          8 to 30 s each here): the emulator's speed
#                          makes them measure qemu; the end-to-end check
#                          below profiles real CPU work instead
#    The integration tests (shell, curl) are not run: they drive x86-64
#    helper programs, ptrace (which the emulator does not offer) or
#    /proc/PID/task/TID/syscall (which shows the emulator's host state).
# 5. End to end: the arm64 pprof-demo under the emulator serves
#    profile?seconds=3, heap and goroutine?debug=2; this machine's go tool
#    pprof reads the profiles and finds the demo's functions by name with
#    file and line, and the inlined thread_cpu_ms as an inline frame; no
#    CPU sample ends in an "[unwinding stopped: ...]" frame.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test-arm64}
if [ "$(uname -m)" = aarch64 ]; then
  echo "test-arm64: this machine is arm64: the other builds of scripts/test.sh ran natively"
  exit 0
fi
t0=$SECONDS

# --- 1. packages
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "test-arm64: adding the arm64 architecture to dpkg"
  dpkg --add-architecture arm64
fi
scripts/deps.sh gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static python3 \
  libmicrohttpd-dev:arm64 libprotobuf-c-dev:arm64 zlib1g-dev:arm64 libdw-dev:arm64 \
  libelf-dev:arm64 libgnutls28-dev:arm64

# --- 2. binfmt_misc
binfmt=/proc/sys/fs/binfmt_misc
registered=0
cleanup() {
  if ((registered)); then echo -1 >"$binfmt/qemu-aarch64" 2>/dev/null || true; fi
  if [ -n "${demo_pid:-}" ]; then kill "$demo_pid" 2>/dev/null || true; fi
  if [ -n "${tmp:-}" ]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
if [ ! -e "$binfmt/qemu-aarch64" ] && [ -w "$binfmt/register" ] && [ -r /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
  cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register" && registered=1
fi
# --- 3. build
tests=(test_arch test_cfi test_base test_labels test_heap_hooks test_heap_threads test_heap_delta
       test_own_heap test_encode test_encode_stream test_http test_server test_server_fork test_profile
       test_recorder test_store test_merge test_ring test_symbolize test_custom test_fds test_cxx
       test_messages test_sigmask test_unwind_guard test_unwind_stop)
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  reexec="test_heap_hooks test_heap_threads test_own_heap test_symbolize"
  echo "test-arm64: binfmt_misc is not available here: left out, as they re-execute themselves: $reexec"
  for t in $reexec; do tests=("${tests[@]/$t}"); done
  read -r -a tests <<<"${tests[*]}"
fi
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPROF_BENCH=OFF >/dev/null
# The whole tree: one make run (make builds named targets one run each,
# and each run checks the layout again).
cmake --build "$build" -j"$(nproc)" >/dev/null
t1=$SECONDS
echo "test-arm64: built in $((t1 - t0)) s"

# --- 4. unit tests under the emulator (ctest runs them through qemu-aarch64-static)
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
(cd "$build" && ctest -R "$regex" -j2 --timeout 180 --output-on-failure)
t2=$SECONDS

# --- 5. end to end
tmp=$(mktemp -d)
fails=0 passes=0
ok() { echo "ok: $1"; passes=$((passes + 1)); }
bad() { echo "FAIL: $1"; [ -z "${2:-}" ] || sed 's/^/    /' "$2" | head -40; fails=$((fails + 1)); }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
LIBPPROF_ADDR=127.0.0.1:$port qemu-aarch64-static "$build/pprof-demo" >"$tmp/demo.log" 2>&1 &
demo_pid=$!
base=http://127.0.0.1:$port/debug/pprof
for _ in $(seq 100); do
  curl -sf -o /dev/null "$base/" && break
  sleep 0.1
done
# The inlined frame is where the demo's threads read their CPU clock, a
# small share of the samples: up to three profiles are taken for it.
for try in 1 2 3; do
  curl -sf -o "$tmp/cpu.pb.gz" "$base/profile?seconds=3" || { bad "profile?seconds=3 answered" "$tmp/demo.log"; break; }
  go tool pprof -lines -top "$tmp/cpu.pb.gz" >"$tmp/cpu.top" 2>&1 || true
  go tool pprof -traces "$tmp/cpu.pb.gz" >"$tmp/cpu.traces" 2>&1 || true
  grep -q 'thread_cpu_ms (inline)' "$tmp/cpu.traces" && break
done
for fn in compute_checkout_totals rank_search_results; do
  if grep -Eq " $fn .*examples/demo\.c:[0-9]+" "$tmp/cpu.top"; then ok "CPU profile: $fn with file and line"
  else bad "CPU profile: $fn with file and line" "$tmp/cpu.top"; fi
done
# The demo's stacks are walked to their outermost frames (_start, and
# thread_start of clone3 for its threads): none was cut.
if grep -q 'unwinding stopped' "$tmp/cpu.traces"; then
  bad "CPU profile: no sample ends where the walk stopped" "$tmp/cpu.traces"
else
  ok "CPU profile: no sample ends where the walk stopped"
fi
if grep -q 'thread_cpu_ms (inline)' "$tmp/cpu.traces" &&
   grep -A1 'thread_cpu_ms (inline)' "$tmp/cpu.traces" | grep -q compute_checkout_totals; then
  ok "CPU profile: the inlined thread_cpu_ms inside compute_checkout_totals (profile $try)"
else
  bad "CPU profile: the inlined thread_cpu_ms inside compute_checkout_totals (3 profiles)" "$tmp/cpu.traces"
fi
# The allocations since the start (the in-use cache fills slowly here).
for _ in 1 2 3; do
  curl -sf -o "$tmp/heap.pb.gz" "$base/heap" || { bad "heap answered" "$tmp/demo.log"; break; }
  go tool pprof -sample_index=alloc_space -lines -top "$tmp/heap.pb.gz" >"$tmp/heap.top" 2>&1 || true
  grep -Eq " (cache_search_results|build_cart) .*examples/demo\.c:[0-9]+" "$tmp/heap.top" && break
  sleep 2
done
if grep -Eq " (cache_search_results|build_cart) .*examples/demo\.c:[0-9]+" "$tmp/heap.top"; then
  ok "heap profile: the demo's allocating functions with file and line"
else
  bad "heap profile: the demo's allocating functions with file and line" "$tmp/heap.top"
fi
# A worker that waits shows as one frame under the emulator (its pc is
# read from /proc, which shows qemu's registers): dumps are taken until
# one finds a worker running, up to ten.
running_worker() {
  grep -Eq '^(compute_checkout_totals|rank_search_results)$' "$1" &&
    grep -Eq 'examples/demo\.c:[0-9]+$' "$1" && grep -q '^worker$' "$1"
}
for try in $(seq 10); do
  curl -sf -o "$tmp/threads.txt" "$base/goroutine?debug=2" || { bad "goroutine?debug=2 answered" "$tmp/demo.log"; break; }
  running_worker "$tmp/threads.txt" && break
  sleep 0.3
done
if running_worker "$tmp/threads.txt"; then
  ok "goroutine?debug=2: a running worker's stack by name, file and line (dump $try)"
else
  bad "goroutine?debug=2: a running worker's stack by name, file and line (10 dumps)" "$tmp/threads.txt"
fi
kill "$demo_pid" 2>/dev/null || true
wait "$demo_pid" 2>/dev/null || true
demo_pid=
echo "test-arm64: unit tests in $((t2 - t1)) s, end to end in $((SECONDS - t2)) s, $((SECONDS - t0)) s in all"
echo "test-arm64: $passes passed, $fails failed"
((fails == 0))
