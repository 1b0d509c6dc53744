#!/usr/bin/env bash
# test-labels: plain-only quick
# test_examples.sh: the complete programs README.md's "Three ways in" links
# to (examples/) do what their comments say. embedded serves LIBPPROF_ADDR,
# a 1 s CPU profile of it names burn_cpu and `go tool pprof -tags` shows its
# labels (endpoint=/checkout, tenant=acme); it exits 0 on SIGTERM and after
# its SECONDS, and 1 with the reason when its port is taken. recorder
# writes a profile go tool pprof reads, naming compute_report, and exits 1
# with the reason when the file cannot be opened or written. plain, not
# linked with libpprof, serves under LD_PRELOAD and under libpprof-run, and
# its CPU profile names spin_numbers.
# Usage: test_examples.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

EMB=$BUILD/example-embedded
REC=$BUILD/example-recorder
PLAIN=$BUILD/example-plain
for p in "$EMB" "$REC" "$PLAIN"; do
    [ -x "$p" ] || pp_bad "$p is not built"
done

# names FILE FUNCTION: go tool pprof -top of FILE lists FUNCTION.
names() {
    pp_pprof -top -nodecount=40 "$1" >"$1.top" 2>&1 && grep -qE " $2\$" "$1.top"
}

# Way 2's recorder runs meanwhile (it profiles its own second of CPU).
timeout 60 "$REC" "$TMP/rec.pb.gz" >"$TMP/rec.out" 2>"$TMP/rec.err" &
rec=$!

# ---- way 1: embedded, and way 3: plain (preloaded, by hand and through the
# launcher), serving at once; one 1 s CPU profile each.
emb_pid= plain_pid= run_pid=
if pp_serve embedded env LIBPPROF_ADDR=127.0.0.1:@PORT@ "$EMB" 60; then
    emb_pid=$PID emb_port=$PORT
    pp_ok "embedded serves on 127.0.0.1:$emb_port"
else
    pp_bad "embedded does not serve" "$(cat "$TMP/embedded.err" 2>/dev/null)"
fi
if [ -n "$(readelf -W -d "$PLAIN" | grep -E 'NEEDED.*libpprof')" ]; then
    pp_bad "premise: example-plain must not be linked with libpprof"
fi
if pp_serve plain env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:@PORT@ "$PLAIN" 60; then
    plain_pid=$PID plain_port=$PORT
    pp_ok "plain (not linked with libpprof) serves under LD_PRELOAD on 127.0.0.1:$plain_port"
else
    pp_bad "plain does not serve under LD_PRELOAD" "$(cat "$TMP/plain.err" 2>/dev/null)"
fi
if pp_serve run "$BUILD/libpprof-run" --addr 127.0.0.1:@PORT@ -- "$PLAIN" 60; then
    run_pid=$PID run_port=$PORT
    pp_ok "plain serves under libpprof-run on 127.0.0.1:$run_port"
else
    pp_bad "plain does not serve under libpprof-run" "$(cat "$TMP/run.err" 2>/dev/null)"
fi

curls=()
for v in emb:$emb_pid:${emb_port:-} plain:$plain_pid:${plain_port:-} run:$run_pid:${run_port:-}; do
    IFS=: read -r name pid port <<<"$v"
    [ -n "$pid" ] || continue
    curl -sS --max-time 20 -o "$TMP/$name.pb.gz" \
        "http://127.0.0.1:$port/debug/pprof/profile?seconds=1" 2>"$TMP/$name.curl" &
    curls+=($!)
done
# Meanwhile: the SECONDS argument, and the port taken.
timeout 30 env LIBPPROF_ADDR=127.0.0.1:0 "$EMB" 1 >"$TMP/timed.out" 2>"$TMP/timed.err"
rc=$?
if [ $rc -eq 0 ] && grep -qE '^serving /debug/pprof/ on port [1-9][0-9]*$' "$TMP/timed.out" && [ ! -s "$TMP/timed.err" ]; then
    pp_ok "embedded 1: serves on the port it prints, exits 0 after its second"
else
    pp_bad "embedded 1: exit $rc" "$(cat "$TMP/timed.out" "$TMP/timed.err")"
fi
if [ -n "$emb_pid" ]; then
    timeout 30 env LIBPPROF_ADDR=127.0.0.1:$emb_port "$EMB" 1 >"$TMP/taken.out" 2>"$TMP/taken.err"
    rc=$?
    if [ $rc -eq 1 ] && grep -qx 'pprof: cannot serve on that address: .*' "$TMP/taken.err"; then
        pp_ok "embedded with its port taken: exit 1, $(cat "$TMP/taken.err")"
    else
        pp_bad "embedded with its port taken: exit $rc (want 1 and the reason)" "$(cat "$TMP/taken.err")"
    fi
fi
[ ${#curls[@]} -gt 0 ] && wait "${curls[@]}"

if [ -n "$emb_pid" ]; then
    if names "$TMP/emb.pb.gz" burn_cpu; then
        pp_ok "embedded: its CPU profile names burn_cpu"
    else
        pp_bad "embedded: no burn_cpu in its CPU profile" "$(cat "$TMP/emb.pb.gz.top" "$TMP/emb.curl")"
    fi
    pp_pprof -tags "$TMP/emb.pb.gz" >"$TMP/tags.txt" 2>&1
    if grep -qE '^ *endpoint: Total' "$TMP/tags.txt" && grep -qE '\): /checkout$' "$TMP/tags.txt" &&
        grep -qE '^ *tenant: Total' "$TMP/tags.txt" && grep -qE '\): acme$' "$TMP/tags.txt"; then
        pp_ok "embedded: -tags shows endpoint=/checkout and tenant=acme"
    else
        pp_bad "embedded: -tags lacks endpoint=/checkout, tenant=acme" "$(cat "$TMP/tags.txt")"
    fi
    pp_stop "$emb_pid"
    rc=$?
    if [ $rc -eq 0 ] && [ ! -s "$TMP/embedded.err" ]; then
        pp_ok "embedded: SIGTERM stops the server, exit 0, nothing on stderr"
    else
        pp_bad "embedded after SIGTERM: exit $rc" "$(cat "$TMP/embedded.err")"
    fi
fi
if [ -n "$plain_pid" ]; then
    if names "$TMP/plain.pb.gz" spin_numbers; then
        pp_ok "plain under LD_PRELOAD: its CPU profile names spin_numbers"
    else
        pp_bad "plain under LD_PRELOAD: no spin_numbers" "$(cat "$TMP/plain.pb.gz.top" "$TMP/plain.curl")"
    fi
fi
if [ -n "$run_pid" ]; then
    if names "$TMP/run.pb.gz" spin_numbers; then
        pp_ok "plain under libpprof-run: its CPU profile names spin_numbers"
    else
        pp_bad "plain under libpprof-run: no spin_numbers" "$(cat "$TMP/run.pb.gz.top" "$TMP/run.curl")"
    fi
fi

# ---- way 2: recorder
wait $rec
rc=$?
if [ $rc -eq 0 ] && [ -s "$TMP/rec.pb.gz" ] && [ ! -s "$TMP/rec.err" ]; then
    pp_ok "recorder: exit 0, profile written"
    if names "$TMP/rec.pb.gz" compute_report; then
        pp_ok "recorder: go tool pprof reads the file, which names compute_report"
    else
        pp_bad "recorder: no compute_report in the file" "$(cat "$TMP/rec.pb.gz.top")"
    fi
else
    pp_bad "recorder: exit $rc" "$(cat "$TMP/rec.err")"
fi
timeout 60 "$REC" "$TMP/no/such/dir/rec.pb.gz" >/dev/null 2>"$TMP/nodir.err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'no/such/dir/rec.pb.gz: No such file or directory' "$TMP/nodir.err"; then
    pp_ok "recorder, path in no directory: exit 1, $(cat "$TMP/nodir.err")"
else
    pp_bad "recorder, path in no directory: exit $rc (want 1 and the reason)" "$(cat "$TMP/nodir.err")"
fi
if [ -w /dev/full ]; then
    timeout 60 "$REC" /dev/full >/dev/null 2>"$TMP/full.err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q '^recorder: pprof_profile_write: write failed' "$TMP/full.err"; then
        pp_ok "recorder to /dev/full: exit 1, $(cat "$TMP/full.err")"
    else
        pp_bad "recorder to /dev/full: exit $rc (want 1 and the failed write)" "$(cat "$TMP/full.err")"
    fi
else
    pp_skip "no writable /dev/full"
fi

pp_finish
