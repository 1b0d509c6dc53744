#!/usr/bin/env bash
# history_memory.sh: the history's memory over a long run of a busy
# service with many threads: Debian's memcached with 16 worker threads,
# preloaded with LIBPPROF_HISTORY=600 (ten minutes kept, the default
# LIBPPROF_HISTORY_MB of 16) and LIBPPROF_HISTORY_WALL=1 (the wall-clock
# series too: every thread, busy or idle, 99 times a second), under
# memcslap (16 connections, sets and gets in turn) for MINUTES minutes.
# Every minute it prints the index's History row figures (the memory the
# slices hold, their count, slices dropped early for the bound) and
# memcached's resident set; at the end the largest of each, and how long
# profile?last=600 and wall?last=60 take to answer and what they cover.
# Not part of the test suite. Run as root (memcached runs as root here).
# Usage: bench/services/history_memory.sh [BUILD_DIR] [MINUTES]   (build/dev, 30)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build/dev}
MINUTES=${2:-30}
LIB=$BUILD/libpprof.so
"$ROOT/scripts/deps.sh" memcached libmemcached-tools curl golang-go >/dev/null
DIR=$(mktemp -d /tmp/libpprof-histmem.XXXXXX)
PORT=18211 PPORT=16211

env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PPORT LIBPPROF_HISTORY=600 LIBPPROF_HISTORY_WALL=1 \
    memcached -u root -l 127.0.0.1 -p "$PORT" -m 1024 -t 16 >"$DIR/memcached.log" 2>&1 &
MC=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PPORT/debug/pprof/cmdline" && break; sleep 0.1; done

load() {
    while :; do
        for t in set get; do
            memcslap --servers="127.0.0.1:$PORT" --test=$t --concurrency=16 --execute-number=20000 \
                >>"$DIR/memcslap.out" 2>&1 || true
        done
    done
}
load &
LOAD=$!
trap 'kill $LOAD 2>/dev/null; kill $MC 2>/dev/null; rm -rf "$DIR"' EXIT

max_mib=0 max_rss=0
printf '%-6s %-10s %-8s %-8s %-10s %s\n' minute history_MiB slices dropped rss_MiB "cpu_s (memcached)"
for m in $(seq "$MINUTES"); do
    sleep 60
    row=$(curl -s --max-time 10 "http://127.0.0.1:$PPORT/debug/pprof/" | tr -d '\n' |
        grep -oE '<td>History</td><td>[^<]*' | sed 's/<[^>]*>//g')
    mib=$(sed -n 's/.* \([0-9.]*\) MiB of .*/\1/p' <<<"$row")
    slices=$(sed -n 's/.* in \([0-9]*\) slices.*/\1/p' <<<"$row")
    dropped=$(sed -n 's/.*(\([0-9]*\) slices dropped early.*/\1/p' <<<"$row")
    rss=$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$MC/status")
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.0f", ($12 + $13) / hz }' "/proc/$MC/stat")
    printf '%-6s %-10s %-8s %-8s %-10s %s\n' "$m" "${mib:-?}" "${slices:-?}" "${dropped:-?}" "$rss" "$cpu"
    max_mib=$(awk -v a="$max_mib" -v b="${mib:-0}" 'BEGIN { print (b > a ? b : a) }')
    max_rss=$(awk -v a="$max_rss" -v b="$rss" 'BEGIN { print (b > a ? b : a) }')
done
echo "largest: history $max_mib MiB (bound 16 MiB), memcached resident set $max_rss MiB"
for q in "profile?last=600" "wall?last=60"; do
    out=$(curl -s -o "$DIR/p.pb.gz" -w '%{http_code} in %{time_total} s' "http://127.0.0.1:$PPORT/debug/pprof/$q")
    echo "$q: $out$(go tool pprof -top "$DIR/p.pb.gz" 2>/dev/null |
        sed -n 's/^Duration: \([^,]*\), Total samples = \([^ ]*\).*/: \1, \2 of samples/p')"
done
echo "memcslap: $(awk '/^Time to (set|get) / { n++; k += $4 } END { printf "%d runs, %d operations", n, k }' "$DIR/memcslap.out")"
