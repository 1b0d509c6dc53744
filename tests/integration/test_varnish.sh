#!/usr/bin/env bash
# test_varnish.sh: Debian's varnish under libpprof: its cache child (about
# 200 threads, user vcache) is profiled with the tree
# (test-labels: plain-only slow)
#
# varnishd 7.1 starts daemonized with a private work directory, a
# loopback backend (python3's http.server) and the vcache user, as its
# unit starts it but for -F; wrk drives 10 s of cache hits through it.
# An 8 s CPU profile of the tree answers 200 (before, every CPU profile of
# its tree answered 500 "zlib deflateInit2 failed": varnishd exports a
# zlib of its own, which took libpprof's calls), the child's samples (its
# pid label, libpprof's own work left out) cover at least 90% of its
# threads' CPU from /proc over the window, heap?pid= of the child answers
# 200 with a profile go tool pprof reads, and every request wrk made was
# answered. (A window's end leaves out the CPU that threads asleep at
# that moment used since their last sample: 100 to 150 ms over the
# child's 217 threads here, so a 4 s window covered 94% to 98% alone
# and 88.8% of 1,340 ms on a loaded CI machine; 8 s windows covered
# 98.1% to 98.5%.)
# Usage: test_varnish.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

if [ ! -x /usr/sbin/varnishd ] || ! command -v wrk >/dev/null || ! id vcache >/dev/null 2>&1; then
    pp_skip "varnish or wrk is not installed"
    pp_finish
fi
D=$TMP/varnish
pp_web_backend "$D"
VPORT=$(pp_free_port)
PORT=$(pp_free_port)
LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT /usr/sbin/varnishd -j unix,user=vcache \
    -a "127.0.0.1:$VPORT" -b "127.0.0.1:$BPORT" -n "$D/work" -s malloc,64m -P "$D/varnishd.pid" \
    >"$TMP/varnishd.out" 2>"$TMP/varnishd.err"
master=$(cat "$D/varnishd.pid" 2>/dev/null)
pp_wait_http "http://127.0.0.1:$PORT/debug/pprof/cmdline" 10 || pp_give_up "varnishd did not serve the endpoint" varnishd
base=http://127.0.0.1:$PORT/debug/pprof
child=""
for _ in $(seq 50); do
    child=$(pgrep -P "$master" -x cache-main || true)
    [ -n "$child" ] && curl -sS --max-time 2 -o /dev/null "http://127.0.0.1:$VPORT/" && break
    sleep 0.2
done
pp_check "varnish's child runs ($child, $(ls /proc/"$child"/task 2>/dev/null | wc -l) threads) and serves" \
    test -n "$child"

# the child's CPU ticks by the process's own count (its pools' threads
# come and go), less those of libpprof's threads, around a CPU profile
wrk -t2 -c20 -d10s "http://127.0.0.1:$VPORT/" >"$TMP/wrk.out" 2>&1 &
wrk=$!
sleep 1
pp_cpu_window "$child" 8 "$base"
wait $wrk
pp_check "a CPU profile of the tree answered 200 ($(cat "$TMP/cpu.code"))" test "$(cat "$TMP/cpu.code")" = 200
{ read -r c0; read -r c1; } <"$TMP/ticks"
mine=$(pp_pid_ms "$TMP/cpu.pb.gz" "$child")
pp_check "the child's samples cover its CPU ($mine ms for $(((c1 - c0) * 10)) ms from /proc, at least 90%)" \
    awk -v p="$mine" -v c="$(((c1 - c0) * 10))" 'BEGIN { exit !(c > 300 && p >= 0.9 * c && p <= 1.1 * c + 50) }'
code=$(curl -sS --max-time 20 -o "$TMP/heap.pb.gz" -w '%{http_code}' "$base/heap?pid=$child")
pp_check "heap?pid=$child answers 200 with a profile ($code)" \
    test "$code" = 200 -a -n "$(pp_pprof -top "$TMP/heap.pb.gz" 2>/dev/null | grep -i 'inuse_space\|Type:')"
errs=$(sed -n 's/.*Socket errors: \(.*\)/\1/p; s/.*Non-2xx or 3xx responses: \(.*\)/non-2xx \1/p' "$TMP/wrk.out")
pp_check "wrk's requests were all answered ($(grep -o '[0-9]* requests in' "$TMP/wrk.out"); ${errs:-no errors})" \
    test -z "$errs" -a -n "$(grep 'requests in' "$TMP/wrk.out")"
kill -TERM "$master"
pp_wait_gone "$master" 100 0.1
pp_finish
