#!/usr/bin/env bash
# pg_perf.sh: perf's samples of Debian's postgresql over the services
# benchmark's measured work (pgbench's 4 gated clients, services.sh), to
# see which of libpprof's functions its cost is in: postgres pinned to
# CPU 0, perf recording CPU 0 from the gate's opening to the last
# transaction, pgbench, perf and this script on CPU 1.
#
#   bench/services/pg_perf.sh NAME with LIBPPROF_SO [PERF_ARGS...]   (as root)
#   bench/services/pg_perf.sh NAME without|onethread|firstthread [PERF_ARGS...]
#
# with: the library at its defaults (LD_PRELOAD, LIBPPROF_ADDR only: the
# services benchmark's "defaults"; readable by the postgres user, so copy
# it to /tmp); without: no libpprof; onethread: no libpprof, an idle
# thread in every process (onethread.c: what being multi-threaded alone
# costs); firstthread: that thread in the postmaster only (its backends
# are forked from a multi-threaded process, with no thread of their own).
# PERF_ARGS default to -F 8000 --call-graph dwarf,8192; with MODE=stat,
# perf stat's events instead. PG_N sets the transactions per client
# (default 60000). Writes $OUT_DIR/NAME.data (or .stat) and
# NAME.log (the service's CPU and wall time over the work); read the
# data with perf_share.py.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034 # services.sh reads it
ROOT=$(cd "$HERE/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 NAME with LIBPPROF_SO|without|onethread|firstthread [PERF_ARGS...]" >&2; exit 2; }
NAME=$1 ARM=$2
shift 2
LIB=
if [ "$ARM" = with ]; then
    LIB=${1:?with needs the library}
    shift
fi
PERF_ARGS=("$@")
[ ${#PERF_ARGS[@]} -gt 0 ] || PERF_ARGS=(-F 8000 --call-graph dwarf,8192)
MODE=${MODE:-record}
export PG_N=${PG_N:-60000}
OUT_DIR=${OUT_DIR:-/tmp/pg_perf}
WORK=$OUT_DIR/work
mkdir -p "$WORK"
chmod 755 "$OUT_DIR" "$WORK"
SVC_CPUS=0 TOOL_CPUS=1
taskset -pc 1 $$ >/dev/null
# shellcheck source=services.sh
. "$HERE/services.sh"
[ -d "$WORK/pg/data" ] || svc_postgresql_setup
[ -r /proc/sys/kernel/perf_event_paranoid ] && echo -1 >/proc/sys/kernel/perf_event_paranoid
env=()
case $ARM in
with) env=(LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$(free_port)) ;;
without) ;;
onethread)
    cc -O2 -shared -fPIC -pthread -o "$WORK/libonethread.so" "$HERE/onethread.c"
    env=(LD_PRELOAD="$WORK/libonethread.so") ;;
firstthread)
    cc -O2 -shared -fPIC -pthread -DFIRST_ONLY -o "$WORK/libfirstthread.so" "$HERE/onethread.c"
    env=(LD_PRELOAD="$WORK/libfirstthread.so") ;;
*) echo "$0: with, without, onethread or firstthread, not $ARM" >&2; exit 2 ;;
esac
LOG=$OUT_DIR/$NAME.log
echo "arm $ARM env: ${env[*]:-none}; PG_N=$PG_N; perf $MODE ${PERF_ARGS[*]}" | tee "$LOG"
svc_postgresql_start "${env[@]}"
svc_postgresql_load warm
for _ in $(seq 200); do svc_postgresql_idle && break; sleep 0.05; done
svc_postgresql_begin
sleep 0.3
if [ "$MODE" = record ]; then
    taskset -c 1 perf record -C 0 "${PERF_ARGS[@]}" -o "$OUT_DIR/$NAME.data" -- sleep 100000 2>"$OUT_DIR/$NAME.perf.err" &
else
    taskset -c 1 perf stat -C 0 "${PERF_ARGS[@]}" -o "$OUT_DIR/$NAME.stat" -- sleep 100000 2>"$OUT_DIR/$NAME.perf.err" &
fi
PERF=$!
sleep 1 # perf is up
read -r c0 _ < <(python3 "$HERE/cpu_ticks.py" "$SVC_PID")
t0=$(date +%s.%N)
svc_postgresql_finish
t1=$(date +%s.%N)
read -r c1 _ < <(python3 "$HERE/cpu_ticks.py" "$SVC_PID")
# perf record ends on SIGINT, writing its data; perf stat when its
# workload (sleep, its only child) ends
if [ "$MODE" = record ]; then
    kill -INT "$PERF"
else
    kill "$(pgrep -P "$PERF")"
fi
wait "$PERF" || true
svc_postgresql_release
svc_postgresql_stop
echo "service CPU over the work: $(((c1 - c0) * 1000 / $(getconf CLK_TCK))) ms; wall $(echo "$t1 - $t0" | bc) s" | tee -a "$LOG"
grep -E "^(tps|number of transactions actually)" "$WORK/pgbench.out" | tee -a "$LOG"
