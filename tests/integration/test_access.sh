#!/usr/bin/env bash
# test-labels: quick
# test_access.sh: access control with curl and go tool pprof. Preload mode
# refuses an address other than loopback without a token (one stderr line
# saying how to allow it; nothing listens), serves it with LIBPPROF_AUTH=none;
# with LIBPPROF_TOKEN_FILE every request needs "Authorization: Bearer":
# 401 with WWW-Authenticate without it, 403 with a wrong one (never a hint
# of the token), 200 with it; ?token= only with LIBPPROF_TOKEN_QUERY=1,
# which is how go tool pprof passes it; refusals are counted on the index
# and logged once a minute; an unreadable token file stops the server from
# starting; LIBPPROF_CMDLINE=off makes cmdline 403; unix:PATH serves on a
# Unix-domain socket of mode 0600 (curl --unix-socket), replaces a stale
# socket file, refuses a live one, and is removed at exit; the demo's own
# daemon (the libmicrohttpd adapter) checks the same token.
# Usage: test_access.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_plain
TOKEN=s3cret-$RANDOM$RANDOM
printf '%s\n' "$TOKEN" >"$TMP/token"
chmod 600 "$TMP/token"

status() { curl -s -o "$TMP/body" -w '%{http_code}' --max-time 10 "$@"; }

# --- no token: loopback only
for addr in 0.0.0.0 "" "[::]"; do
    port=$(pp_free_port)
    pp_start "open-$port" env LD_PRELOAD="$LIB" LIBPPROF_ADDR="$addr:$port" "$PROG" 2 -1
    line=$(pp_wait_line "$TMP/open-$port.err" 'libpprof: LIBPPROF_ADDR=.*running unprofiled' 10 "$PID")
    pp_check "LIBPPROF_ADDR=$addr:PORT without a token is refused, saying how to allow it ($line)" \
        eval 'echo "$line" | grep -q "not a loopback address" && echo "$line" | grep -q LIBPPROF_TOKEN_FILE &&
              echo "$line" | grep -q LIBPPROF_AUTH=none'
    pp_check "  ... and nothing answers on port $port" test "$(status "http://127.0.0.1:$port/debug/pprof/")" = 000
    pp_stop "$PID" >/dev/null 2>&1
done
if pp_serve none env LD_PRELOAD="$LIB" LIBPPROF_ADDR=0.0.0.0:@PORT@ LIBPPROF_AUTH=none "$PROG" 60 -1; then
    pp_ok "LIBPPROF_AUTH=none serves 0.0.0.0"
    pp_stop "$PID" >/dev/null 2>&1
else
    pp_bad "LIBPPROF_AUTH=none serves 0.0.0.0" "$(cat "$TMP/none.err")"
fi
pp_start badfile env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_TOKEN_FILE="$TMP/missing" "$PROG" 2 -1
line=$(pp_wait_line "$TMP/badfile.err" 'libpprof: LIBPPROF_ADDR=.*running unprofiled' 10 "$PID")
pp_check "an unreadable token file: the server does not start, and says why ($line)" \
    eval 'echo "$line" | grep -q "cannot read the token file"'
pp_stop "$PID" >/dev/null 2>&1

# --- a bearer token
if ! pp_serve tok env LD_PRELOAD="$LIB" LIBPPROF_ADDR=0.0.0.0:@PORT@ LIBPPROF_TOKEN_FILE="$TMP/token" \
    LIBPPROF_CMDLINE=off "$PROG" 120 -1; then
    pp_give_up "a token-protected server on 0.0.0.0 starts" tok
fi
base=http://127.0.0.1:$PORT/debug/pprof
code=$(curl -s -D "$TMP/hdr" -o "$TMP/body" -w '%{http_code}' --max-time 10 "$base/heap")
pp_check "no credentials: 401 with WWW-Authenticate: Bearer ($code)" \
    eval 'test "$code" = 401 && grep -qi "^WWW-Authenticate: Bearer" "$TMP/hdr"'
code=$(status -H "Authorization: Bearer wrong" "$base/heap")
pp_check "a wrong token: 403, no hint of the token ($code: $(cat "$TMP/body"))" \
    eval 'test "$code" = 403 && ! grep -q "$TOKEN" "$TMP/body" && test "$(wc -l <"$TMP/body")" = 1'
code=$(status -H "Authorization: Bearer ${TOKEN}x" "$base/heap")
pp_check "the token with a byte more: 403 ($code)" test "$code" = 403
code=$(status -H "Authorization: Bearer ${TOKEN%?}" "$base/heap")
pp_check "the token less its last byte: 403 ($code)" test "$code" = 403
code=$(status -H "Authorization: Basic $TOKEN" "$base/heap")
pp_check "another scheme: 401 ($code)" test "$code" = 401
code=$(status "$base/heap?token=$TOKEN")
pp_check "?token= without LIBPPROF_TOKEN_QUERY: 401 ($code)" test "$code" = 401
code=$(status -H "Authorization: Bearer $TOKEN" "$base/heap")
pp_check "the token: 200 ($code)" test "$code" = 200
code=$(status -H "authorization: bearer $TOKEN" "$base/")
pp_check "header and scheme names in any case: 200 ($code)" test "$code" = 200
code=$(status -H "Authorization: Bearer $TOKEN" "$base/cmdline")
pp_check "LIBPPROF_CMDLINE=off: cmdline 403 ($code: $(cat "$TMP/body"))" \
    eval 'test "$code" = 403 && grep -q LIBPPROF_CMDLINE "$TMP/body"'
# 4 without credentials: pp_serve's first probe, and the three above
curl -s --max-time 10 -H "Authorization: Bearer $TOKEN" -o "$TMP/index" "$base/"
pp_check "the index counts the refusals ($(grep -o 'Refused requests.*' "$TMP/index" | sed 's/<[^>]*>/ /g'))" \
    grep -q "Refused requests</td><td>4 without credentials (401), 3 with a wrong token (403)" "$TMP/index"
pp_check "one refusal line on stderr for the minute ($(grep -c refused "$TMP/tok.err"))" \
    test "$(grep -c 'libpprof: refused a request from 127.0.0.1' "$TMP/tok.err")" = 1
pp_check "the token never reaches stderr" eval '! grep -q "$TOKEN" "$TMP/tok.err"'
pp_pprof -top "$base/profile?seconds=1" >"$TMP/noquery.top" 2>&1
pp_check "go tool pprof without the token is refused (401)" grep -q "401" "$TMP/noquery.top"
pp_stop "$PID" >/dev/null 2>&1

if ! pp_serve tokq env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_TOKEN_FILE="$TMP/token" \
    LIBPPROF_TOKEN_QUERY=1 "$PROG" 120 -1; then
    pp_give_up "a server with LIBPPROF_TOKEN_QUERY=1 starts" tokq
fi
base=http://127.0.0.1:$PORT/debug/pprof
pp_pprof -top "$base/profile?seconds=1&token=$TOKEN" >"$TMP/query.top" 2>&1
pp_check "go tool pprof with ?token= (LIBPPROF_TOKEN_QUERY=1) reads the CPU profile" \
    grep -q busy_loop_for_preload "$TMP/query.top"
code=$(status "$base/heap?token=nope")
pp_check "a wrong ?token=: 403 ($code)" test "$code" = 403
code=$(status "$base/cmdline?token=$TOKEN")
pp_check "cmdline with ?token=: 200 ($code)" test "$code" = 200
pp_stop "$PID" >/dev/null 2>&1

# --- a Unix-domain socket: mode 0600, curl --unix-socket, removed at exit
SOCK=$TMP/pprof.sock
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCK"
pp_start unix env LD_PRELOAD="$LIB" LIBPPROF_ADDR="unix:$SOCK" LIBPPROF_PRINT_ADDR=1 "$PROG" 5 -1
unixpid=$PID
line=$(pp_wait_line "$TMP/unix.err" 'libpprof: serving' 10 "$PID")
pp_check "unix:PATH (over a stale socket file) serves and says where ($line)" \
    eval 'echo "$line" | grep -q "on unix:$SOCK"'
pp_check "the socket is mode 0600 ($(stat -c %a "$SOCK" 2>/dev/null))" test "$(stat -c %a "$SOCK" 2>/dev/null)" = 600
code=$(curl -s --unix-socket "$SOCK" -o "$TMP/unix.pb" -w '%{http_code}' --max-time 10 \
    'http://localhost/debug/pprof/profile?seconds=1')
pp_pprof -top "$TMP/unix.pb" >"$TMP/unix.top" 2>&1
pp_check "curl --unix-socket reads a CPU profile that go tool pprof reads ($code)" \
    grep -q busy_loop_for_preload "$TMP/unix.top"
pp_start unix2 env LD_PRELOAD="$LIB" LIBPPROF_ADDR="unix:$SOCK" "$PROG" 1 -1
line=$(pp_wait_line "$TMP/unix2.err" 'libpprof: LIBPPROF_ADDR=.*running unprofiled' 10 "$PID")
pp_check "a second server on a live socket is refused ($line)" eval 'echo "$line" | grep -q "in use"'
pp_stop "$PID" >/dev/null 2>&1
for _ in $(seq 100); do pp_alive "$unixpid" || break; sleep 0.1; done
pp_check "the socket file is removed when the program exits" test ! -e "$SOCK"

# --- the adapter: the demo's own daemon, the token from the environment
if ! pp_serve demo env LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_TOKEN_FILE="$TMP/token" "$BUILD/pprof-demo"; then
    pp_give_up "the demo starts with a token" demo
fi
code=$(status "http://127.0.0.1:$PORT/debug/pprof/heap")
pp_check "the demo's daemon (pprof_mhd_handle): 401 without the token ($code)" test "$code" = 401
code=$(status -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/debug/pprof/heap")
pp_check "the demo's daemon: 200 with it ($code)" test "$code" = 200
code=$(status "http://127.0.0.1:$PORT/")
pp_check "the demo's own page is the demo's business: 200 ($code)" test "$code" = 200
pp_stop "$PID" >/dev/null 2>&1
pp_finish
