#!/usr/bin/env bash
# test-labels: quick
# test_env_invalid.sh: every LIBPPROF_* variable of docs/environment.md set
# to a value it does not take, one at a time, in a preloaded program: one
# "libpprof:" line on stderr naming the variable (for a file or an
# address: naming it, and nothing is served), however often the library
# reads it, and the default behaviour: the program serves and runs on;
# cmdline answers (LIBPPROF_CMDLINE's default, on), no serving line
# (LIBPPROF_PRINT_ADDR's default, off). The symbolizer's variables are
# read at the first profile, which the test takes. The test fails when
# docs/environment.md documents a variable it does not try.
# Usage: test_env_invalid.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_plain
DOC=$(dirname "$0")/../../docs/environment.md

# VARIABLE=VALUE; then the file names and the address, with what their
# line must hold: with those, nothing is served.
bad=(
    LIBPPROF_TOKEN_QUERY=maybe LIBPPROF_AUTH=everyone LIBPPROF_CMDLINE=nope LIBPPROF_PRINT_ADDR=yes
    LIBPPROF_CPU_HZ=fast LIBPPROF_OTEL_CONTEXT=yes LIBPPROF_TRACE_ID_LABEL=on LIBPPROF_HEAP_RATE=-5 LIBPPROF_HEAP_BYTES=usable
    LIBPPROF_MUTEX_FRACTION=half LIBPPROF_BLOCK_RATE=1e6 LIBPPROF_TREE=maybe LIBPPROF_SYMBOLIZE=all
    LIBPPROF_SYMBOLIZER_CACHE_MB=lots LIBPPROF_SYMBOLIZER_INFLATE_MB=-1 LIBPPROF_SYMBOLIZER_IDLE=0
    LIBPPROF_SIGNAL=SIGUSR1 LIBPPROF_DEBUGINFOD=maybe LIBPPROF_DEBUGINFOD_URLS=ftp://debuginfod.example
    LIBPPROF_DEBUGINFOD_WAIT_MS=-1 LIBPPROF_DEBUGINFOD_TIMEOUT=0 LIBPPROF_DEBUGINFO_CACHE=relative/dir
    LIBPPROF_DEBUGINFO_CACHE_MB=lots LIBPPROF_HISTORY=forever LIBPPROF_HISTORY_MB=0 LIBPPROF_HISTORY_SPAN_MS=soon
    LIBPPROF_HISTORY_WALL=yes LIBPPROF_HISTORY_DUMP_DIR=dumps LIBPPROF_HISTORY_DUMPS=0
    LIBPPROF_HISTORY_DUMP_SPAN_MS=slow LIBPPROF_HISTORY_HZ=0 LIBPPROF_HISTORY_WALL_HZ=5000 LIBPPROF_HISTORY_DUMP_CPU=-1
    LIBPPROF_HISTORY_DUMP_RSS_MB=lots LIBPPROF_HISTORY_DUMP_AT_EXIT=yes
)
refused=(
    "LIBPPROF_ADDR=nocolon:malformed address"
    "LIBPPROF_TOKEN_FILE=/nonexistent/token:cannot read the token file /nonexistent/token"
    "LIBPPROF_TLS_CERT=/nonexistent/cert.pem:LIBPPROF_TLS_CERT, LIBPPROF_TLS_KEY"
    "LIBPPROF_TLS_KEY=/nonexistent/key.pem:LIBPPROF_TLS_CERT, LIBPPROF_TLS_KEY"
    "LIBPPROF_TLS_CLIENT_CA=/nonexistent/ca.pem:a client CA alone is not enough"
)

documented=$(sed -n '1,/^## /p' "$DOC" | grep '^| `LIBPPROF_' | grep -o '`LIBPPROF_[A-Z_]*`' | tr -d '`' | sort -u)
tried=$(printf '%s\n' "${bad[@]}" "${refused[@]}" | sed 's/=.*//' | sort -u)
missing=$(comm -23 <(echo "$documented") <(echo "$tried"))
pp_check "every documented variable is tried ($(echo $documented | wc -w) documented${missing:+; not tried: $missing})" \
    test -z "$missing" -a "$(echo $documented | wc -w)" -ge 20

for kv in "${bad[@]}"; do
    var=${kv%%=*}
    val=${kv#*=}
    if ! pp_serve "$var" env LD_PRELOAD="$LIB" "$kv" LIBPPROF_ADDR=127.0.0.1:@PORT@ "$PROG" 20 -1; then
        pp_bad "$kv: the program serves with the default" "$(cat "$TMP/$var.err")"
        continue
    fi
    base=http://127.0.0.1:$PORT/debug/pprof
    code=$(curl -s -o "$TMP/$var.cmd" -w '%{http_code}' --max-time 10 "$base/cmdline")
    # the symbolizer's variables are read by the first profile
    curl -s -o /dev/null --max-time 20 "$base/goroutine"
    curl -s -o /dev/null --max-time 20 "$base/heap"
    sleep 0.3
    lines=$(grep -c '^libpprof:' "$TMP/$var.err")
    line=$(grep '^libpprof:' "$TMP/$var.err" | head -1)
    pp_check "$kv: one line naming it, the default used ($line)" \
        eval 'test "$lines" = 1 && [[ "$line" == "libpprof: ignoring $kv: want "*"; using "* ]]'
    case $var in
    LIBPPROF_CMDLINE) pp_check "$kv: cmdline answers, as by default ($code)" test "$code" = 200 ;;
    LIBPPROF_PRINT_ADDR) pp_check "$kv: no serving line, as by default" eval '! grep -q "libpprof: serving" "$TMP/$var.err"' ;;
    *) pp_check "$kv: the program serves ($code)" test "$code" = 200 ;;
    esac
    pp_stop "$PID" >/dev/null 2>&1
done

port=$(pp_free_port)
for r in "${refused[@]}"; do
    kv=${r%%:*}
    want=${r#*:}
    args=(LD_PRELOAD="$LIB")
    [ "${kv%%=*}" = LIBPPROF_ADDR ] || args+=("LIBPPROF_ADDR=127.0.0.1:$port")
    timeout 20 env "${args[@]}" "$kv" "$PROG" 0 -1 >"$TMP/refused.out" 2>"$TMP/refused.err"
    rc=$?
    line=$(cat "$TMP/refused.err")
    pp_check "$kv: one line naming it, nothing served, the program runs to its end ($rc: $line)" \
        eval 'test "$rc" = 0 -a "$(grep -c . "$TMP/refused.err")" = 1 && grep -qF -- "$want" "$TMP/refused.err" &&
              grep -q "running unprofiled$" "$TMP/refused.err" && grep -qx done "$TMP/refused.out"'
done
pp_finish
