#!/usr/bin/env bash
# test-labels: slow
# test_concurrent_profiles.sh: the cap on concurrent profile requests. With
# max_concurrent = N, N+1 simultaneous profile?seconds=3 requests give N
# full profiles and one 503 with a one-line reason; a quick request is
# answered at once while the profiles run; a client that disconnects
# mid-profile frees its place for the very next request, also when 20
# clients drop theirs at once.
# Usage: test_concurrent_profiles.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

N=3
if ! pp_start_helper svc "$BUILD/tests/prog_service_linked" --max-concurrent $N --busy 1; then
    pp_bad "prog_service_linked did not start" "$(cat "$TMP/svc.err")"
    pp_finish
fi
pid=$PID
base=http://127.0.0.1:$PORT/debug/pprof

# check_error_reply DIR LABEL STATUS: the shape of an error answer.
check_error_reply() {
    local f=$1 label=$2 status=$3 ct go lines
    ct=$(pp_header "$f.hdr" Content-Type)
    go=$(pp_header "$f.hdr" X-Go-Pprof)
    lines=$(tr -cd '\n' <"$f.body" | wc -c)
    if [ "$(pp_status "$f.hdr")" = "$status" ] && [ "$ct" = "text/plain; charset=utf-8" ] && [ "$go" = 1 ] &&
        [ "$lines" = 1 ] && [ "$(tail -c 1 "$f.body" | od -An -c | tr -d ' ')" = '\n' ] &&
        [ "$(wc -c <"$f.body")" -gt 1 ]; then
        pp_ok "$label: $status, text/plain; charset=utf-8, X-Go-Pprof: 1, one line: $(cat "$f.body")"
    else
        pp_bad "$label: malformed $status answer" "$(cat "$f.hdr" "$f.body")"
    fi
}

# ---- N+1 at once
pids=()
for i in $(seq 0 $N); do
    curl -sS --max-time 15 -D "$TMP/r$i.hdr" -o "$TMP/r$i.body" \
        -w '%{http_code} %{time_total}\n' "$base/profile?seconds=3" >"$TMP/r$i.res" 2>&1 &
    pids+=($!)
done
sleep 0.7
quick=$(curl -sS --max-time 5 -o "$TMP/cmdline" -w '%{http_code} %{time_total}' "$base/cmdline" 2>&1)
running=0
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && running=$((running + 1)); done
wait "${pids[@]}"

if [ "${quick%% *}" = 200 ] && pp_in_range "${quick#* }" 0 0.5 && [ $running -eq $N ]; then
    pp_ok "cmdline answered in ${quick#* }s while $running profiles ran"
else
    pp_bad "cmdline during $running running profiles: status and time '$quick' (want 200 within 0.5 s, $N running)"
fi

ok=0
busy=0
for i in $(seq 0 $N); do
    read -r code took <"$TMP/r$i.res"
    case $code in
    200)
        if pp_pprof -raw "$TMP/r$i.body" >"$TMP/r$i.raw" 2>&1 && grep -qx 'PeriodType: cpu nanoseconds' "$TMP/r$i.raw" &&
            grep -qE ' spin_for_tests ' "$TMP/r$i.raw" && pp_in_range "$took" 3 4.5; then
            ok=$((ok + 1))
        else
            pp_bad "request $i: 200 after ${took}s but not a full profile of the busy thread" "$(head -20 "$TMP/r$i.raw")"
        fi
        ;;
    503)
        busy=$((busy + 1))
        if pp_in_range "$took" 0 1; then
            pp_ok "request $i: 503 at once (${took}s)"
        else
            pp_bad "request $i: 503 only after ${took}s"
        fi
        check_error_reply "$TMP/r$i" "request $i" 503
        ;;
    *)
        pp_bad "request $i: unexpected answer '$code'" "$(cat "$TMP/r$i.res" "$TMP/r$i.hdr" "$TMP/r$i.body" 2>/dev/null)"
        ;;
    esac
done
if [ $ok -eq $N ] && [ $busy -eq 1 ]; then
    pp_ok "$((N + 1)) concurrent requests with cap $N: $ok valid profiles (go tool pprof parses each), $busy refused"
else
    pp_bad "$((N + 1)) concurrent requests with cap $N: $ok valid profiles and $busy refusals (want $N and 1)"
fi

# ---- a client that leaves frees its place
pids=()
for i in 1 2; do
    curl -sS --max-time 15 -o /dev/null -w '%{http_code}\n' "$base/profile?seconds=4" >"$TMP/hold$i.res" 2>&1 &
    pids+=($!)
done
curl -sS --max-time 1 -o /dev/null "$base/profile?seconds=10" >/dev/null 2>&1 &
leaver=$!
sleep 0.4
# The cap is reached now: a further request is refused ...
full=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$base/profile?seconds=1" 2>&1)
if [ "$full" = 503 ]; then
    pp_ok "with $N profiles running the next one gets 503"
else
    pp_bad "with $N profiles running the next one got '$full' (want 503)"
fi
wait $leaver
# ... until the client that gave up after 1 s has left: at once, since a
# request that finds the cap reached looks for peers that have gone (the
# scheduler's own check comes only every 250 ms).
after=$(curl -sS --max-time 5 -o "$TMP/after.body" -w '%{http_code}' "$base/profile?seconds=1" 2>&1)
still=0
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && still=$((still + 1)); done
if [ "$after" = 200 ] && [ $still -eq 2 ] && pp_pprof -raw "$TMP/after.body" >/dev/null 2>&1; then
    pp_ok "after a client disconnected mid-profile, a new profile succeeds while $still others run"
else
    pp_bad "after a client disconnected mid-profile: '$after' with $still others running (want 200 and 2)"
fi
wait "${pids[@]}"
if [ "$(cat "$TMP/hold1.res")" = 200 ] && [ "$(cat "$TMP/hold2.res")" = 200 ]; then
    pp_ok "the two long profiles completed"
else
    pp_bad "long profiles: $(cat "$TMP/hold1.res") $(cat "$TMP/hold2.res")"
fi

# Every place is free again: N at once all succeed.
pids=()
for i in $(seq 1 $N); do
    curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' "$base/profile?seconds=1" >"$TMP/again$i.res" 2>&1 &
    pids+=($!)
done
wait "${pids[@]}"
if [ "$(cat "$TMP"/again*.res | grep -c '^200$')" = $N ]; then
    pp_ok "afterwards $N concurrent profiles all succeed (no place leaked)"
else
    pp_bad "afterwards $N concurrent profiles: $(cat "$TMP"/again*.res | tr '\n' ' ')"
fi

# Many clients that drop their profile at once: the next request still
# gets its profile (their places were kept until the scheduler's next
# check, 250 ms later: 10 of 10 rounds answered 503).
codes=""
for r in $(seq 10); do
    pids=()
    for i in $(seq 20); do
        curl -s --max-time 0.05 -o /dev/null "$base/profile?seconds=30" >/dev/null 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    codes="$codes $(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$base/profile?seconds=1" 2>&1)"
done
pp_check "20 clients dropping their profiles, 10 times: the next request is answered each time ($codes)" \
    test "$(echo $codes)" = "$(echo 200 200 200 200 200 200 200 200 200 200)"

if pp_alive "$pid"; then
    pp_ok "helper still running"
else
    pp_bad "helper died" "$(cat "$TMP/svc.err")"
fi
pp_finish
