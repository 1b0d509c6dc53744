#!/usr/bin/env bash
# test_mhd_modes.sh: the endpoints mounted on a program's own
# libmicrohttpd daemon, in each of its modes (prog_mhd_modes_linked)
# (test-labels: slow)
#
# poll (the README's snippet), per-conn (a thread per connection, where a
# connection cannot be suspended) and external (the program runs MHD_run):
#   profile?seconds=1: 200 within 4 s, burn_in_worker in go tool pprof -top;
#   heap while a profile?seconds=3 waits: 200 within 1 s (a waiting
#     profile holds no other connection);
#   a client that leaves a profile?seconds=30 after 0.5 s, then
#     profile?seconds=1: 200 (the program goes on serving);
#   SIGTERM while a profile?seconds=8 waits: the program stops (it
#     prints "stopped") within 3 s.
# no-suspend (without MHD_ALLOW_SUSPEND_RESUME): profile?seconds=1 is a
#   501 at once, one line of text/plain naming MHD_ALLOW_SUSPEND_RESUME;
#   heap answers 200.
# Usage: test_mhd_modes.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
PROG=$BUILD/tests/prog_mhd_modes_linked
[ -x "$PROG" ] || pp_give_up "no $PROG (build the tree)" none

# get NAME QUERY MAX: fetches $URL/QUERY within MAX s into $TMP/NAME.body;
# sets CODE and TT (seconds)
get() {
    local out
    out=$(curl -s -D "$TMP/$1.hdr" -o "$TMP/$1.body" -w '%{http_code} %{time_total}' --max-time "$3" "$URL/$2")
    CODE=${out%% *}
    TT=${out##* }
}

for mode in poll per-conn external no-suspend; do
    pp_start_helper "$mode" "$PROG" "$mode" || pp_give_up "[$mode] prog_mhd_modes_linked serves" "$mode"
    URL=http://127.0.0.1:$PORT/debug/pprof
    if [ "$mode" = no-suspend ]; then
        get ns profile?seconds=1 5
        ctype=$(pp_header "$TMP/ns.hdr" Content-Type)
        pp_check "[$mode] profile?seconds=1: 501 within 1 s, one line of text/plain naming MHD_ALLOW_SUSPEND_RESUME ($CODE in $TT s, $ctype: $(head -c 200 "$TMP/ns.body"))" \
            test "$CODE" = 501 -a "$(grep -c '' "$TMP/ns.body")" = 1 -a "${ctype%%;*}" = text/plain -a \
            "$(grep -c MHD_ALLOW_SUSPEND_RESUME "$TMP/ns.body")" = 1
        pp_check "[$mode] ... answered at once ($TT s)" pp_in_range "$TT" 0 1
        get nsheap heap 10
        pp_check "[$mode] heap: 200 ($CODE)" test "$CODE" = 200
        pp_stop "$PID" >/dev/null
        continue
    fi
    get "$mode-p" profile?seconds=1 10
    pp_check "[$mode] profile?seconds=1: 200 within 4 s ($CODE in $TT s)" test "$CODE" = 200 -a "${TT%%.*}" -lt 4
    pp_pprof_shows "[$mode] ... burn_in_worker in its top" 'burn_in_worker' -top "$TMP/$mode-p.body"

    ( get "$mode-long" profile?seconds=3 10 ) &
    waiter=$!
    sleep 0.5
    get "$mode-heap" heap 10
    pp_check "[$mode] heap while a profile waits: 200 within 1 s ($CODE in $TT s)" \
        test "$CODE" = 200 -a "${TT%%.*}" -lt 1
    wait "$waiter"

    curl -s -o /dev/null --max-time 0.5 "$URL/profile?seconds=30"
    get "$mode-after" profile?seconds=1 10
    pp_check "[$mode] a client left a profile; the next one: 200 ($CODE in $TT s)" test "$CODE" = 200

    ( get "$mode-stop" profile?seconds=8 12 ) &
    waiter=$!
    sleep 0.5
    kill -TERM "$PID"
    if pp_wait_gone "$PID" 30 0.1 && grep -q '^stopped$' "$TMP/$mode.out"; then
        pp_ok "[$mode] SIGTERM while a profile waits: the program stopped within 3 s"
    else
        pp_bad "[$mode] SIGTERM while a profile waits: want it stopped within 3 s" "$(cat "$TMP/$mode.out" "$TMP/$mode.err")"
    fi
    wait "$waiter"
    pp_stop "$PID" >/dev/null 2>&1
done
pp_finish
