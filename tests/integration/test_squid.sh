#!/usr/bin/env bash
# test_squid.sh: Debian's squid under libpprof, started as its init script
# and as its systemd unit start it; and squid's order of credential
# changes in a program of its own (test-labels: plain-only slow)
#
# prog_capseq repeats what squid does as root: setgroups, setgid,
# setresuid(proxy, proxy, 0), a capset leaving CAP_NET_BIND_SERVICE alone
# effective, then setresuid(-1, 0, -1), which gives the calling thread its
# permitted set back; three rounds, each with a forked child doing it
# twice, and dumps, CPU and heap profiles between them (which start the
# profiler's threads). It ends with exit 0, and the effective capabilities
# of every thread (the profiler's too) are the main thread's at each round
# (before: the child was aborted by the C library at its first
# setgroups, its agent thread still having the capset's CAP_NET_BIND_SERVICE
# alone).
#
# squid 5.7 as a reverse proxy (accel) for a loopback python3 http.server,
# with its own configuration, run as root dropping to user proxy:
# - as the init script starts it (squid -YC: it daemonizes): 10 starts, each
#   serving the proxy and the endpoint, each stopped by squid -k shutdown
#   (before: 0 of 16 started; the daemon was aborted by the C library).
#   Its kid runs in secure-execution mode (real user proxy, effective
#   root), where the loader ignores LD_PRELOAD's path: the index names it
#   with its command and the reason, heap?pid= of it is a 404 saying so
#   (before: 200 with the master's data);
# - as its unit starts it (squid --foreground -sYC), with a set-user-ID
#   copy of libpprof in the loader's trusted directory named in LD_PRELOAD
#   without a slash (docs/daemons.md), under wrk's load: the kid is a
#   member, its samples cover 90% to 110% of its CPU from /proc, CPU, wall,
#   heap and dump requests answer 200, every request wrk made is answered,
#   and squid -k shutdown ends the master with exit 0 (before: SIGABRT,
#   exit 134, after any profile).
# Usage: test_squid.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }

# --- squid's order of credential changes, in prog_capseq
capeff_same() { # PID: every thread's CapEff is the first thread's
    local pid=$1 first
    first=$(awk '/^CapEff/ { print $2 }' "/proc/$pid/status")
    for t in /proc/"$pid"/task/*; do
        c=$(awk '/^CapEff/ { print $2 }' "$t/status" 2>/dev/null)
        [ -z "$c" ] || [ "$c" = "$first" ] || { # empty: a thread that has just ended
            echo "$(cat "$t/comm") $c vs $first"
            return 1
        }
    done
}
mkfifo "$TMP/capseq.in"
PORT=$(pp_free_port)
setsid env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT "$BUILD/tests/prog_capseq" 65534 3 \
    <"$TMP/capseq.in" >"$TMP/capseq.out" 2>"$TMP/capseq.err" &
cpid=$!
PP_GROUPS+=("$cpid")
exec 7>"$TMP/capseq.in"
base=http://127.0.0.1:$PORT/debug/pprof
differ=""
codes=""
for r in 0 1 2; do
    pp_wait_line "$TMP/capseq.out" "^(ready $r|failed)" 20 "$cpid" >/dev/null || break
    grep -q failed "$TMP/capseq.out" && break
    for q in "goroutine?debug=2" "profile?seconds=1" heap "wall?seconds=1"; do
        codes+=" $(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$base/$q")"
    done
    d=$(capeff_same "$cpid") || differ+=" round $r: $d"
    echo >&7
done
exec 7>&-
wait "$cpid"
rc=$?
pp_check "prog_capseq made three rounds of squid's changes and exited 0 (rc $rc: $(tail -1 "$TMP/capseq.out"))" \
    test "$rc" = 0 -a "$(tail -1 "$TMP/capseq.out")" = done
pp_check "the profiles between the rounds answered 200 ($codes)" test -z "$(echo "$codes" | tr -d ' 2' | tr -d 0)"
pp_check "every thread had the main thread's effective capabilities at each round${differ}" test -z "$differ"

# --- squid itself
if [ ! -x /usr/sbin/squid ] || ! command -v wrk >/dev/null || ! id proxy >/dev/null 2>&1; then
    pp_skip "squid or wrk is not installed"
    pp_finish
fi
D=$TMP/squid
pp_web_backend "$D"
chown proxy "$D"
SPORT=$(pp_free_port)
cat >"$D/squid.conf" <<EOF
http_port 127.0.0.1:$SPORT accel defaultsite=127.0.0.1 no-vhost
cache_peer 127.0.0.1 parent $BPORT 0 no-query originserver name=origin
cache_peer_access origin allow all
http_access allow all
pid_filename $D/squid.pid
cache_log $D/cache.log
access_log none
cache_store_log none
coredump_dir $D
shutdown_lifetime 1 seconds
EOF
PORT=$(pp_free_port)
base=http://127.0.0.1:$PORT/debug/pprof
squid_env=(env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT)
proxied() { curl -sS --max-time 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SPORT/" 2>/dev/null; }
squid_stop() { # waits for the master in the pid file to end
    local m
    m=$(cat "$D/squid.pid" 2>/dev/null)
    /usr/sbin/squid -f "$D/squid.conf" -k shutdown >/dev/null 2>&1
    [ -n "$m" ] && pp_wait_gone "$m" 100 0.1
}

# the init script's way: squid -YC daemonizes
started=0
for i in $(seq 10); do
    rm -f "$D/squid.pid"
    setsid "${squid_env[@]}" /usr/sbin/squid -f "$D/squid.conf" -YC </dev/null >>"$TMP/squid-init.out" 2>&1
    ok=0
    for _ in $(seq 100); do
        if [ "$(proxied)" = 200 ] && curl -sS --max-time 2 -o /dev/null "$base/cmdline" 2>/dev/null; then
            ok=1
            break
        fi
        sleep 0.1
    done
    if ((ok)) && ((i == 1)); then
        for q in "goroutine?debug=2" "profile?seconds=1" heap; do
            curl -sS --max-time 10 -o /dev/null "$base/$q"
        done
        # the kid runs in secure-execution mode (real user proxy, effective
        # root): the loader ignores LD_PRELOAD's path, and the index says so
        kid=$(pgrep -f -- "--kid squid-1 -f $D/squid.conf" | head -1)
        curl -sS --max-time 5 "$base/" >"$TMP/index.html"
        pp_check "the index names the kid $kid as not profiled, with its command and the reason" \
            grep -q "$kid (squid, parent [0-9]*, .*not profiled: it exec&#39;d /usr/sbin/squid --kid squid-1 .* in secure-execution mode (effective user 0, real user $(id -u proxy))" "$TMP/index.html"
        code=$(curl -sS --max-time 5 -o "$TMP/kid404" -w '%{http_code}' "$base/heap?pid=$kid")
        pp_check "heap?pid=$kid answers 404 with the reason ($code: $(head -c 120 "$TMP/kid404"))" \
            test "$code" = 404 -a -n "$(grep "secure-execution mode" "$TMP/kid404")"
    fi
    started=$((started + ok))
    squid_stop || pp_note "start $i: squid did not end after -k shutdown"
    pkill -KILL -x squid 2>/dev/null # a start that failed half way
done
pp_check "squid -YC started, served the proxy and the endpoint in $started of 10 starts" test "$started" = 10

# the unit's way: squid --foreground -sYC, under wrk's load, with a
# set-user-ID copy of libpprof in the loader's trusted directory, named
# without a slash: the loader takes it into the kid too
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
SUID_LIB=/usr/lib/$multiarch/libpprof-test-$$.so
install -m 4755 "$BUILD/libpprof.so" "$SUID_LIB"
trap 'rm -f "$SUID_LIB"; pp_cleanup' EXIT
rm -f "$D/squid.pid"
: >"$D/cache.log"
pp_start squid env LD_PRELOAD="$(basename "$SUID_LIB")" LIBPPROF_ADDR=127.0.0.1:$PORT \
    /usr/sbin/squid -f "$D/squid.conf" --foreground -sYC
master=$PID
for _ in $(seq 100); do
    [ "$(proxied)" = 200 ] && break
    sleep 0.1
done
pp_wait_http "$base/cmdline" 10 || pp_give_up "squid --foreground did not serve the endpoint" squid
kid=""
for _ in $(seq 50); do
    kid=$(pgrep -f -- "--kid squid-1 -f $D/squid.conf" | head -1)
    [ -n "$kid" ] && curl -sS --max-time 2 "$base/" 2>/dev/null | grep -q "members: <a [^>]*>$kid<" && break
    sleep 0.1
done
pp_check "with the set-user-ID copy the kid $kid is a member of the tree" \
    sh -c "curl -sS --max-time 5 '$base/' | grep -q 'members: <a [^>]*>$kid<'"
wrk -t2 -c20 -d8s "http://127.0.0.1:$SPORT/" >"$TMP/wrk.out" 2>&1 &
wrk=$!
sleep 1
pp_cpu_window "$kid" 3 "$base"
codes=$(cat "$TMP/cpu.code")
for q in "wall?seconds=2" heap "heap?pid=$kid" "goroutine?debug=2" "goroutine?debug=1"; do
    codes+=" $(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$base/$q")"
done
wait $wrk
{ read -r c0; read -r c1; } <"$TMP/ticks"
mine=$(pp_pid_ms "$TMP/cpu.pb.gz" "$kid")
pp_check "the kid's samples cover its CPU ($mine ms for $(((c1 - c0) * 10)) ms from /proc, 90% to 110%)" \
    awk -v p="$mine" -v c="$(((c1 - c0) * 10))" 'BEGIN { exit !(c > 300 && p >= 0.9 * c && p <= 1.1 * c + 50) }'
pp_check "CPU, wall, heap (the kid's too) and dump requests answered 200 ($codes)" \
    test -z "$(echo "$codes" | tr -d ' 2' | tr -d 0)"
errs=$(sed -n 's/.*Socket errors: \(.*\)/\1/p; s/.*Non-2xx or 3xx responses: \(.*\)/non-2xx \1/p' "$TMP/wrk.out")
pp_check "wrk's requests through squid were all answered ($(grep -o '[0-9]* requests in' "$TMP/wrk.out"); ${errs:-no errors})" \
    test -z "$errs" -a -n "$(grep 'requests in' "$TMP/wrk.out")"
/usr/sbin/squid -f "$D/squid.conf" -k shutdown >/dev/null 2>&1
for _ in $(seq 100); do pp_alive "$master" || break; sleep 0.1; done
wait "$master"
rc=$?
pp_check "squid -k shutdown ended the master with exit 0 (exit $rc)" test "$rc" = 0
bad=$(grep -E 'FATAL|assertion failed|abort' "$D/cache.log" | head -3)
pp_check "cache.log has no fatal line${bad:+: $bad}" test -z "$bad"
pp_finish
