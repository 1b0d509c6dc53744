#!/usr/bin/env bash
# test_haproxy.sh: Debian's haproxy under libpprof, as its systemd unit
# starts it (haproxy -Ws: a master and a worker), with the global section
# of Debian's configuration (chroot /var/lib/haproxy, user and group
# haproxy) and two threads, in front of a loopback nginx, under wrk's load
# (test-labels: plain-only slow)
#
# haproxy's worker sets RLIMIT_NPROC to 0 once it has started, unless
# insecure-fork-wanted is set, so that nothing can start a thread or a
# process in it from then on. libpprof starts the threads a CPU profile
# needs (its collector, the scheduler) just before that limit is set.
# - the worker runs with "Max processes 0";
# - a CPU profile of the tree answers 200 and the worker's samples cover
#   its CPU from /proc, 90% to 110% (before: the worker answered "Could
#   not enable CPU profiling: system call failed", 0 samples);
# - heap and goroutine of the worker answer 200; a wall profile of it
#   answers 500 saying that the sampler thread cannot start;
# - every request wrk made is answered;
# - a reload (SIGUSR2, as systemctl reload sends: the master execs itself
#   again, with the preload, and starts a new worker) under wrk's load:
#   requests answered, the old worker ends, the new one may start no
#   thread either and its CPU profile covers its CPU, 90% to 110% (a few
#   read errors are allowed there: haproxy's reload gives them alone);
# - SIGTERM ends the master.
# Usage: test_haproxy.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

if [ ! -x /usr/sbin/haproxy ] || [ ! -x /usr/sbin/nginx ] || ! command -v wrk >/dev/null ||
    ! id haproxy >/dev/null 2>&1 || [ ! -d /var/lib/haproxy ]; then
    pp_skip "haproxy, nginx or wrk is not installed"
    pp_finish
fi
[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }
D=$TMP/haproxy
mkdir -p "$D/www"
chmod 755 "$TMP" "$D" "$D/www"
head -c 2000 /dev/urandom | base64 >"$D/www/index.html"
BPORT=$(pp_free_port)
cat >"$D/nginx.conf" <<EOF
worker_processes 1;
pid $D/nginx.pid;
error_log $D/nginx.err;
events { worker_connections 1024; }
http {
    access_log off;
    server { listen 127.0.0.1:$BPORT; location / { root $D/www; } }
}
EOF
nginx -c "$D/nginx.conf" || pp_give_up "nginx did not start" nginx "$D/nginx.err"
HPORT=$(pp_free_port)
PORT=$(pp_free_port)
cat >"$D/haproxy.cfg" <<EOF
global
	log /dev/log local0
	chroot /var/lib/haproxy
	stats socket $D/admin.sock mode 660 level admin
	user haproxy
	group haproxy
	nbthread 2

defaults
	mode http
	timeout connect 5000
	timeout client 50000
	timeout server 50000

frontend fe
	bind 127.0.0.1:$HPORT
	default_backend be

backend be
	server web 127.0.0.1:$BPORT
EOF
pp_start haproxy env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT \
    /usr/sbin/haproxy -Ws -f "$D/haproxy.cfg" -p "$D/haproxy.pid"
master=$PID
base=http://127.0.0.1:$PORT/debug/pprof
pp_wait_http "$base/cmdline" 10 "$master" || pp_give_up "haproxy did not serve the endpoint" haproxy
worker=""
for _ in $(seq 50); do
    worker=$(pgrep -P "$master" -x haproxy || true)
    [ -n "$worker" ] && curl -sS --max-time 2 -o /dev/null "http://127.0.0.1:$HPORT/" && break
    sleep 0.2
done
nproc=$(awk '/^Max processes/ { print $3 }' "/proc/$worker/limits" 2>/dev/null)
pp_check "haproxy's worker ($worker) serves, and may start no thread (Max processes $nproc)" \
    test -n "$worker" -a "$nproc" = 0

# check_cpu WHAT: the last pp_cpu_window's profile answered 200 and its
# samples of process $worker cover that process's CPU from /proc.
check_cpu() {
    pp_check "a CPU profile of the tree $1 answered 200 ($(cat "$TMP/cpu.code"))" test "$(cat "$TMP/cpu.code")" = 200
    local c0 c1 mine errors
    { read -r c0; read -r c1; } <"$TMP/ticks"
    mine=$(pp_pid_ms "$TMP/cpu.pb.gz" "$worker")
    errors=$(pp_pprof -raw "$TMP/cpu.pb.gz" 2>/dev/null | grep -m1 'answered with an error')
    pp_check "$1, the worker's samples cover its CPU ($mine ms for $(((c1 - c0) * 10)) ms from /proc, 90% to 110%)${errors:+: $errors}" \
        awk -v p="$mine" -v c="$(((c1 - c0) * 10))" 'BEGIN { exit !(c > 300 && p >= 0.9 * c && p <= 1.1 * c + 50) }'
}

# check_wrk WHAT [READS]: every request of the last wrk run was answered;
# up to READS of them (a number) may end in a read error.
check_wrk() {
    local errs reads
    errs=$(sed -n 's/.*Socket errors: \(.*\)/\1/p; s/.*Non-2xx or 3xx responses: \(.*\)/non-2xx \1/p' "$TMP/wrk.out")
    reads=$(echo "$errs" | sed -n 's/^connect 0, read \([0-9]*\), write 0, timeout 0$/\1/p')
    pp_check "$1, wrk's requests were answered ($(grep -o '[0-9]* requests in' "$TMP/wrk.out"); ${errs:-no errors}${2:+; read errors allowed: $2})" \
        sh -c "[ -n '$(grep 'requests in' "$TMP/wrk.out")' ] && { [ -z '$errs' ] || [ '${reads:-x}' -le '${2:-0}' ] 2>/dev/null; }"
}

wrk -t2 -c20 -d7s "http://127.0.0.1:$HPORT/" >"$TMP/wrk.out" 2>&1 &
wrk=$!
sleep 1
pp_cpu_window "$worker" 4 "$base"
code=$(curl -sS --max-time 20 -o "$TMP/heap.pb.gz" -w '%{http_code}' "$base/heap?pid=$worker")
gcode=$(curl -sS --max-time 20 -o "$TMP/goroutine.pb.gz" -w '%{http_code}' "$base/goroutine?pid=$worker")
wcode=$(curl -sS --max-time 20 -o "$TMP/wall.txt" -w '%{http_code}' "$base/wall?seconds=1&pid=$worker")
wait $wrk
check_cpu "while it serves"
pp_check "heap and goroutine of the worker answer 200 ($code, $gcode)" test "$code" = 200 -a "$gcode" = 200
pp_check "a wall profile of the worker says why it cannot run ($wcode: $(head -c 200 "$TMP/wall.txt"))" \
    sh -c "[ '$wcode' = 500 ] && grep -q 'sampler thread' '$TMP/wall.txt'"
check_wrk "while it serves"

# A reload under load: the master execs itself again and starts a new worker.
wrk -t2 -c20 -d8s "http://127.0.0.1:$HPORT/" >"$TMP/wrk.out" 2>&1 &
wrk=$!
sleep 1
old=$worker
kill -USR2 "$master"
worker=""
for _ in $(seq 50); do # the new worker, once started (its limit set)
    worker=$(pgrep -P "$master" -x haproxy | grep -vx "$old" || true)
    nproc=$(awk '/^Max processes/ { print $3 }' "/proc/$worker/limits" 2>/dev/null)
    [ -n "$worker" ] && [ "$nproc" = 0 ] && break
    sleep 0.1
done
pp_check "a reload started a new worker ($worker after $old; Max processes $nproc)" \
    test -n "$worker" -a "$nproc" = 0
pp_check "the old worker ended" pp_wait_gone "$old" 50 0.1
for _ in $(seq 50); do # the new worker a member of the new hub's tree
    curl -sS --max-time 2 "$base/" 2>/dev/null | grep -q "pid=$worker\"" && break
    sleep 0.1
done
pp_cpu_window "$worker" 3 "$base"
wait $wrk
check_cpu "after a reload"
# haproxy's reload closes the old worker's kept-alive connections: without
# libpprof, a few of wrk's requests end in a read error too (0 to 10 in
# 410,000 here): 1 in 10,000 is allowed.
check_wrk "across a reload" "$(($(grep -o '[0-9]* requests in' "$TMP/wrk.out" | cut -d' ' -f1) / 10000))"
kill -TERM "$master"
pp_check "SIGTERM ended haproxy's master" pp_wait_gone "$master" 100 0.1
nginx -c "$D/nginx.conf" -s stop 2>/dev/null
pp_finish
