#!/usr/bin/env bash
# run.sh: what libpprof costs Debian's services, as their own CPU time for
# a fixed amount of work. Each service (redis, memcached, nginx,
# postgresql) is started afresh for every run, warmed up, then given a
# fixed amount of work by its own load tool (bench/services/services.sh
# says which); the figure is the CPU time (utime + stime, and that of
# exited children, from /proc) of all the service's processes over that
# work, read before and after it (cpu_ticks.py). Runs alternate without
# and with libpprof (LD_PRELOAD), PAIRS pairs per service and setting:
#
#   defaults  preloaded with the defaults (heap profiling at 512 KiB), no
#             profile running
#   cpu       the same, with a CPU profile (profile?seconds=N, 100 Hz, the
#             default) requested before the work and lasting past its end
#             (the service is stopped before the profile ends: ending it,
#             symbolizing and encoding, is not in the figure)
#   locks     preloaded with LIBPPROF_MUTEX_FRACTION=10 (Datadog's Go
#             profiler's default fraction) and LIBPPROF_BLOCK_RATE=10000
#             (waits of 10 us and more all kept), no profile running
#   history   preloaded with LIBPPROF_HISTORY=600 (the CPU history at the
#             default 100 Hz from start-up), no profile running; after
#             the work, profile?last=60 is asked and its status and the
#             CPU it holds printed
#
# The service runs on $SVC_CPUS (default CPU 0), the load tool, curl and
# this script on $TOOL_CPUS (default CPU 1), so that their own CPU does not
# compete with the service's. Prints every run's raw figures (for
# postgresql also the part spent after the last transaction, while the
# backends exit) and, per service and setting, the median of the pairs'
# with/without ratios and their spread; everything also goes to
# OUT_DIR/results.txt.
# Not part of the test suite. Run as root (memcached runs as root,
# postgres as the postgres user, which must be able to read the library).
# Usage: bench/services/run.sh [BUILD_DIR] [PAIRS] [SERVICES] [SETTINGS]
#   BUILD_DIR default build/svc (configured and built if it has no
#   libpprof.so); PAIRS default 5; SERVICES default
#   redis,memcached,nginx,postgresql; SETTINGS default defaults,cpu,locks
#   (history on request).
#   OUT_DIR (default a new directory under /tmp) keeps the results and
#   the services' logs; REDIS_N, MC_N, NGINX_N, PG_N size the work.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${1:-$ROOT/build/svc}
PAIRS=${2:-5}
SERVICES=${3:-redis,memcached,nginx,postgresql}
SETTINGS=${4:-defaults,cpu,locks}
NCPU=$(nproc)
if [ "$NCPU" -ge 2 ]; then
    SVC_CPUS=${SVC_CPUS-0} TOOL_CPUS=${TOOL_CPUS-1}
else
    SVC_CPUS=${SVC_CPUS-} TOOL_CPUS=${TOOL_CPUS-}
fi
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/libpprof-services.XXXXXX)}
WORK=$OUT_DIR/work
mkdir -p "$WORK"
chmod 755 "$OUT_DIR" "$WORK"
RESULTS=$OUT_DIR/results.txt
MUTEX_FRACTION=10
BLOCK_RATE=10000

"$ROOT/scripts/deps.sh" python3 curl memcached libmemcached-tools redis-server redis-tools \
    nginx-light wrk postgresql
if [ ! -e "$BUILD/libpprof.so" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BUILD" --target pprof -j"$NCPU" >/dev/null
fi
LIB=$(readlink -f "$BUILD/libpprof.so")

. "$HERE/services.sh"

say() { echo "$*" | tee -a "$RESULTS"; }

# now_ms: a monotonic clock in milliseconds
now_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

# settle: waits up to 10 s until the service has no transient processes
# left (svc_NAME_idle, when it has one: postgres's backends exit after
# their client), so that their CPU time has reached their parent's cutime
settle() {
    type "svc_${1}_idle" >/dev/null 2>&1 || return 0
    local i
    for i in $(seq 200); do
        "svc_${1}_idle" && return 0
        sleep 0.05
    done
    echo "settle: $1 still has transient processes" >&2
}

# one_run SERVICE SETTING with|without PAIR: one run; appends
# "ticks wall_ms" to $WORK/runs.SERVICE.SETTING.ARM and prints a line
one_run() {
    local svc=$1 setting=$2 arm=$3 pair=$4 pport="" prof="" curl_pid="" extra=""
    local -a env=()
    if [ "$arm" = with ]; then
        pport=$(free_port)
        env=(LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$pport)
        [ "$setting" = locks ] && env+=(LIBPPROF_MUTEX_FRACTION=$MUTEX_FRACTION LIBPPROF_BLOCK_RATE=$BLOCK_RATE)
        [ "$setting" = history ] && env+=(LIBPPROF_HISTORY=600)
    fi
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    "svc_${svc}_start" "${env[@]}"
    "svc_${svc}_load" warm
    local t0 c0 t1 c1 procs
    settle "$svc"
    if type "svc_${svc}_begin" >/dev/null 2>&1; then
        "svc_${svc}_begin"
    fi
    read -r c0 procs < <(python3 "$HERE/cpu_ticks.py" "$SVC_PID")
    if [ "$setting" = cpu ] && [ "$arm" = with ]; then
        prof=$OUT_DIR/$svc.cpu.$pair.pb.gz
        pinned tool curl -sS --max-time 300 -o "$prof" \
            "http://127.0.0.1:$pport/debug/pprof/profile?seconds=$PROF_SECONDS" &
        curl_pid=$!
        sleep 0.5 # the request reaches the server and the profile starts
        read -r c0 procs < <(python3 "$HERE/cpu_ticks.py" "$SVC_PID")
    fi
    t0=$(now_ms)
    if type "svc_${svc}_finish" >/dev/null 2>&1; then
        "svc_${svc}_finish"
    else
        "svc_${svc}_load" full
    fi
    local cm=""
    if type "svc_${svc}_release" >/dev/null 2>&1; then
        # the work done, the clients still connected: then they disconnect
        read -r cm _ < <(python3 "$HERE/cpu_ticks.py" "$SVC_PID")
        "svc_${svc}_release"
    fi
    settle "$svc"
    read -r c1 _ < <(python3 "$HERE/cpu_ticks.py" "$SVC_PID")
    t1=$(now_ms)
    [ -n "$cm" ] && extra=" (of which after the last transaction, disconnecting: $(( (c1 - cm) * 1000 / HZ )) ms)"
    if [ -n "$curl_pid" ]; then
        # the profile must still be running now that the work has ended
        if kill -0 "$curl_pid" 2>/dev/null; then
            extra="$extra (the profile ran throughout)"
        else
            extra="$extra PROFILE ENDED BEFORE THE WORK (raise PROF_SECONDS)"
        fi
        kill "$curl_pid" 2>/dev/null || true
        wait "$curl_pid" 2>/dev/null || true
    fi
    if [ "$setting" = locks ] && [ "$arm" = with ]; then
        local m b
        m=$(curl -sS --max-time 30 "http://127.0.0.1:$pport/debug/pprof/mutex?debug=1" | grep -cE '^[0-9]+ [0-9]+ @' || true)
        b=$(curl -sS --max-time 30 "http://127.0.0.1:$pport/debug/pprof/block?debug=1" | grep -cE '^[0-9]+ [0-9]+ @' || true)
        extra="$extra mutex profile $m stacks, block profile $b stacks"
    fi
    if [ "$setting" = history ] && [ "$arm" = with ]; then
        local code
        code=$(curl -sS --max-time 30 -o "$WORK/last.pb.gz" -w '%{http_code}' \
            "http://127.0.0.1:$pport/debug/pprof/profile?last=60" || true)
        extra="$extra profile?last=60: $code, $(go tool pprof -top "$WORK/last.pb.gz" 2>/dev/null |
            sed -n 's/.*Total samples = \([^ ]*\).*/\1/p') of samples"
    fi
    "svc_${svc}_stop"
    local ticks=$((c1 - c0)) wall=$((t1 - t0))
    echo "$ticks $wall" >>"$WORK/runs.$svc.$setting.$arm"
    say "$(printf '%-10s %-8s pair %d %-7s cpu %6d ms  wall %6d ms  procs %d  load %s%s' \
        "$svc" "$setting" "$pair" "$arm" $((ticks * 1000 / HZ)) "$wall" "$procs" "$load" "$extra")"
    LAST_WALL=$wall
}

# summary SERVICE SETTING TARGET_PERCENT: the pairs' ratios, their median
# and spread
summary() {
    local svc=$1 setting=$2 target=$3
    paste -d' ' "$WORK/runs.$svc.$setting.without" "$WORK/runs.$svc.$setting.with" |
        awk -v svc="$svc" -v setting="$setting" -v target="$target" '
            { r[NR] = $3 / $1; w[NR] = $4 / $2; rs = rs sprintf(" %.3f", r[NR]) }
            function median(a, n,   i, j, t, b) {
                for (i = 1; i <= n; i++) b[i] = a[i]
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
                return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
            }
            function lo(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
            function hi(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
            END {
                n = NR
                m = median(r, n)
                verdict = target == "" ? "" : (m <= 1 + target / 100 ? sprintf("  target <= +%s%%: met", target) : sprintf("  target <= +%s%%: MISSED by %.1f points", target, (m - 1) * 100 - target))
                printf "%-10s %-8s CPU with/without: median %.3f (%+.1f%%), spread %.3f..%.3f over %d pairs%s\n", svc, setting, m, (m - 1) * 100, lo(r, n), hi(r, n), n, verdict
                printf "%-10s %-8s   ratios:%s; wall with/without median %.3f (%.3f..%.3f)\n", svc, setting, rs, median(w, n), lo(w, n), hi(w, n)
            }' | tee -a "$RESULTS"
}

HZ=$(getconf CLK_TCK)
# this script (its polling, cpu_ticks.py) on the tools' CPUs too
if [ -n "$TOOL_CPUS" ]; then
    taskset -pc "$TOOL_CPUS" $$ >/dev/null
fi
say "bench/services/run.sh $BUILD $PAIRS $SERVICES $SETTINGS"
say "library $LIB (built $(date -u -r "$LIB" '+%Y-%m-%d %H:%M UTC'); the tree's HEAD now $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')); service on CPUs '${SVC_CPUS:-any}', tools on '${TOOL_CPUS:-any}'; $NCPU CPUs; $(date -u '+%Y-%m-%d %H:%M UTC')"
say "locks setting: LIBPPROF_MUTEX_FRACTION=$MUTEX_FRACTION LIBPPROF_BLOCK_RATE=$BLOCK_RATE"
IFS=, read -r -a svcs <<<"$SERVICES"
IFS=, read -r -a sets <<<"$SETTINGS"
for svc in "${svcs[@]}"; do
    "svc_${svc}_setup"
    say "$svc: $("svc_${svc}_work")"
    for setting in "${sets[@]}"; do
        rm -f "$WORK/runs.$svc.$setting."*
        PROF_SECONDS=0
        for pair in $(seq "$PAIRS"); do
            one_run "$svc" "$setting" without "$pair"
            # the profile lasts past the work (3 times the first run's
            # wall time, + 10 s); the service stops before it ends
            [ "$PROF_SECONDS" = 0 ] && PROF_SECONDS=$((LAST_WALL * 3 / 1000 + 10))
            one_run "$svc" "$setting" with "$pair"
        done
        target=""
        case $setting in defaults) target=3 ;; cpu) target=5 ;; history) target=1 ;; esac
        summary "$svc" "$setting" "$target"
    done
done
say "results and logs in $OUT_DIR"
