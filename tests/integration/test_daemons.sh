#!/usr/bin/env bash
# test-labels: plain-only slow
# test_daemons.sh: Debian's daemons in the configurations that daemonize,
# under LD_PRELOAD, driven by their own load tools (docs/daemons.md). The
# command returns at once; the endpoint must then answer at the same
# address, served by the daemon that lives on (a takeover), with its
# workers as members of its tree:
#   nginx with its default "daemon on" (a master and two workers, started
#     as root: the workers change their user): the master serves within
#     2 s of the command returning; under wrk, a 3 s CPU profile shows the
#     request path (ngx_http_*) with both workers' pid tags.
#   redis-server --daemonize yes (over Debian's jemalloc): the daemon
#     serves; under redis-benchmark its heap in use is within 3% of its
#     used_memory, and a CPU profile under a GET load names processCommand.
#   memcached -d: the daemon serves; its heap in use is within 10% of what
#     it says it holds; a CPU profile under memcslap's gets is its event
#     loop (event_base_loop).
#   dnsmasq (it closes every descriptor it inherited at start, then
#     daemonizes): the daemon serves the endpoint; 2,000 queries with dig
#     all get its answer; libpprof's threads rest while it idles (under
#     1% of a core in 2 s); it exits within 1 s of SIGTERM.
#   rsyslogd (it daemonizes; its input and queue threads block nearly
#     every signal): the daemon serves; 400,000 lines sent with logger over
#     TCP are all in its output file; a 2 s CPU profile during the flood
#     holds at least 95% of rsyslogd's CPU time in that window (counted
#     from /proc), with at most 5% not sampled.
# Usage: test_daemons.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
. "$(dirname "$0")/services/common.sh"

# serving PIDFILE BASE NAME: waits for the daemon's pid file and the
# endpoint; prints "PID MS" (the daemon, the milliseconds from the command
# returning to the endpoint answering) and keeps the daemon's process
# group for cleanup. $1 must be written by the daemon.
serving() {
    local pidfile=$1 base=$2 t0 d ms t
    t0=$(date +%s%N)
    pp_wait_http "$base/cmdline" 10
    ms=$((($(date +%s%N) - t0) / 1000000))
    for t in $(seq 100); do
        [ -s "$pidfile" ] && break
        sleep 0.05
    done
    d=$(tr -dc '0-9' <"$pidfile" 2>/dev/null)
    [ -n "$d" ] && PP_GROUPS+=("$(awk '{ print $5 }' "/proc/$d/stat" 2>/dev/null || echo "$d")")
    echo "${d:-0} $ms"
}

# hub_of BASE: the pid the index names as the hub.
hub_of() {
    curl -s --max-time 10 "$1/" | sed -n 's/.*this process \([0-9]*\) ([^)]*) is the hub.*/\1/p' | head -1
}

nginx_daemon() {
    if ! command -v nginx >/dev/null || ! command -v wrk >/dev/null; then
        pp_skip "nginx: nginx (nginx-light) or wrk is not installed"
        return
    fi
    local dir=$TMP/nginx nport base master ms workers n=0 w
    mkdir -p "$dir/logs"
    nport=$(pp_free_port)
    PORT=$(pp_free_port)
    base=http://127.0.0.1:$PORT/debug/pprof
    NGINX_DAEMON=on nginx_conf "$dir" "$nport" 256
    env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT nginx -p "$dir" -c "$dir/nginx.conf" \
        >"$TMP/nginx.out" 2>&1 </dev/null
    pp_check "nginx (daemon on): the command returned 0" test $? = 0
    read -r master ms < <(serving "$dir/nginx.pid" "$base")
    pp_check "nginx: the endpoint answers at the same address within 2 s of the command returning ($ms ms)" \
        test "$ms" -lt 2000
    pp_check "nginx: the master ($master) serves it" test "$(hub_of "$base")" = "$master"
    listening "$nport"
    wrk -t2 -c20 -d5s "http://127.0.0.1:$nport/" >"$TMP/wrk.out" 2>&1 &
    local loader=$!
    sleep 0.5
    curl -sS --max-time 30 -o "$TMP/ngx.cpu" "$base/profile?seconds=3"
    wait "$loader"
    pp_note "nginx (daemon on): wrk -t2 -c20: $(awk '/^Requests\/sec/ { print $2 }' "$TMP/wrk.out") requests/s with a 3 s profile running"
    pp_pprof -top -nodecount=80 "$TMP/ngx.cpu" >"$TMP/ngx.top" 2>&1
    pp_check "nginx: the workers' request path (ngx_http_*)" grep -q 'ngx_http_' "$TMP/ngx.top"
    workers=$(ps -o pid= --ppid "$master" 2>/dev/null | tr -d ' ')
    pp_pprof -tags "$TMP/ngx.cpu" >"$TMP/ngx.tags" 2>&1
    for w in $workers; do
        grep -qE ": $w\$" "$TMP/ngx.tags" && n=$((n + 1))
    done
    pp_check "nginx: one pid tag per worker ($n of $(echo $workers | wc -w): $(echo $workers))" test "$n" = 2
    kill -QUIT "$master" 2>/dev/null
}

redis_daemon() {
    if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
        pp_skip "redis: redis-server or redis-benchmark (redis-tools) is not installed"
        return
    fi
    local dir=$TMP/redis rport base d ms used total
    mkdir -p "$dir"
    rport=$(pp_free_port)
    PORT=$(pp_free_port)
    base=http://127.0.0.1:$PORT/debug/pprof
    env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT LIBPPROF_HEAP_RATE=1024 redis-server --port "$rport" \
        --bind 127.0.0.1 --save "" --appendonly no --daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" \
        --logfile "$dir/redis.log" >"$TMP/redis.out" 2>&1 </dev/null
    pp_check "redis (--daemonize yes): the command returned 0" test $? = 0
    read -r d ms < <(serving "$dir/redis.pid" "$base")
    pp_check "redis: the endpoint answers at the same address within 2 s ($ms ms)" test "$ms" -lt 2000
    pp_check "redis: the daemon ($d) serves it" test "$(hub_of "$base")" = "$d"
    listening "$rport" || pp_bad "redis-server does not listen on $rport"
    pp_note "redis (daemonized): redis-benchmark set x300,000: $(redis_load "$rport") requests/s"
    used=$(redis_memory "$rport" used_memory)
    curl -sS --max-time 60 -o "$TMP/redis.heap" "$base/heap"
    total=$(inuse_total "$TMP/redis.heap")
    pp_check "redis: heap in use $total B against its used_memory ${used:-?} B (within 3%)" \
        within 3 "$total" "${used:-0}"
    cpu_under_load redis "$base" timeout 60 redis-benchmark -p "$rport" -t get -n 400000 -r 300000 -d 200 -q
    pp_check "redis: the CPU profile under load names its command dispatch (processCommand)" \
        grep -q ' processCommand$' "$TMP/redis.cpu.top"
    redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1
}

memcached_daemon() {
    if ! command -v memcached >/dev/null || ! command -v memcslap >/dev/null; then
        pp_skip "memcached: memcached or memcslap (libmemcached-tools) is not installed"
        return
    fi
    local dir=$TMP/mc mport base d ms malloced hash total own
    mkdir -p "$dir"
    mport=$(pp_free_port)
    PORT=$(pp_free_port)
    base=http://127.0.0.1:$PORT/debug/pprof
    env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT LIBPPROF_HEAP_RATE=65536 memcached -d -u root \
        -l 127.0.0.1 -p "$mport" -m 1024 -t 2 -P "$dir/mc.pid" >"$TMP/mc.out" 2>&1 </dev/null
    pp_check "memcached (-d): the command returned 0" test $? = 0
    read -r d ms < <(serving "$dir/mc.pid" "$base")
    pp_check "memcached: the endpoint answers at the same address within 2 s ($ms ms)" test "$ms" -lt 2000
    pp_check "memcached: the daemon ($d) serves it" test "$(hub_of "$base")" = "$d"
    listening "$mport"
    pp_note "memcached (daemonized): memcslap set x200,000: $(mc_load "$mport" set) ms"
    malloced=$(mc_stat "$mport" "stats slabs" total_malloced)
    hash=$(mc_stat "$mport" stats hash_bytes)
    curl -sS --max-time 60 -o "$TMP/mc.heap" "$base/heap"
    total=$(inuse_total "$TMP/mc.heap")
    own=$((${malloced:-0} + ${hash:-0}))
    pp_check "memcached: heap in use $total B against its own $own B (slabs $malloced + hash $hash; within 10%)" \
        within 10 "$total" "$own"
    cpu_under_load mc "$base" mc_load_gets "$mport"
    pp_check "memcached: the CPU profile under load is its event loop (event_base_loop)" \
        grep -q 'event_base_loop' "$TMP/mc.cpu.top"
    [ -n "$d" ] && kill -TERM "$d" 2>/dev/null
}

dnsmasq_daemon() {
    if ! command -v dnsmasq >/dev/null || ! command -v dig >/dev/null; then
        pp_skip "dnsmasq: dnsmasq (dnsmasq-base) or dig (dnsutils) is not installed"
        return
    fi
    local dir=$TMP/dm dport base d ms ok=0 i t0
    mkdir -p "$dir"
    dport=$(pp_free_port)
    PORT=$(pp_free_port)
    base=http://127.0.0.1:$PORT/debug/pprof
    env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT dnsmasq --port="$dport" --listen-address=127.0.0.1 \
        --bind-interfaces --no-resolv --no-hosts --address=/test.example/10.1.2.3 --pid-file="$dir/dm.pid" \
        --user=root >"$TMP/dm.out" 2>&1 </dev/null
    pp_check "dnsmasq: the command returned 0" test $? = 0
    read -r d ms < <(serving "$dir/dm.pid" "$base")
    pp_check "dnsmasq: the endpoint answers at the same address within 2 s ($ms ms)" test "$ms" -lt 2000
    pp_check "dnsmasq: the daemon ($d), which closed every descriptor it inherited, serves it" \
        test "$(hub_of "$base")" = "$d"
    for i in $(seq 2000); do
        [ "$(dig +short +time=2 +tries=1 @127.0.0.1 -p "$dport" "q$((i % 50)).test.example")" = 10.1.2.3 ] && ok=$((ok + 1))
    done 2>/dev/null
    pp_check "dnsmasq: all 2,000 queries answered ($ok)" test "$ok" = 2000
    curl -sf --max-time 20 -o "$TMP/dm.pb.gz" "$base/goroutine"
    pp_check "dnsmasq: go tool pprof reads its thread profile" \
        sh -c "timeout 120 go tool pprof -raw '$TMP/dm.pb.gz' 2>&1 | grep -q '^Samples:'"
    pp_check_rests "dnsmasq: libpprof's threads rest while it idles" "$d"
    t0=$(date +%s%N)
    kill -TERM "$d"
    pp_wait_gone "$d" 100 0.01 || true
    ms=$((($(date +%s%N) - t0) / 1000000))
    pp_check "dnsmasq: it exits within 1 s of SIGTERM ($ms ms)" test "$ms" -lt 1000
}

rsyslog_daemon() {
    if ! command -v rsyslogd >/dev/null || ! command -v logger >/dev/null; then
        pp_skip "rsyslog: rsyslogd (rsyslog) or logger is not installed"
        return
    fi
    local dir=$TMP/rsl rport base d ms c0 c1 t0 t1 not_ms total_ms own_ms lines flood
    mkdir -p "$dir"
    rport=$(pp_free_port)
    PORT=$(pp_free_port)
    base=http://127.0.0.1:$PORT/debug/pprof
    cat >"$dir/rsyslog.conf" <<RSL
module(load="imtcp")
input(type="imtcp" port="$rport" address="127.0.0.1")
global(workDirectory="$dir")
*.* action(type="omfile" file="$dir/all.log")
RSL
    env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$PORT rsyslogd -f "$dir/rsyslog.conf" -i "$dir/rsyslogd.pid" \
        >"$TMP/rsl.out" 2>&1 </dev/null
    pp_check "rsyslogd: the command returned 0" test $? = 0
    read -r d ms < <(serving "$dir/rsyslogd.pid" "$base")
    pp_check "rsyslogd: the endpoint answers at the same address within 2 s ($ms ms)" test "$ms" -lt 2000
    pp_check "rsyslogd: the daemon ($d) serves it" test "$(hub_of "$base")" = "$d"
    listening "$rport"
    (for i in 1 2 3 4; do seq 1 100000 | sed 's/^/a line of the flood, number /' |
        logger --tcp -n 127.0.0.1 -P "$rport" -t flood; done) &
    flood=$!
    sleep 0.3
    c0=$(pp_ticks "$d" "" "$PP_OWN_THREADS")
    t0=$(date +%s%N)
    curl -sf --max-time 20 -o "$TMP/rsl.pb.gz" "$base/profile?seconds=2"
    t1=$(date +%s%N)
    c1=$(pp_ticks "$d" "" "$PP_OWN_THREADS")
    wait "$flood"
    read -r total_ms not_ms < <(pp_top_ms "$TMP/rsl.pb.gz")
    own_ms=$(awk -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v w=$(((t1 - t0) / 1000000)) \
        'BEGIN { printf "%d", c * 1000 / hz * 2000 / w }')
    # a thread's CPU timer loses what is left of its last 10 ms period when
    # the window ends, and /proc counts whole ticks: one period per thread
    # beyond the 5%
    nthr=0
    for t in /proc/"$d"/task/*; do
        c=$(cat "$t/comm" 2>/dev/null) || continue
        [[ "$c" =~ $PP_OWN_THREADS ]] || nthr=$((nthr + 1))
    done
    pp_check "rsyslogd: the CPU profile holds its threads' CPU (${total_ms:-0} ms, $own_ms ms counted from /proc; at least 95% less 10 ms for each of its $nthr threads)" \
        awk -v b="${total_ms:-0}" -v w="$own_ms" -v n="$nthr" 'BEGIN { exit !(w > 0 && b >= 0.95 * w - 10 * n) }'
    # counted whole periods: one 10 ms period beyond the 5% (a window that
    # caught the flood's end held 170 ms, of which one period not sampled)
    pp_check "rsyslogd: no more than 5% not sampled, and one period (${not_ms} of ${total_ms:-0} ms)" \
        awk -v n="$not_ms" -v t="${total_ms:-0}" 'BEGIN { exit !(t > 0 && n <= 0.05 * t + 10) }'
    for i in $(seq 100); do
        lines=$(grep -c 'a line of the flood' "$dir/all.log" 2>/dev/null)
        [ "${lines:-0}" -ge 400000 ] && break
        sleep 0.1
    done
    pp_check "rsyslogd: all 400,000 lines are in its file (${lines:-0})" test "${lines:-0}" = 400000
    kill -TERM "$d" 2>/dev/null
}

nginx_daemon
redis_daemon
memcached_daemon
dnsmasq_daemon
rsyslog_daemon
pp_finish
