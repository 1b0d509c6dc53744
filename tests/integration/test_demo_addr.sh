#!/usr/bin/env bash
# test-labels: quick
# test_demo_addr.sh: pprof-demo's address handling, on its own daemon and
# with --builtin: a port above 65535, a non-numeric port and an empty one
# are refused with one line; a port in use is reported with the system's
# reason (not as "port 0"); port 0 prints the port it got, which answers;
# LIBPPROF_ADDR=off runs the workload without an endpoint; a client that
# drops a pending profile leaves no libmicrohttpd "internal error" line.
# Usage: test_demo_addr.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
DEMO=$BUILD/pprof-demo

for mode in own --builtin; do
    arg=()
    [ "$mode" = --builtin ] && arg=(--builtin)
    for bad in 127.0.0.1:99999 127.0.0.1:abc 127.0.0.1: nocolon; do
        out=$(LIBPPROF_ADDR=$bad timeout 10 "$DEMO" "${arg[@]}" 2>&1)
        rc=$?
        pp_check "[$mode] LIBPPROF_ADDR=$bad refused: exit 1 with one line ($rc: $out)" \
            eval 'test "$rc" = 1 && test "$(echo "$out" | wc -l)" = 1 && echo "$out" | grep -q "malformed address"'
    done

    pp_start "zero$mode" env LIBPPROF_ADDR=127.0.0.1:0 "$DEMO" "${arg[@]}"
    zero=$PID
    line=$(pp_wait_line "$TMP/zero$mode.out" 'serving on http://127\.0\.0\.1:[0-9]+/' 10 "$zero")
    port=$(echo "$line" | sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p')
    if [ -n "$port" ] && [ "$port" != 0 ]; then
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$port/debug/pprof/cmdline")
        pp_check "[$mode] port 0: the printed port $port answers ($code)" test "$code" = 200
        out=$(LIBPPROF_ADDR=127.0.0.1:$port timeout 10 "$DEMO" "${arg[@]}" 2>&1)
        rc=$?
        pp_check "[$mode] a port in use: exit 1, the system's reason ($out)" \
            eval 'test "$rc" = 1 && echo "$out" | grep -q "127.0.0.1:$port: .*Address already in use" &&
                  ! echo "$out" | grep -q "port 0"'
        for i in 1 2 3; do
            curl -s -o /dev/null --max-time 0.5 "http://127.0.0.1:$port/debug/pprof/profile?seconds=5"
        done
        sleep 1
        pp_check "[$mode] clients dropping pending profiles leave nothing on stderr ($(head -c 200 "$TMP/zero$mode.err"))" \
            test ! -s "$TMP/zero$mode.err"
    else
        pp_bad "[$mode] port 0: a serving line with the port" "$(cat "$TMP/zero$mode.out" "$TMP/zero$mode.err")"
    fi
    pp_stop "$zero" >/dev/null 2>&1

    pp_start "off$mode" env LIBPPROF_ADDR=off "$DEMO" "${arg[@]}"
    off=$PID
    line=$(pp_wait_line "$TMP/off$mode.out" 'without an endpoint' 10 "$off")
    sleep 1
    pp_check "[$mode] LIBPPROF_ADDR=off: the workload runs without an endpoint ($line)" \
        eval 'test -n "$line" && pp_alive "$off" && ! ss -ltnp 2>/dev/null | grep -q "pid=$off,"'
    pp_stop "$off" >/dev/null 2>&1
done
pp_finish
