#!/usr/bin/env bash
# test-labels: quick
# test_mhd_redirect.sh: the prefix without its slash (/debug/pprof) answers
# 301 with Location /debug/pprof/ on a program's own libmicrohttpd daemon
# (pprof-demo, which routes with pprof_http_serves and pprof_mhd_handle)
# as on the built-in server (pprof-demo --builtin); paths that are not the
# library's (/debug/pprofx, /) stay the program's own.
# Usage: test_mhd_redirect.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
DEMO=$BUILD/pprof-demo

# own: the demo's own daemon; --builtin: libpprof's server
for mode in own --builtin; do
    pp_serve "demo$mode" env LIBPPROF_ADDR=127.0.0.1:@PORT@ "$DEMO" ${mode#own} ||
        pp_give_up "[$mode] pprof-demo serves" "demo$mode"
    base=http://127.0.0.1:$PORT
    code=$(curl -s -D "$TMP/r$mode.h" -o "$TMP/r$mode" -w '%{http_code}' --max-time 10 "$base/debug/pprof")
    loc=$(pp_header "$TMP/r$mode.h" Location)
    pp_check "[$mode] /debug/pprof: 301 to /debug/pprof/ ($code, Location '$loc')" \
        test "$code" = 301 -a "$loc" = /debug/pprof/
    code=$(curl -s -L -o /dev/null -w '%{http_code} %{url_effective}' --max-time 10 "$base/debug/pprof")
    pp_check "[$mode] following it reaches the index ($code)" test "$code" = "200 $base/debug/pprof/"
    if [ "$mode" = own ]; then
        body=$(curl -s --max-time 10 "$base/debug/pprofx")
        pp_check "[$mode] /debug/pprofx is the program's own 404 ($body)" test "$body" = "pprof-demo: see /debug/pprof/"
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$base/")
        pp_check "[$mode] / is the program's own page ($code)" test "$code" = 200
    fi
    pp_stop "$PID" >/dev/null 2>&1
done
pp_finish
