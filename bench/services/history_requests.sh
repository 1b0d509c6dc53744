#!/usr/bin/env bash
# history_requests.sh: every request of Debian's redis, memcached and
# postgresql under the history, against a run without libpprof. Each
# service is given the services benchmark's fixed work by its own load
# tool (services.sh), started afresh for every run: without libpprof,
# preloaded with the defaults, with LIBPPROF_HISTORY=600, and with the
# wall-clock series and a dump directory too, where the past is asked for
# a second into the work (profile?last=60, wall?last=60, allocs?last=60,
# profile?last=5; in postgresql the hub merges its members' answers),
# then a CPU and a wall profile of a second, heap, allocs, mutex, block
# and a thread dump;
# ROUNDS rounds of the four in turn. Prints per run the work's wall time,
# the requests done and failed as the load tool counts them, the
# service's exit status and its log's lines above notices; for the asked
# arm each answer's status and time, and what its profile covers.
# Nothing is pinned: the load tool shares the cores (run.sh is the pinned
# measurement of CPU). Run as root.
# Usage: bench/services/history_requests.sh [BUILD_DIR] [ROUNDS] [SERVICES]
#   (build/dev, 2, redis,memcached,postgresql)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${1:-$ROOT/build/dev}
ROUNDS=${2:-2}
SERVICES=${3:-redis,memcached,postgresql}
"$ROOT/scripts/deps.sh" redis-server redis-tools memcached libmemcached-tools postgresql curl golang-go >/dev/null
WORK=$(mktemp -d /tmp/history_requests.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
LIB=$WORK/libpprof.so # readable by the postgres user
cp "$BUILD/libpprof.so" "$LIB"
mkdir -p "$WORK/dumps"
chmod 777 "$WORK/dumps"
# shellcheck disable=SC2034 # services.sh reads them: nothing pinned
SVC_CPUS="" TOOL_CPUS=""
# shellcheck source=services.sh
. "$HERE/services.sh"

# the work, and what the load tool says of it: "DONE FAILED"
work() {
    case $1 in
    redis)
        svc_redis_load full
        echo "$(grep -c 'requests per second' "$WORK/redis-benchmark.out") of 2 tests," \
            "$(grep -ci 'error' "$WORK/redis-benchmark.out" || true) errors"
        ;;
    memcached)
        svc_memcached_load full
        echo "$(grep -ci 'error\|fail' "$WORK/memcslap.out" || true) errors"
        ;;
    postgresql)
        svc_postgresql_begin
        svc_postgresql_finish
        svc_postgresql_release
        echo "$(sed -n 's/^number of transactions actually processed: //p' "$WORK/pgbench.out") transactions," \
            "$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/pgbench.out") failed"
        ;;
    esac
}

# log lines above notices
log_errors() {
    case $1 in
    redis) grep -c ' # ' "$WORK/redis.log" || true ;;
    memcached) grep -vc '^$' "$WORK/memcached.log" || true ;;
    postgresql) grep -cE '(ERROR|FATAL|PANIC|WARNING):' "$WORK/postgres.log" || true ;;
    esac
}

# stops the service; its exit status in STOP_RC
stop() {
    STOP_RC=0
    if [ "$1" = postgresql ]; then
        kill -INT "$(head -1 "$WORK/pg/data/postmaster.pid")" 2>/dev/null || true
    else
        kill -TERM "$SVC_PID" 2>/dev/null || true
    fi
    wait "$SVC_PID" || STOP_RC=$?
}

# asks the service's hub, a second into the work, for the past, then for
# every other kind of profile and a thread dump as the work goes on
ask() {
    local q out=""
    sleep 1
    for q in "profile?last=60" "wall?last=60" "allocs?last=60" "profile?last=5" "profile?seconds=1" \
        "wall?seconds=1" heap allocs mutex block "goroutine?debug=2"; do
        out+=$(curl -s --max-time 30 -o "$WORK/p.out" -w "; $q %{http_code} in %{time_total} s" \
            "http://127.0.0.1:$PPORT/debug/pprof/$q")
        if [ "$q" = "goroutine?debug=2" ]; then
            out+=": $(grep -c '^thread ' "$WORK/p.out") threads"
        else
            out+=$(go tool pprof -top "$WORK/p.out" 2>/dev/null |
                sed -n 's/^Duration: \([^,]*\), Total samples = \([^ ]*\).*/: \1, \2 of samples/p')
        fi
    done
    echo "$out" >"$WORK/asked"
}

one() {
    local svc=$1 arm=$2 pre=() t0 t1 said asked=""
    PPORT=$(free_port)
    case $arm in
    defaults) pre=(LD_PRELOAD="$LIB" LIBPPROF_ADDR="127.0.0.1:$PPORT") ;;
    history) pre=(LD_PRELOAD="$LIB" LIBPPROF_ADDR="127.0.0.1:$PPORT" LIBPPROF_HISTORY=600) ;;
    wall+asked) pre=(LD_PRELOAD="$LIB" LIBPPROF_ADDR="127.0.0.1:$PPORT" LIBPPROF_HISTORY=600 LIBPPROF_HISTORY_WALL=1
        LIBPPROF_HISTORY_DUMP_DIR="$WORK/dumps") ;;
    esac
    "svc_${svc}_start" "${pre[@]}"
    "svc_${svc}_load" warm
    local asker=
    if [ "$arm" = wall+asked ]; then
        ask &
        asker=$!
    fi
    t0=$(date +%s.%N)
    said=$(work "$svc")
    t1=$(date +%s.%N)
    if [ -n "$asker" ]; then
        wait "$asker"
        asked=$(cat "$WORK/asked")
    fi
    stop "$svc"
    printf '%-10s %-10s work %5.2f s  %s  exit %s  log lines above notices %s%s\n' "$svc" "$arm" \
        "$(echo "$t1 - $t0" | bc)" "$said" "$STOP_RC" "$(log_errors "$svc")" "$asked"
}

for svc in ${SERVICES//,/ }; do
    "svc_${svc}_setup"
done
for _ in $(seq "$ROUNDS"); do
    for svc in ${SERVICES//,/ }; do
        for arm in none defaults history wall+asked; do
            one "$svc" "$arm"
        done
    done
done
