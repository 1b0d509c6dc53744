#!/usr/bin/env bash
# test_apache.sh: Debian's Apache httpd (mpm_event, as Debian enables it)
# under libpprof, started as its users start it (apache2ctl -k start: it
# daemonizes, its children run as www-data with a worker thread pool),
# under wrk's load, with a graceful restart
# (test-labels: plain-only slow)
#
# APR blocks 23 of the signals 1 to 31 in every thread of the children
# (apr_setup_signal_thread), the profiling signal among them; libpprof
# leaves that signal open in such a mask (before: the children's samples
# covered about a third of their CPU).
# - the daemon serves the endpoint and lists its children, which run as
#   www-data;
# - a CPU profile of the tree answers 200 and each busy child's samples
#   cover its CPU from /proc, 90% to 110%;
# - heap, goroutine and wall of a child answer 200;
# - every request wrk made is answered (Apache's own read errors apart);
# - a graceful restart (apache2ctl -k graceful) under wrk's load: the
#   daemon stays, new children replace the old ones, their CPU profile
#   covers their CPU, wrk's requests are answered;
# - apache2ctl -k stop ends the daemon and its children.
# Usage: test_apache.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

if [ ! -x /usr/sbin/apache2 ] || [ ! -x /usr/sbin/apache2ctl ] || ! command -v wrk >/dev/null ||
    ! id www-data >/dev/null 2>&1; then
    pp_skip "apache2 or wrk is not installed"
    pp_finish
fi
[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }
D=$TMP/apache
mkdir -p "$D/www" "$D/run" "$D/lock" "$D/log"
chmod 755 "$TMP" "$D" "$D/www"
head -c 2000 /dev/urandom | base64 >"$D/www/index.html"
# Debian's configuration, in a directory of its own: its modules and
# apache2.conf, a port and a site of the test's, its paths under $D.
cp -a /etc/apache2 "$D/conf"
HPORT=$(pp_free_port)
PORT=$(pp_free_port)
cat >"$D/conf/envvars" <<EOF
unset HOME
export APACHE_RUN_USER=www-data
export APACHE_RUN_GROUP=www-data
export APACHE_PID_FILE=$D/run/apache2.pid
export APACHE_RUN_DIR=$D/run
export APACHE_LOCK_DIR=$D/lock
export APACHE_LOG_DIR=$D/log
export LANG=C
EOF
echo "Listen 127.0.0.1:$HPORT" >"$D/conf/ports.conf"
rm -f "$D/conf/sites-enabled/"*
# Debian's MaxKeepAliveRequests (100) closes each connection after its
# 100th answer, and wrk then counts a read error now and then (4 to 50 in
# 125,000 requests without libpprof): unlimited here, so that every
# request can be asked to be answered.
cat >"$D/conf/sites-enabled/test.conf" <<EOF
MaxKeepAliveRequests 0
<VirtualHost 127.0.0.1:$HPORT>
    DocumentRoot $D/www
    <Directory $D/www>
        Require all granted
    </Directory>
</VirtualHost>
EOF
export APACHE_CONFDIR=$D/conf

# ctl VERB: apache2ctl -k VERB, preloaded (the daemon and its children
# keep the preload across a graceful restart, which does not exec).
ctl() {
    env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT apache2ctl -k "$1" >>"$TMP/ctl.out" 2>&1
}

# children: the daemon's children that serve (their user is www-data).
children() {
    local c
    for c in $(pgrep -P "$daemon" -x apache2); do
        [ "$(stat -c %U "/proc/$c" 2>/dev/null)" = www-data ] && echo "$c"
    done
}

# check_cpu WHAT PID...: the last pp_cpu_windows's profile answered 200, and
# the samples of each PID that used over 300 ms cover its CPU from /proc.
check_cpu() {
    local what=$1 p c0 c1 mine all="" bad=0 busy=0
    shift
    pp_check "a CPU profile of the tree $what answered 200 ($(cat "$TMP/cpu.code"))" test "$(cat "$TMP/cpu.code")" = 200
    for p in "$@"; do
        { read -r c0; read -r c1; } <"$TMP/ticks.$p"
        c1=$(((c1 - c0) * 10))
        mine=$(pp_pid_ms "$TMP/cpu.pb.gz" "$p")
        all="$all $p: $mine ms of $c1;"
        [ "$c1" -gt 300 ] || continue
        busy=$((busy + 1))
        awk -v p="$mine" -v c="$c1" 'BEGIN { exit !(p >= 0.9 * c && p <= 1.1 * c + 50) }' || bad=$((bad + 1))
    done
    pp_check "$what, each busy child's samples cover its CPU from /proc, 90% to 110% ($all)" \
        test "$busy" -gt 0 -a "$bad" = 0
}

# check_wrk WHAT PER: every request of the last wrk run was answered, but
# for up to 1 in PER that ended in a read error (Apache's own: see below).
check_wrk() {
    local errs reads n
    errs=$(sed -n 's/.*Socket errors: \(.*\)/\1/p; s/.*Non-2xx or 3xx responses: \(.*\)/non-2xx \1/p' "$TMP/wrk.out")
    reads=$(echo "$errs" | sed -n 's/^connect 0, read \([0-9]*\), write 0, timeout 0$/\1/p')
    n=$(grep -o '[0-9]* requests in' "$TMP/wrk.out" | cut -d' ' -f1)
    pp_check "$1, wrk's requests were answered (${n:-no} requests; ${errs:-no errors}; read errors allowed: $((${n:-0} / $2)))" \
        sh -c "[ -n '$n' ] && { [ -z '$errs' ] || [ '${reads:-x}' -le $((${n:-0} / $2)) ] 2>/dev/null; }"
}

ctl start || pp_give_up "apache2ctl -k start failed" ctl "$D/log/error.log"
daemon=""
for _ in $(seq 100); do # the daemon writes its pid file once detached
    daemon=$(cat "$D/run/apache2.pid" 2>/dev/null)
    [ -n "$daemon" ] && break
    sleep 0.1
done
[ -n "$daemon" ] || pp_give_up "apache2 wrote no pid file" ctl "$D/log/error.log"
PP_GROUPS+=("$daemon") # it made its own session
base=http://127.0.0.1:$PORT/debug/pprof
pp_wait_http "$base/cmdline" 10 "$daemon" || pp_give_up "apache2 did not serve the endpoint" ctl "$D/log/error.log"
kids=""
for _ in $(seq 50); do
    kids=$(children | tr '\n' ' ')
    [ -n "$kids" ] && curl -sS --max-time 2 -o /dev/null "http://127.0.0.1:$HPORT/" &&
        [ "$(curl -sS --max-time 2 "$base/" | grep -o 'pid=[0-9]*"' | sort -u | wc -l)" -gt 1 ] && break
    sleep 0.2
done
listed=0
curl -sS --max-time 2 -o "$TMP/index.html" "$base/"
for c in $kids; do grep -q "pid=$c\"" "$TMP/index.html" && listed=$((listed + 1)); done
pp_check "the daemon ($daemon) serves the endpoint and lists its www-data children ($kids: $listed listed)" \
    test -n "$kids" -a "$listed" = "$(echo $kids | wc -w)"

wrk -t2 -c32 -d7s "http://127.0.0.1:$HPORT/" >"$TMP/wrk.out" 2>&1 &
wrk=$!
sleep 1
# shellcheck disable=SC2086 # one word per child
pp_cpu_windows 4 "$base" $kids
one=${kids%% *}
codes=""
for k in "heap?pid=$one" "goroutine?pid=$one" "wall?seconds=1&pid=$one"; do
    codes="$codes ${k%%[?]*}:$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$base/$k")"
done
wait $wrk
# shellcheck disable=SC2086
check_cpu "while it serves" $kids
pp_check "heap, goroutine and wall of a child answer 200 ($codes)" sh -c "! echo '$codes' | grep -q ':[^2]'"
# Without libpprof, wrk counts a few read errors in a run (0 to 4 in
# 125,000 requests with unlimited keep-alive): 1 in 10,000 is allowed.
check_wrk "while it serves" 10000

# A graceful restart under load: the daemon re-reads its configuration,
# its children finish their requests and end, new ones start.
wrk -t2 -c32 -d8s "http://127.0.0.1:$HPORT/" >"$TMP/wrk.out" 2>&1 &
wrk=$!
sleep 1
old=$kids
ctl graceful
new=""
for _ in $(seq 50); do
    new=$(children | grep -vxF -f <(echo "$old" | tr ' ' '\n' | grep .) | tr '\n' ' ')
    listed=0
    curl -sS --max-time 2 -o "$TMP/index.html" "$base/"
    for c in $new; do grep -q "pid=$c\"" "$TMP/index.html" && listed=$((listed + 1)); done
    [ -n "$new" ] && [ "$listed" = "$(echo $new | wc -w)" ] && break
    sleep 0.1
done
pp_check "a graceful restart kept the daemon ($daemon) and started new children ($new after $old)" \
    sh -c "kill -0 $daemon && [ -n '$new' ]"
gone=0
for c in $old; do pp_wait_gone "$c" 100 0.1 && gone=$((gone + 1)); done
pp_check "the old children ended ($gone of $(echo $old | wc -w))" test "$gone" = "$(echo $old | wc -w)"
# shellcheck disable=SC2086
pp_cpu_windows 3 "$base" $new
wait $wrk
# shellcheck disable=SC2086
check_cpu "after a graceful restart" $new
# A graceful restart closes the old children's kept-alive connections,
# and wrk's requests in flight on them end in read errors: without
# libpprof 2 to 461 in 120,000 to 165,000 requests (one run in 8 over
# 0.1%): 1 in 100 is allowed.
check_wrk "across a graceful restart" 100
ctl stop
pp_check "apache2ctl -k stop ended the daemon" pp_wait_gone "$daemon" 100 0.1
pp_finish
