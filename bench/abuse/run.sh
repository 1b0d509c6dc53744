#!/usr/bin/env bash
# run.sh: the host's own work while its endpoint is under abuse. abuse_host
# (pinned to CPU 0) serves the endpoint and counts its work each second;
# abuse.py (pinned to CPU 1, so that its own CPU use does not compete)
# holds IDLE idle and SLOW slow-header connections, reopened a second
# after the server closes them, and times the index every 0.25 s. Rounds
# alternate quiet and abused, SECONDS each; prints the host's median
# units/s per round and the attacker's figures.
# Usage: bench/abuse/run.sh BUILD_DIR [ROUNDS] [SECONDS] [IDLE] [SLOW]
set -euo pipefail
build=$1 rounds=${2:-2} secs=${3:-20} idle=${4:-1000} slow=${5:-200}
here=$(cd "$(dirname "$0")" && pwd)
for r in $(seq "$rounds"); do
    for mode in quiet abused; do
        out=$(mktemp)
        taskset -c 0 "$build/bench/abuse_host" 127.0.0.1:0 "$((secs + 2))" >"$out" &
        host=$!
        for _ in $(seq 50); do grep -q '^port=' "$out" && break; sleep 0.1; done
        port=$(sed -n 's/^port=//p' "$out")
        sleep 1
        attack="(none)"
        if [ "$mode" = abused ]; then
            attack=$(taskset -c 1 python3 "$here/abuse.py" 127.0.0.1 "$port" "$idle" "$slow" "$secs")
        else
            sleep "$secs"
        fi
        wait "$host"
        median=$(sed -n 's/^units=//p' "$out" | sed '1d;$d' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        echo "round $r $mode: host units/s median $median; attacker: $attack"
        rm -f "$out"
    done
done
