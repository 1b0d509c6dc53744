#!/usr/bin/env bash
# test-labels: plain-only timing
# test_otel_context.sh: OpenTelemetry's process context (OTEP 4719) and
# thread context (OTEP 4947) as an outside reader sees them, read by
# otel_reader (written from the specifications' reading protocols; it links
# nothing of libpprof), which stops threads with ptrace and reads memory
# with process_vm_readv:
#   - prog_otel under LD_PRELOAD: the OTEL_CTX mapping's resource
#     (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES with a percent-encoded
#     comma, process.pid, the executable, libpprof as the SDK) and the
#     threadlocal.* schema and key map; 1,000 reads while the program
#     republishes every millisecond are all whole and none torn; 1,000
#     thread reads, each compared with what the program had set at that
#     moment (its own record of the request it was in): at least 99% of the
#     reads inside a request match in trace ID, span ID and the request
#     label;
#   - a forked child publishes its own context (its pid), and its threads'
#     records read as the parent's do;
#   - LIBPPROF_OTEL_CONTEXT=0: no mapping, no record;
#   - the demo (libpprof linked): its workers' records carry a span and the
#     labels endpoint and tenant from the demo's own sets; its index shows
#     the publication;
#   - the symbol is reached through the access OTEP 4947 prefers (a TLS
#     descriptor) when the compiler has it.
# Plain build only: ptrace and the sanitizers' runtimes do not mix.
# Usage: test_otel_context.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
READER=$BUILD/tests/otel_reader

pp_start otel env LD_PRELOAD="$LIB" OTEL_SERVICE_NAME=otel-test \
    OTEL_RESOURCE_ATTRIBUTES='deployment.environment.name=ci, team=a%2Cb' "$BUILD/tests/prog_otel" --fork 60
prog=$PID
truth=$(pp_wait_line "$TMP/otel.out" '^truth 0x[0-9a-f]+$' 10 "$prog") || pp_give_up "prog_otel did not start" otel
truth=${truth#truth }
child=$(pp_wait_line "$TMP/otel.out" '^child [0-9]+$' 10 "$prog") || pp_give_up "prog_otel did not fork" otel
child=${child#child }
sleep 1

# ------------------------------------------------------------ process context
"$READER" process "$prog" 1 >"$TMP/process.txt" 2>&1
has() { grep -qxF "$1" "$TMP/process.txt"; }
pp_check "process context: service.name from OTEL_SERVICE_NAME" has "resource service.name=otel-test"
pp_check "process context: OTEL_RESOURCE_ATTRIBUTES, blanks trimmed" has "resource deployment.environment.name=ci"
pp_check "process context: OTEL_RESOURCE_ATTRIBUTES, %2C decoded" has "resource team=a,b"
pp_check "process context: process.pid=$prog" has "resource process.pid=$prog"
pp_check "process context: process.executable.name=prog_otel" has "resource process.executable.name=prog_otel"
pp_check "process context: telemetry.sdk.name=libpprof" has "resource telemetry.sdk.name=libpprof"
pp_check "process context: threadlocal.schema_version=tlsdesc_v1_dev" has "extra threadlocal.schema_version=tlsdesc_v1_dev"
pp_check "process context: the key map holds request and worker" \
    grep -qE '^extra threadlocal.attribute_key_map=\[.*request.*\]$' "$TMP/process.txt"
if ! has "resource process.pid=$prog"; then pp_note "$(cat "$TMP/process.txt")"; fi
grep -q 'OTEL_CTX' "/proc/$prog/maps" && pp_ok "the mapping is named: $(grep -m1 -o '[^ ]*OTEL_CTX[^ ]*' "/proc/$prog/maps")" ||
    pp_bad "no mapping named OTEL_CTX in /proc/$prog/maps"
pp_check "the mapping is not executable" sh -c "! grep OTEL_CTX /proc/$prog/maps | awk '{print \$2}' | grep -q x"

"$READER" process "$prog" 1000 >"$TMP/process1000.txt" 2>&1
read -r _ reads _ whole _ torn _ retries < <(grep '^reads ' "$TMP/process1000.txt")
pp_check "1000 reads while republished every ms: $whole whole, $torn torn, $retries retries" \
    test "${whole:-0}" -ge 1000 -a "${torn:-1}" -eq 0

# ------------------------------------------------------------- thread records
"$READER" threads "$prog" 1000 "$truth" >"$TMP/threads.txt" 2>&1
line=$(grep '^reads ' "$TMP/threads.txt")
read -r _ reads _ in_span _ matched _ failed <<<"$line"
pp_note "$(head -1 "$TMP/threads.txt")"
pp_check "1000 thread reads: $line; at least 99% of $in_span in-request reads match" \
    awk -v r="${reads:-0}" -v s="${in_span:-0}" -v m="${matched:-0}" 'BEGIN { exit !(r >= 1000 && s >= 300 && m >= 0.99 * s) }'
grep '^mismatch' "$TMP/threads.txt" | head -3 | while read -r l; do pp_note "$l"; done
if [ -n "$(command -v gcc)" ] && echo 'int main(void){return 0;}' | gcc -x c -mtls-dialect=gnu2 -o /dev/null - 2>/dev/null; then
    pp_check "the symbol is reached through a TLS descriptor" grep -q 'access tlsdesc' "$TMP/threads.txt"
fi

# -------------------------------------------------------------------- fork
"$READER" process "$child" 1 >"$TMP/child.txt" 2>&1
pp_check "forked child: its own process context, process.pid=$child" grep -qxF "resource process.pid=$child" "$TMP/child.txt"
"$READER" threads "$child" 300 "$truth" >"$TMP/child-threads.txt" 2>&1
line=$(grep '^reads ' "$TMP/child-threads.txt")
read -r _ reads _ in_span _ matched _ failed <<<"$line"
pp_check "forked child: 300 thread reads: $line" \
    awk -v r="${reads:-0}" -v s="${in_span:-0}" -v m="${matched:-0}" 'BEGIN { exit !(r >= 300 && s >= 90 && m >= 0.99 * s) }'
pp_check "prog_otel still running" pp_alive "$prog"
pp_stop "$prog" >/dev/null

# ------------------------------------------------------------------- off
pp_start off env LD_PRELOAD="$LIB" LIBPPROF_OTEL_CONTEXT=0 "$BUILD/tests/prog_otel" 30
off=$PID
pp_wait_line "$TMP/off.out" '^ready$' 10 "$off" >/dev/null
sleep 0.5
pp_check "LIBPPROF_OTEL_CONTEXT=0: no OTEL_CTX mapping" sh -c "! grep -q OTEL_CTX /proc/$off/maps"
"$READER" threads "$off" 100 >"$TMP/off-threads.txt" 2>&1
pp_check "LIBPPROF_OTEL_CONTEXT=0: no thread has a record" sh -c "! grep -q '^read .* valid ' '$TMP/off-threads.txt' && grep -q '^reads 100 ' '$TMP/off-threads.txt'"
pp_stop "$off" >/dev/null

# -------------------------------------------------------------------- demo
pp_serve demo env LIBPPROF_ADDR=127.0.0.1:@PORT@ "$BUILD/pprof-demo" || pp_give_up "pprof-demo did not serve" demo
demo=$PID
sleep 1
curl -sS --max-time 10 "http://127.0.0.1:$PORT/debug/pprof/" >"$TMP/index.html" 2>&1
pp_check "demo: the index says the process context is published, with the label keys mapped" \
    grep -qE 'OpenTelemetry contexts</td><td>process context published .* thread records with [1-9][0-9]* label keys' "$TMP/index.html"
"$READER" process "$demo" 1 >"$TMP/demo.txt" 2>&1
pp_check "demo: service.name=unknown_service:pprof-demo" grep -qxF "resource service.name=unknown_service:pprof-demo" "$TMP/demo.txt"
# the workers are in a request only part of the time (less on a busy
# machine): rounds of 400 reads until 10 found one, at most 10 rounds
: >"$TMP/demo-spans.txt"
for _ in $(seq 10); do
    "$READER" threads "$demo" 400 >"$TMP/demo-threads.txt" 2>&1
    awk '/^read / && / valid / && $8 != "0000000000000000"' "$TMP/demo-threads.txt" >>"$TMP/demo-spans.txt"
    n=$(wc -l <"$TMP/demo-spans.txt")
    [ "$n" -ge 10 ] && break
done
bad=$(grep -cvE 'attrs endpoint=/(checkout|search);tenant=(acme|globex)$' "$TMP/demo-spans.txt")
pp_check "demo: $n reads found a worker in a request; every one with endpoint and tenant from the demo's sets ($bad not)" \
    test "$n" -ge 10 -a "$bad" -eq 0
[ "$bad" -eq 0 ] || pp_note "$(grep -vE 'attrs endpoint=/(checkout|search);tenant=(acme|globex)$' "$TMP/demo-spans.txt" | head -3)"
pp_stop "$demo" >/dev/null

pp_finish
