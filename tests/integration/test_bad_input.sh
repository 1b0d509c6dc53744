#!/usr/bin/env bash
# test-labels: timing
# test_bad_input.sh: answers to bad and unusual requests. Malformed or
# out-of-range seconds, seconds with debug, a pid or tree that is not a
# process id or 0/1, unknown paths, wrong methods and
# trace get their status with Go's one-line error answer; symbol (GET and
# POST) and cmdline answer as Go's handlers do; garbage, oversized and
# half-sent requests and clients that vanish mid-answer neither crash the
# server nor disturb the host program, and later requests still answer.
# Usage: test_bad_input.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

PROG=$BUILD/tests/prog_service_linked
ARGS=(--busy 1 "arg with space" "" x)
if ! pp_start_helper svc "$PROG" "${ARGS[@]}"; then
    pp_bad "prog_service_linked did not start" "$(cat "$TMP/svc.err")"
    pp_finish
fi
pid=$PID
base=http://127.0.0.1:$PORT/debug/pprof
SPIN=$(sed -n 's/^sym spin_for_tests \(0x[0-9a-f]*\)$/\1/p' "$TMP/svc.out")
IDLE=$(sed -n 's/^sym idle_thread_main \(0x[0-9a-f]*\)$/\1/p' "$TMP/svc.out")
threads_before=$(ls "/proc/$pid/task" | wc -l)

n=0
# expect_error STATUS ONE_LINE_BODY_RE LABEL CURL_ARGS...: an error answer
# with Go's shape; the body must match ^RE\n$ exactly.
expect_error() {
    local status=$1 re=$2 label=$3 f
    shift 3
    n=$((n + 1))
    f=$TMP/e$n
    curl -sS --max-time 5 -D "$f.hdr" -o "$f.body" "$@" >"$f.err" 2>&1
    local got ct go ns lines body
    got=$(pp_status "$f.hdr")
    ct=$(pp_header "$f.hdr" Content-Type)
    go=$(pp_header "$f.hdr" X-Go-Pprof)
    ns=$(pp_header "$f.hdr" X-Content-Type-Options)
    lines=$(tr -cd '\n' <"$f.body" | wc -c)
    body=$(cat "$f.body")
    if [ "$got" = "$status" ] && [ "$ct" = "text/plain; charset=utf-8" ] && [ "$go" = 1 ] && [ "$ns" = nosniff ] &&
        [ "$lines" = 1 ] && [ "$(tail -c 1 "$f.body" | od -An -tx1 | tr -d ' ')" = 0a ] &&
        printf '%s' "$body" | grep -qxE "$re"; then
        pp_ok "$label: $status $body"
    else
        pp_bad "$label: want $status with one line matching /$re/, text/plain; charset=utf-8, X-Go-Pprof: 1" \
            "$(cat "$f.hdr" "$f.body" "$f.err" 2>/dev/null)"
    fi
}

INVALID='invalid value for "seconds" - must be a positive integer'
for s in 0 -1 abc 1.5 %2D1 99999999999999999999; do
    expect_error 400 "$INVALID" "profile?seconds=$s" "$base/profile?seconds=$s"
done
expect_error 400 'invalid value for "seconds".*600.*' "profile?seconds=601 (above the maximum 600)" "$base/profile?seconds=601"
expect_error 400 'seconds and debug params are incompatible' "profile?seconds=1&debug=1" "$base/profile?seconds=1&debug=1"
expect_error 400 '.+' "profile?seconds=%ZZ (bad escape)" "$base/profile?seconds=%ZZ"
for v in abc "" 0 -3 12x; do
    expect_error 400 "pid must be a process id \\(a positive number\\), not \"$v\"" "heap?pid=$v" "$base/heap?pid=$v"
done
expect_error 400 'tree must be 0 or 1, not "yes"' "goroutine?tree=yes" "$base/goroutine?tree=yes"
expect_error 404 'Unknown profile' "unknown path under the prefix" "$base/no-such-profile"
expect_error 404 'Unknown profile' "unknown nested path under the prefix" "$base/profile/extra"
for m in POST PUT DELETE PATCH; do
    expect_error 405 '.+' "$m profile" -X "$m" "$base/profile?seconds=1"
done
expect_error 405 '.+' "PUT symbol" -X PUT --data-binary "$SPIN" "$base/symbol"
expect_error 501 '.+' "trace" "$base/trace"
expect_error 501 '.+' "trace?seconds=1" "$base/trace?seconds=1"

# Allow header on 405, as Go's.
allow=$(curl -sS --max-time 5 -o /dev/null -D - -X DELETE "$base/cmdline" | tr -d '\r' | sed -n 's/^[Aa]llow: //p')
if printf '%s' "$allow" | grep -q GET && ! printf '%s' "$allow" | grep -q DELETE; then
    pp_ok "405 carries Allow: $allow"
else
    pp_bad "405 without a fitting Allow header ('$allow')"
fi

# ---- symbol, as Go's
if [ -z "$SPIN" ] || [ -z "$IDLE" ]; then
    pp_bad "helper did not print its function addresses"
else
    want=$(printf 'num_symbols: 1\n%s spin_for_tests\n%s idle_thread_main\n' "$SPIN" "$IDLE")
    # go tool pprof's form: POST "0xADDR+0xADDR"; unresolvable, zero and
    # unparsable tokens are skipped.
    got=$(curl -sS --max-time 5 -D "$TMP/sym.hdr" --data-binary "$SPIN+0x1+$IDLE+0+zzz" "$base/symbol")
    if [ "$got" = "$want" ] && [ "$(pp_status "$TMP/sym.hdr")" = 200 ] &&
        [ "$(pp_header "$TMP/sym.hdr" Content-Type)" = "text/plain; charset=utf-8" ]; then
        pp_ok "POST symbol $SPIN+0x1+$IDLE+0+zzz: num_symbols: 1 and two names"
    else
        pp_bad "POST symbol" "want: $want" "got: $got" "$(cat "$TMP/sym.hdr")"
    fi
    got=$(curl -sS --max-time 5 "$base/symbol?$SPIN+$IDLE")
    if [ "$got" = "$(printf 'num_symbols: 1\n%s spin_for_tests\n%s idle_thread_main\n' "$SPIN" "$IDLE")" ]; then
        pp_ok "GET symbol?ADDR+ADDR"
    else
        pp_bad "GET symbol?ADDR+ADDR" "got: $got"
    fi
    inner=$(printf '0x%x' $((SPIN + 16)))
    dec=$((IDLE + 4))
    got=$(curl -sS --max-time 5 --data-binary "$inner+$dec" "$base/symbol")
    if [ "$got" = "$(printf 'num_symbols: 1\n%s spin_for_tests\n0x%x idle_thread_main\n' "$inner" "$dec")" ]; then
        pp_ok "symbol: addresses inside functions, decimal input, lowercase hex output"
    else
        pp_bad "symbol: inner/decimal addresses" "got: $got"
    fi
    got=$(curl -sS --max-time 5 "$base/symbol")
    if [ "$got" = "num_symbols: 1" ]; then
        pp_ok "GET symbol without addresses: num_symbols: 1 only"
    else
        pp_bad "GET symbol without addresses" "got: $got"
    fi
    # Every line after the first is what go tool pprof's symbolz parser reads.
    big=$(for i in $(seq 200); do printf '%s+' "$(printf '0x%x' $((SPIN + i)))"; done)
    got=$(curl -sS --max-time 5 --data-binary "${big%+}" "$base/symbol")
    if [ "$(printf '%s\n' "$got" | grep -cE '^0x[0-9a-f]+ spin_for_tests$')" -ge 100 ] &&
        [ "$(printf '%s\n' "$got" | head -1)" = "num_symbols: 1" ] &&
        ! printf '%s\n' "$got" | sed 1d | grep -qvE '^0x[0-9a-f]+ \S.*$'; then
        pp_ok "symbol with 200 addresses: every answer line is '0x<hex> <name>'"
    else
        pp_bad "symbol with 200 addresses" "$(printf '%s\n' "$got" | head -5)"
    fi
fi

# ---- cmdline: argv joined by NUL, no trailing NUL
printf '%s\0' "$PROG" "${ARGS[@]}" | head -c -1 >"$TMP/cmdline.want"
curl -sS --max-time 5 -D "$TMP/cmdline.hdr" -o "$TMP/cmdline.got" "$base/cmdline"
if cmp -s "$TMP/cmdline.want" "$TMP/cmdline.got" &&
    [ "$(pp_header "$TMP/cmdline.hdr" Content-Type)" = "text/plain; charset=utf-8" ]; then
    pp_ok "cmdline: argv joined by NUL without a trailing NUL, text/plain"
else
    pp_bad "cmdline differs" "want: $(od -c "$TMP/cmdline.want" | head -5)" "got:  $(od -c "$TMP/cmdline.got" | head -5)"
fi

# ---- hostile clients

cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null
}
ticks_before=$(cpu_ticks "$pid")

# raw_request DATA: sends DATA (printf %b escapes) on a new connection and
# prints what comes back within 2 s.
raw_request() {
    timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "%b" "$2" >&3
        timeout 2 cat <&3
    ' raw "$PORT" "$1" 2>/dev/null
}

resp=$(raw_request 'GARBAGE\r\n\r\n' | head -1 | tr -d '\r')
if pp_alive "$pid" && { [ -z "$resp" ] || printf '%s' "$resp" | grep -qE '^HTTP/1\.[01] [45][0-9][0-9]'; }; then
    pp_ok "garbage request line: '${resp:-connection closed}'"
else
    pp_bad "garbage request line: '$resp'"
fi
resp=$(raw_request '\x00\x01\xff\xfe\x80junk\r\n\r\n' | head -1 | tr -d '\r')
if pp_alive "$pid" && { [ -z "$resp" ] || printf '%s' "$resp" | grep -qE '^HTTP/1\.[01] [45][0-9][0-9]'; }; then
    pp_ok "binary junk: '${resp:-connection closed}'"
else
    pp_bad "binary junk: '$resp'"
fi
resp=$(raw_request 'GET /debug/pprof/cmdline HTTP/1.0\r\n\r\n' | head -1 | tr -d '\r')
if printf '%s' "$resp" | grep -qE '^HTTP/1\.[01] 200'; then
    pp_ok "HTTP/1.0 request without Host: $resp"
else
    pp_bad "HTTP/1.0 request without Host: '$resp'"
fi

# 100 KB header and URL (beyond what the server buffers per connection),
# and a body above the symbol limit.
head -c 100000 /dev/zero | tr '\0' a >"$TMP/huge"
refused() {
    pp_alive "$pid" && printf '%s' "$1" | grep -qE '^(4[0-9][0-9]|000)$|Recv failure|Empty reply|reset|Send failure'
}
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -H "X-Huge: $(cat "$TMP/huge")" "$base/cmdline" 2>&1)
if refused "$code"; then
    pp_ok "100 KB header: refused ($(printf '%s' "$code" | tail -1 | cut -c1-60))"
else
    pp_bad "100 KB header: '$code'"
fi
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$base/cmdline?$(cat "$TMP/huge")" 2>&1)
if refused "$code"; then
    pp_ok "100 KB URL: refused ($(printf '%s' "$code" | tail -1 | cut -c1-60))"
else
    pp_bad "100 KB URL: '$code'"
fi
head -c 3000000 /dev/zero | tr '\0' 1 >"$TMP/body"
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --data-binary @"$TMP/body" "$base/symbol" 2>&1)
if refused "$code"; then
    pp_ok "3 MB symbol body: refused ($(printf '%s' "$code" | tail -1 | cut -c1-60))"
else
    pp_bad "3 MB symbol body: '$code'"
fi

# Half-sent requests held open (slowloris), a POST whose body never
# arrives, and a client that leaves while a large answer is being written.
fds=()
for i in $(seq 30); do
    if exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"; then
        printf 'GET /debug/pprof/cmdline HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: %d\r\n' "$i" >&$fd
        fds+=("$fd")
    fi
done
if exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"; then
    printf 'POST /debug/pprof/symbol HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n0x1+' >&$fd
    fds+=("$fd")
fi
# ~900 KB of addresses: an answer of ~2 MB that nobody reads.
yes "$SPIN" | head -n 60000 | tr '\n' + >"$TMP/big"
printf 'POST /debug/pprof/symbol HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n' \
    "$(wc -c <"$TMP/big")" | cat - "$TMP/big" >"$TMP/big.req"
left=0
for i in 1 2 3; do
    if timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        cat "$2" >&3 || exit 1
        sleep 0.2
        exec 3>&- 3<&-
    ' leave "$PORT" "$TMP/big.req" 2>/dev/null; then
        left=$((left + 1))
    fi
done
if [ $left -eq 3 ] && pp_alive "$pid"; then
    pp_ok "3 clients left while a 2 MB symbol answer was being written"
else
    pp_bad "clients leaving mid-answer: $left of 3 sent, alive: $(pp_alive "$pid" && echo yes || echo no)"
fi
sleep 0.3
quick=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code} %{time_total}' "$base/cmdline" 2>&1)
if [ "${quick%% *}" = 200 ] && pp_in_range "${quick#* }" 0 0.5; then
    pp_ok "with ${#fds[@]} half-sent requests held open, cmdline answers in ${quick#* }s"
else
    pp_bad "with ${#fds[@]} half-sent requests held open, cmdline: '$quick'"
fi
prof=$(curl -sS --max-time 10 -o "$TMP/p.pb.gz" -w '%{http_code}' "$base/profile?seconds=1" 2>&1)
if [ "$prof" = 200 ] && pp_pprof -top "$TMP/p.pb.gz" 2>&1 | grep -q spin_for_tests; then
    pp_ok "with half-sent requests held open, profile?seconds=1 works and shows spin_for_tests"
else
    pp_bad "with half-sent requests held open, profile?seconds=1: '$prof'"
fi
for fd in "${fds[@]}"; do exec {fd}>&-; done

# The host program is undisturbed.
sleep 0.5
ticks_after=$(cpu_ticks "$pid")
threads_after=$(ls "/proc/$pid/task" 2>/dev/null | wc -l)
if pp_alive "$pid" && [ -n "$ticks_after" ] && [ "$ticks_after" -gt "$ticks_before" ]; then
    pp_ok "host program alive and its busy thread kept running (CPU ticks $ticks_before -> $ticks_after)"
else
    pp_bad "host program disturbed (alive: $(pp_alive "$pid" && echo yes || echo no), ticks $ticks_before -> $ticks_after)" \
        "$(cat "$TMP/svc.err")"
fi
if [ "$threads_after" -ge "$threads_before" ]; then
    pp_ok "threads: $threads_before before, $threads_after after"
else
    pp_bad "threads: $threads_before before, $threads_after after"
fi
code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$base/" 2>&1)
if [ "$code" = 200 ]; then
    pp_ok "index still answers 200"
else
    pp_bad "index after the hostile clients: '$code'"
fi
pp_stop "$pid"
rc=$?
if [ $rc -eq 0 ]; then
    pp_ok "host program exits 0 on SIGTERM"
else
    pp_bad "host program exit status $rc on SIGTERM" "$(cat "$TMP/svc.err")"
fi
pp_finish
