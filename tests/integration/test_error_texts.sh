#!/usr/bin/env bash
# test-labels: quick
# test_error_texts.sh: libpprof's longest messages reach the reader whole.
# A preloaded program told to serve an address other than loopback without
# authentication prints its one line to the last word ("...to serve anyone
# who reaches it; running unprofiled"); a token file with a path of 300
# bytes is named by its end, with the system's reason; an HTTP error that
# quotes a long value (a page's profile name of 500 bytes) quotes it whole.
# Usage: test_error_texts.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_plain

port=$(pp_free_port)
timeout 20 env LD_PRELOAD="$LIB" LIBPPROF_ADDR=0.0.0.0:$port "$PROG" 0 -1 >/dev/null 2>"$TMP/wild.err"
want="libpprof: LIBPPROF_ADDR=0.0.0.0:$port: cannot serve on that address: 0.0.0.0:$port is not a loopback address and no token or client CA is set: set LIBPPROF_TOKEN_FILE or LIBPPROF_TLS_CLIENT_CA, or LIBPPROF_AUTH=none to serve anyone who reaches it; running unprofiled"
pp_check "0.0.0.0 without authentication: the whole line, once ($(cat "$TMP/wild.err"))" \
    test "$(cat "$TMP/wild.err")" = "$want"

dir=/nonexistent
while [ ${#dir} -lt 290 ]; do dir=$dir/directory; done
timeout 20 env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$port LIBPPROF_TOKEN_FILE=$dir/token "$PROG" 0 -1 \
    >/dev/null 2>"$TMP/token.err"
pp_check "a token file of ${#dir} bytes: one line, its end and the reason kept ($(cat "$TMP/token.err"))" \
    eval 'test "$(wc -l <"$TMP/token.err")" = 1 &&
          grep -q "cannot read the token file \.\.\..*/directory/token: No such file or directory; running unprofiled$" "$TMP/token.err"'

pp_serve main env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ "$PROG" 30 -1 ||
    pp_give_up "preloaded prog_plain serves" main
name=$(head -c 500 /dev/zero | tr '\0' p)
body=$(curl -s --max-time 10 "http://127.0.0.1:$PORT/debug/pprof/ui?profile=$name")
pp_check "a 400 that quotes a 500-byte value quotes it whole (${#body} bytes)" \
    test "$body" = "invalid value for \"profile\" - no profile is named \"$name\""
pp_stop "$PID" >/dev/null 2>&1
pp_finish
