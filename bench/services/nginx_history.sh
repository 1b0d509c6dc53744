#!/usr/bin/env bash
# nginx_history.sh: Debian's nginx (master and 2 workers, the services
# benchmark's configuration) under wrk -t1 -c20 for 15 s per run, without
# libpprof and preloaded with the defaults, with LIBPPROF_HISTORY=600, and
# with its wall-clock series and a dump directory too; ROUNDS rounds of
# the four in turn. The last arm also asks, 8 s into the load,
# profile?last=60, wall?last=60, profile?last=5 and wall?from=..&until=..
# (status, answer time, what the profile covers). Prints per run the
# requests per second, wrk's errors, nginx's exit status and its
# error.log lines other than notices. Nothing is pinned: wrk shares the
# cores (bench/services/run.sh is the pinned measurement).
# Usage: bench/services/nginx_history.sh [BUILD_DIR] [ROUNDS]   (build/dev, 2)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build/dev}
ROUNDS=${2:-2}
LIB=$BUILD/libpprof.so
"$ROOT/scripts/deps.sh" nginx-light wrk curl golang-go >/dev/null
. "$ROOT/tests/integration/services/nginx_conf.sh"
DIR=$(mktemp -d /tmp/libpprof-nginx.XXXXXX)
mkdir -p "$DIR/logs" "$DIR/dumps"
PORT=18080 PPORT=16060
nginx_conf "$DIR" "$PORT" 256

one() {
    local arm=$1 pre=() np
    case $arm in
    defaults) pre=(LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PPORT) ;;
    history) pre=(LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PPORT LIBPPROF_HISTORY=600) ;;
    wall+asked) pre=(LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PPORT LIBPPROF_HISTORY=600 LIBPPROF_HISTORY_WALL=1
        LIBPPROF_HISTORY_DUMP_DIR="$DIR/dumps") ;;
    esac
    rm -f "$DIR"/logs/*
    env "${pre[@]}" nginx -p "$DIR" -c "$DIR/nginx.conf" >"$DIR/nginx.out" 2>&1 &
    np=$!
    sleep 2
    wrk -t1 -c20 -d15s "http://127.0.0.1:$PORT/" >"$DIR/wrk.out" 2>&1 &
    local w=$! asked=""
    if [ "$arm" = wall+asked ]; then
        sleep 8
        local now q
        now=$(date +%s)
        for q in "profile?last=60" "wall?last=60" "profile?last=5" "wall?from=$((now - 6))&until=$((now - 2))"; do
            asked+=$(curl -s -o "$DIR/p.pb.gz" -w "; $q %{http_code} in %{time_total} s" "http://127.0.0.1:$PPORT/debug/pprof/$q")
            asked+=$(go tool pprof -top "$DIR/p.pb.gz" 2>/dev/null | sed -n 's/^Duration: \([^,]*\), Total samples = \([^ ]*\).*/: \1, \2 of samples/p')
        done
    fi
    wait "$w"
    kill -QUIT "$np"
    local rc=0
    wait "$np" || rc=$?
    printf '%-11s %10s req/s  wrk errors %s  nginx exit %s  error.log lines %s%s\n' "$arm" \
        "$(sed -n 's/^Requests\/sec: *//p' "$DIR/wrk.out")" "$(grep -cE 'Non-2xx|Socket errors' "$DIR/wrk.out" || true)" \
        "$rc" "$(grep -vc ' \[notice\] ' "$DIR/logs/error.log" || true)" "$asked"
}

for r in $(seq "$ROUNDS"); do
    for arm in none defaults history wall+asked; do
        one "$arm"
    done
done
rm -rf "$DIR"
