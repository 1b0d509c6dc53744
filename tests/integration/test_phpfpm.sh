#!/usr/bin/env bash
# test_phpfpm.sh: Debian's php-fpm under libpprof loses no request while
# every kind of profile is asked of it (test-labels: plain-only slow)
#
# PHP enforces max_execution_time with setitimer(ITIMER_PROF) and a
# SIGPROF handler installed again at every request, and waits for a
# request's data with poll(…, 5000) after accept, closing the connection
# when the poll returns 0. php-fpm 8.2 starts as its init script starts it
# (--daemonize, a root master, www-data workers, pm static with 4
# children) on a private config and port, preloaded, with no
# LIBPPROF_SIGNAL. Four cgi-fcgi client loops run a PHP script that
# computes for a few milliseconds, for 8 s; meanwhile a 5 s CPU profile of
# the tree, a 400 Hz wall profile of the tree, a thread dump of the tree
# every 0.3 s and heap profiles. Then:
# - every request answered "ok", none failed (before the profiling signal
#   left SIGPROF, 543 of 562 failed with "Maximum execution time of 30
#   seconds exceeded" under a CPU profile);
# - the CPU profile covers at least 95% of php-fpm's own CPU from /proc
#   over its window (its processes' main threads; libpprof's threads are
#   left out of both, pprof.work in the profile);
# - a script that runs over set_time_limit(1) fails after 1 s ± 0.1 s of
#   its worker's CPU, with and without a profile running (PHP's own timer,
#   ITIMER_PROF, keeps its meaning);
# - the fpm log has nothing but its NOTICE lines and the over-time
#   script's own fatal errors.
# Usage: test_phpfpm.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

fpm=$(command -v php-fpm8.2 || true)
if [ -z "$fpm" ] || ! command -v cgi-fcgi >/dev/null; then
    pp_skip "php8.2-fpm or cgi-fcgi (libfcgi-bin) is not installed"
    pp_finish
fi
D=$TMP/fpm
mkdir -p "$D"
chmod 755 "$TMP" "$D"
FPORT=$(pp_free_port)
cat >"$D/fpm.conf" <<EOF
[global]
pid = $D/fpm.pid
error_log = $D/fpm.log
daemonize = yes
[www]
user = www-data
group = www-data
listen = 127.0.0.1:$FPORT
pm = static
pm.max_children = 4
catch_workers_output = yes
EOF
cat >"$D/work.php" <<'EOF'
<?php
$x = 0; for ($i = 0; $i < 100000; $i++) { $x += $i % 7; }
echo "ok $x\n";
EOF
cat >"$D/limit.php" <<'EOF'
<?php
set_time_limit(1);
$c = getrusage();
register_shutdown_function(function() use ($c) {
    $u = getrusage();
    $cpu = ($u["ru_utime.tv_sec"] + $u["ru_stime.tv_sec"] - $c["ru_utime.tv_sec"] - $c["ru_stime.tv_sec"])
         + ($u["ru_utime.tv_usec"] + $u["ru_stime.tv_usec"] - $c["ru_utime.tv_usec"] - $c["ru_stime.tv_usec"]) / 1e6;
    echo "cpu " . round($cpu, 3) . "\n";
});
while (true) { $x = sqrt(12345.678); }
EOF
chmod 644 "$D"/*.php
req() { SCRIPT_FILENAME=$D/$1 REQUEST_METHOD=GET cgi-fcgi -bind -connect "127.0.0.1:$FPORT"; }
# limit_check LABEL: the over-time script fails after 1 s ± 0.1 s of its
# worker's CPU (PHP's timer is ITIMER_PROF: process CPU time)
limit_check() {
    local out e
    out=$(req limit.php 2>&1)
    e=$(sed -n 's/.*cpu \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1)
    pp_check "$1: set_time_limit(1) fired after ${e:-?} s of CPU (1 s ± 0.1 s)" pp_in_range "${e:-0}" 0.9 1.1
}

PORT=$(pp_free_port)
LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT "$fpm" --daemonize --fpm-config "$D/fpm.conf" \
    2>"$TMP/fpm.err"
master=$(cat "$D/fpm.pid" 2>/dev/null)
[ -n "$master" ] && PP_GROUPS+=("$(ps -o pgid= -p "$master" | tr -d ' ')")
pp_wait_http "http://127.0.0.1:$PORT/debug/pprof/cmdline" 10 ||
    pp_give_up "php-fpm did not serve the endpoint" fpm
base=http://127.0.0.1:$PORT/debug/pprof
workers=$(pgrep -P "$master" | tr '\n' ' ')
pp_check "php-fpm serves with 4 workers ($workers)" test "$(wc -w <<<"$workers")" = 4
sleep 1 # past start-up
limit_check "no profile running"

# php-fpm's own CPU ticks: each of its processes has one thread of its own
ticks() { local p; for p in $master $workers; do cat "/proc/$p/task/$p/stat"; done | awk '{ s += $14 + $15 } END { print s }'; }
for c in 1 2 3 4; do
    (end=$((SECONDS + 8)); while [ $SECONDS -lt $end ]; do req work.php 2>&1 | grep -c '^ok ' || true; done \
        >"$TMP/client$c") &
done
sleep 1
curl -sS --max-time 20 -o "$TMP/cpu.pb.gz" "$base/profile?seconds=5" &
{ ticks; sleep 5; ticks; } >"$TMP/ticks" & # over the profile's window, not its symbolization
cpu=$!
curl -sS --max-time 20 -o "$TMP/wall.pb.gz" -w '%{http_code}\n' "$base/wall?seconds=5&hz=400" >"$TMP/wall.code" &
wall=$!
limit_check "a CPU and a wall profile running"
dumps=0
while [ $dumps -lt 16 ]; do
    curl -sS --max-time 5 -o /dev/null "$base/goroutine?debug=2" && dumps=$((dumps + 1))
    sleep 0.3
done
curl -sS --max-time 10 -o "$TMP/heap.pb.gz" -w '%{http_code}\n' "$base/heap" >"$TMP/heap.code"
wait
ok=$(cat "$TMP"/client? | awk '{ s += $1 } END { print s + 0 }')
n=$(cat "$TMP"/client? | wc -l)
pp_check "every request answered ok under the profiles ($ok of $n)" test "$ok" = "$n" -a "$n" -gt 200
pp_check "wall ($(cat "$TMP/wall.code")), heap ($(cat "$TMP/heap.code")) and $dumps dumps answered" \
    test "$(cat "$TMP/wall.code")" = 200 -a "$(cat "$TMP/heap.code")" = 200 -a $dumps = 16
{ read -r c0; read -r c1; } <"$TMP/ticks"
read -r total _ < <(pp_top_ms "$TMP/cpu.pb.gz")
own=$(pp_pprof -tags -unit=ms "$TMP/cpu.pb.gz" 2>&1 | sed -n 's/^ *pprof.work: Total \([0-9.]*\)ms.*/\1/p')
total=$(awk -v t="$total" -v o="${own:-0}" 'BEGIN { print int(t - o) }')
pp_check "the CPU profile covers php-fpm's CPU ($total ms, libpprof's ${own:-0} ms left out, for $(((c1 - c0) * 10)) ms from /proc, 95% to 105%)" \
    awk -v p="$total" -v c="$(((c1 - c0) * 10))" 'BEGIN { exit !(c > 500 && p >= 0.95 * c && p <= 1.05 * c + 50) }'
pp_pprof_shows "the CPU profile names PHP's interpreter" 'execute_ex|zend_' -top "$TMP/cpu.pb.gz"
kill -QUIT "$master"
pp_wait_gone "$master" 100 0.1
other=$(grep -v 'NOTICE' "$D/fpm.log" | grep -v 'limit.php' || true)
pp_check "nothing in the fpm log but notices and the over-time script's errors" test -z "$other"
[ -n "$other" ] && pp_note "$other"
pp_finish
