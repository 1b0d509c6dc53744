#!/usr/bin/env bash
# postfix_rounds.sh: Debian's postfix under libpprof, started and stopped
# ROUNDS times with the page cache dropped before each start; each round
# carries smtp-source's load for 7 s with a 5 s CPU profile of the tree,
# as tests/integration/test_postfix.sh does once, with the CPU timers at
# HZ. The delivery agent, virtual, runs as root and changes its effective
# ids around each delivery; it runs through a wrapper that keeps its
# standard error, where libpprof says when the profiler's threads could
# not follow such a change ("could not take the program's capabilities").
# Prints per round the mails sent and delivered, virtual's processes, the
# maillog's "killed by signal" lines and libpprof's warnings; then the
# totals. Run as root.
# Usage: bench/services/postfix_rounds.sh [BUILD_DIR] [ROUNDS] [HZ]
#   (build/dev, 20, 1000)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build/dev}
ROUNDS=${2:-20}
HZ=${3:-1000}
"$ROOT/scripts/deps.sh" postfix curl >/dev/null
D=$(mktemp -d /tmp/postfix_rounds.XXXXXX)
trap 'postfix -c "$D/conf" abort >/dev/null 2>&1 || true; rm -rf "$D"' EXIT
chmod 755 "$D"
cp "$BUILD/libpprof.so" "$D/libpprof.so"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
SPORT=$(free_port)
# virtual through a wrapper that keeps its standard error
mkdir -p "$D/libexec"
for f in /usr/lib/postfix/sbin/*; do ln -s "$f" "$D/libexec/"; done
rm "$D/libexec/virtual"
printf '#!/bin/sh\necho start >>%s/virtual.err\nexec /usr/lib/postfix/sbin/virtual "$@" 2>>%s/virtual.err\n' \
    "$D" "$D" >"$D/libexec/virtual"
chmod 755 "$D/libexec/virtual"
# shellcheck source=../../tests/integration/postfix_conf.sh
. "$ROOT/tests/integration/postfix_conf.sh"
pf_conf "$D" "$SPORT" "daemon_directory = $D/libexec"
delivered() { find "$D/mail/box" -type f 2>/dev/null | wc -l; }
warned() { grep -c "could not take the program's capabilities" "$D/virtual.err" 2>/dev/null || true; }
killed() { grep -c "killed by signal" "$D/maillog" 2>/dev/null || true; }
echo "# postfix_rounds: $ROUNDS rounds, CPU timers at $HZ Hz, $(uname -r)"
echo "# round sent delivered virtual_processes killed_lines warnings"
t_sent=0 t_got=0 t_virt=0
for r in $(seq "$ROUNDS"); do
    rm -rf "$D/mail/box" "$D/virtual.err" "$D/maillog"
    sync
    echo 3 >/proc/sys/vm/drop_caches
    PORT=$(free_port)
    env LD_PRELOAD="$D/libpprof.so" LIBPPROF_ADDR="127.0.0.1:$PORT" LIBPPROF_CPU_HZ="$HZ" \
        postfix -c "$D/conf" start >/dev/null 2>&1
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/debug/pprof/cmdline" && break; sleep 0.1; done
    sent=0 end=$((SECONDS + 7))
    sleep 1 && curl -s -o /dev/null --max-time 30 "http://127.0.0.1:$PORT/debug/pprof/profile?seconds=5" &
    while [ $SECONDS -lt $end ]; do
        smtp-source -s 5 -m 300 -f a@pp.test -t box@pp.test "127.0.0.1:$SPORT" 2>/dev/null && sent=$((sent + 300))
    done
    wait
    for _ in $(seq 300); do [ "$(delivered)" -ge "$sent" ] && break; sleep 0.1; done
    postfix -c "$D/conf" stop >/dev/null 2>&1
    sleep 1
    got=$(delivered) virt=$(grep -c '^start' "$D/virtual.err" 2>/dev/null || true)
    echo "$r $sent $got $virt $(killed) $(warned)"
    grep "killed by signal" "$D/maillog" 2>/dev/null | sed 's/^/#   /' || true
    t_sent=$((t_sent + sent)) t_got=$((t_got + got)) t_virt=$((t_virt + virt))
    cat "$D/virtual.err" >>"$D/all.err" 2>/dev/null || true
    cat "$D/maillog" >>"$D/all.log" 2>/dev/null || true
done
echo "# total: $t_sent sent, $t_got delivered, $t_virt virtual processes," \
    "$(grep -c "killed by signal" "$D/all.log" 2>/dev/null || true) killed," \
    "$(grep -c "could not take the program's capabilities" "$D/all.err" 2>/dev/null || true) warnings"
