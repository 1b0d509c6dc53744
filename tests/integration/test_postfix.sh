#!/usr/bin/env bash
# test_postfix.sh: Debian's postfix under libpprof, a private instance
# started with postfix -c DIR start as its unit starts it, driven by
# smtp-source (test-labels: plain-only slow)
#
# postfix start runs postfix-script, which runs master -w; that forks the
# master and exits, and the master starts each service (smtpd, cleanup,
# qmgr, virtual, ...) by fork and exec, with the environment that
# import_environment lists (docs/daemons.md). A control run without
# libpprof delivers 500 mails. Then, preloaded:
# - the master serves the endpoint within 2 s of postfix start returning
#   (before: its services raced for the port, the master never served);
# - under 7 s of smtp-source load, a 5 s CPU profile of the tree covers
#   90% to 110% of the tree's CPU from /proc over the window, counting the
#   services that started and ended inside it (from the master's reaped
#   children's time); they are asked for the rest of the window as they
#   join (before: 0.46 to 0.60);
# - every mail is delivered, the maillog has no kind of warning or error
#   the control run did not have, and postfix stop ends the master.
# Usage: test_postfix.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }
if [ ! -x /usr/sbin/postfix ] || ! command -v smtp-source >/dev/null || ! id postfix >/dev/null 2>&1; then
    pp_skip "postfix is not installed"
    pp_finish
fi
D=$TMP/pf
chmod 755 "$TMP"
SPORT=$(pp_free_port)
# shellcheck source=postfix_conf.sh
. "$(dirname "$0")/postfix_conf.sh"
pf_conf "$D" "$SPORT"
master_pid() { tr -d ' ' <"$D/queue/pid/master.pid" 2>/dev/null; }
delivered() { find "$D/mail/box" -type f 2>/dev/null | wc -l; }
wait_delivered() { # N: up to 60 s
    for _ in $(seq 600); do
        [ "$(delivered)" -ge "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
pf_stop() {
    local m
    m=$(master_pid)
    postfix -c "$D/conf" stop >>"$TMP/postfix.out" 2>&1
    [ -n "$m" ] && pp_wait_gone "$m" 100 0.1
}
trap 'postfix -c "$D/conf" abort >/dev/null 2>&1; pp_cleanup' EXIT
# The kinds of warning and error lines in the maillog. Not cleanup's
# "file system clock is N seconds ahead of local clock" (and its "resetting
# file time stamps"): since Linux 6.13 a file written after an fstat gets a
# fine-grained mtime, which can pass the coarse second time() reads (on
# 6.18, 77 of 20000 files written, fstat'ed, written and fsync'ed by a
# program of a few lines, without libpprof), so the more mail a run
# carries the likelier it is, profiled or not.
warnings() {
    grep -E ' (warning|error|fatal|panic): ' "$D/maillog" 2>/dev/null |
        grep -vE 'warning: (file system clock is [0-9]+ seconds ahead of local clock|resetting file time stamps)'
}
problems() {
    warnings | sed -E 's/^.* (warning|error|fatal|panic): /\1: /; s/[0-9]+/N/g' | sort -u
}

# the control run
postfix -c "$D/conf" start >>"$TMP/postfix.out" 2>&1 || pp_give_up "postfix did not start" postfix "$D/maillog"
smtp-source -s 5 -m 500 -f a@pp.test -t box@pp.test "127.0.0.1:$SPORT" 2>>"$TMP/smtp.err"
wait_delivered 500
control_n=$(delivered)
pf_stop
problems >"$TMP/control.problems"
pp_check "the control run delivered 500 mails ($control_n)" test "$control_n" = 500
rm -rf "$D/mail/box"

# preloaded
PORT=$(pp_free_port)
base=http://127.0.0.1:$PORT/debug/pprof
env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT postfix -c "$D/conf" start \
    >>"$TMP/postfix.out" 2>&1 || pp_give_up "postfix did not start preloaded" postfix "$D/maillog"
t0=$(date +%s%N)
pp_wait_http "$base/cmdline" 5
t1=$(date +%s%N)
master=$(master_pid)
curl -sS --max-time 5 "$base/" >"$TMP/index.html"
pp_check "the master $master serves the endpoint $(((t1 - t0) / 1000000)) ms after postfix start returned (2 s at most)" \
    sh -c "[ $(((t1 - t0) / 1000000)) -le 2000 ] && grep -q 'this process $master (master) is the hub' '$TMP/index.html'"

# the tree's CPU ticks: every process whose parent is the master, the
# master, and the master's reaped children (cutime + cstime)
# children (cutime + cstime), read in one pass so that the two readings
# lie within a few ms of the window's ends (cat passes over a process
# that ended meanwhile, where mawk would stop)
snapshot() {
    cat /proc/[0-9]*/stat 2>/dev/null |
        awk -v m="$master" '{ pid = $1; sub(/^.*\) /, ""); if (pid == m || $2 == m) print pid, $12 + $13, (pid == m ? $14 + $15 : 0) }'
}
sent=0
{
    end=$((SECONDS + 7))
    while [ $SECONDS -lt $end ]; do
        smtp-source -s 5 -m 300 -f a@pp.test -t box@pp.test "127.0.0.1:$SPORT" 2>>"$TMP/smtp.err" && sent=$((sent + 300))
    done
    echo "$sent" >"$TMP/sent"
} &
load=$!
sleep 1
curl -sS --max-time 30 -o "$TMP/cpu.pb.gz" -w '%{http_code}' "$base/profile?seconds=5" >"$TMP/cpu.code" &
cpu=$!
w0=$(date +%s%N)
snapshot >"$TMP/snap0"
sleep "$(awk -v w="$w0" -v n="$(date +%s%N)" 'BEGIN { printf "%.3f", 5 - (n - w) / 1e9 }')"
snapshot >"$TMP/snap1"
wait $cpu $load
pp_check "the tree's CPU profile answered 200 ($(cat "$TMP/cpu.code"))" test "$(cat "$TMP/cpu.code")" = 200
window=$(awk -v m="$master" '
    FNR == NR { c0[$1] = $2; if ($1 == m) r0 = $3; next }
    { seen[$1] = 1; sum += $2 - ($1 in c0 ? c0[$1] : 0); if ($1 == m) sum += $3 - r0 }
    END { for (p in c0) if (!(p in seen)) sum -= c0[p]; print sum * 10 }' "$TMP/snap0" "$TMP/snap1")
pids_then=$(awk '{ print $1 }' "$TMP/snap0" "$TMP/snap1" | sort -u | wc -l)
total=$(pp_pprof -raw "$TMP/cpu.pb.gz" 2>/dev/null | awk '
    /^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
    s && /^ *[0-9]+ +[0-9]+:/ { sum += $2 } END { printf "%d\n", sum / 1000000 }')
pids=$(pp_pprof -raw "$TMP/cpu.pb.gz" 2>/dev/null | grep -o 'pid:\[[0-9]*\]' | sort -u | wc -l)
pp_check "the CPU profile covers the tree's CPU ($total ms of samples in $pids processes for $window ms from /proc over $pids_then processes seen, 90% to 110%)" \
    awk -v p="$total" -v c="$window" 'BEGIN { exit !(c > 500 && p >= 0.9 * c && p <= 1.1 * c + 50) }'
sent=$(cat "$TMP/sent")
wait_delivered "$sent"
got=$(delivered)
pp_check "every mail was delivered ($got of $sent)" test "$got" = "$sent" -a "$sent" -gt 0
pf_stop
if pp_alive "$master"; then # what it waits for, thread by thread
    for t in /proc/"$master"/task/*; do
        pp_note "master thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)): state $(awk '{ print $3 }' "$t/stat" 2>/dev/null), in $(cat "$t/wchan" 2>/dev/null), syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null), pending $(awk '/^ShdPnd|^SigPnd|^SigBlk/ { printf "%s ", $0 }' "$t/status" 2>/dev/null), kernel stack $(head -4 "$t/stack" 2>/dev/null | awk '{ printf "%s ", $2 }')"
    done
    tail -5 "$TMP/postfix.out" | while read -r line; do pp_note "postfix: $line"; done
    grep -E 'postfix/(master|postfix-script)' "$D/maillog" | tail -4 | while read -r line; do pp_note "maillog: $line"; done
fi
pp_check "postfix stop ended the master" test -z "$(pp_alive "$master" && echo alive)"
new=$(problems | comm -13 "$TMP/control.problems" - | head -5)
# the lines themselves, with their numbers (a signal's among them)
[ -n "$new" ] && warnings | tail -5 | while read -r line; do pp_note "maillog: ${line#* postfix}"; done
pp_check "the maillog has no kind of warning or error the control run did not have${new:+: $new}" test -z "$new"
pp_finish
