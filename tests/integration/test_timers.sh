#!/usr/bin/env bash
# test-labels: timing
# test_timers.sh: while a CPU profile runs, /proc/<pid>/timers lists exactly
# one profiling-signal timer per thread of /proc/<pid>/task, each on its own thread's
# CPU clock and aimed at that thread (SIGEV_THREAD_ID), including a thread
# started mid-profile; a thread that exits mid-profile leaves no timer
# behind; once the profile ends no profiling-signal timer remains, and a thread
# started afterwards gets none.
# Usage: test_timers.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

SIGNAL_NR=16 # SIGSTKFLT, the profiling signal

# sigprof_timers PID: "TID CLOCKID" per profiling-signal timer that notifies a thread.
sigprof_timers() {
    awk -v s="$SIGNAL_NR" '
        /^ID:/ { sig = ""; tid = "" }
        /^signal:/ { split($2, a, "/"); sig = a[1] }
        /^notify:/ { tid = $2; if (tid ~ /^signal\/tid\./) sub(/^signal\/tid\./, "", tid); else tid = "?" $2 }
        /^ClockID:/ { if (sig == s) print tid, $2 }' "/proc/$1/timers" 2>/dev/null
}

tasks() {
    ls "/proc/$1/task" 2>/dev/null | sort -n
}

# one_timer_per_thread PID LABEL [MUST_HAVE_TID]: compares the SIGPROF
# timers with the threads; retries while threads come and go.
one_timer_per_thread() {
    local pid=$1 label=$2 must=${3:-} try t1 t2 timers ttids bad clk want tid
    for try in 1 2 3 4 5 6 7 8 9 10; do
        t1=$(tasks "$pid")
        timers=$(sigprof_timers "$pid")
        t2=$(tasks "$pid")
        ttids=$(printf '%s\n' "$timers" | awk 'NF { print $1 }' | sort -n)
        [ "$t1" = "$t2" ] && [ "$t1" = "$ttids" ] && break
        sleep 0.1
    done
    bad=
    while read -r tid clk; do
        [ -z "$tid" ] && continue
        case $tid in
        *[!0-9]*) bad="timer does not notify a thread: $tid"; break ;;
        esac
        want=$(( (~tid << 3) | 6 )) # the thread's CPU clock (CPUCLOCK_SCHED, per thread)
        if [ "$clk" != "$want" ]; then
            bad="timer for tid $tid is on clock $clk, not that thread's CPU clock $want"
            break
        fi
    done <<<"$timers"
    if [ "$t1" = "$t2" ] && [ "$t1" = "$ttids" ] && [ -z "$bad" ]; then
        pp_ok "$label: one profiling-signal timer per thread, on its CPU clock ($(echo "$t1" | wc -l) threads)"
    else
        pp_bad "$label: profiling-signal timers do not match the threads one to one" "$bad" \
            "tasks: $(echo $t1)" "timers: $(echo $ttids)"
    fi
    if [ -n "$must" ]; then
        if [ "$(printf '%s\n' "$timers" | awk -v t="$must" '$1 == t' | wc -l)" = 1 ] &&
            printf '%s\n' "$t1" | grep -qx "$must"; then
            pp_ok "$label: thread $must has exactly one timer"
        else
            pp_bad "$label: thread $must should have exactly one timer" "timers: $(echo $ttids)"
        fi
    fi
}

no_timers() {
    local pid=$1 label=$2 try n
    for try in $(seq 20); do
        n=$(sigprof_timers "$pid" | wc -l)
        [ "$n" = 0 ] && break
        sleep 0.1
    done
    if [ "$n" = 0 ]; then
        pp_ok "$label: no profiling-signal timers"
    else
        pp_bad "$label: $n profiling-signal timers remain" "$(cat "/proc/$pid/timers")"
    fi
}

IDLE=4
if ! pp_start_helper svc "$BUILD/tests/prog_service_linked" --idle $IDLE; then
    pp_bad "prog_service_linked did not start" "$(cat "$TMP/svc.err")"
    pp_finish
fi
pid=$PID
base=http://127.0.0.1:$PORT/debug/pprof

if [ -r "/proc/$pid/timers" ]; then
    pp_ok "/proc/$pid/timers is readable"
else
    pp_bad "/proc/<pid>/timers is not readable on this kernel"
    pp_finish
fi
no_timers "$pid" "before profiling"

curl -sS --max-time 15 -o "$TMP/prof.pb.gz" -w '%{http_code}' "$base/profile?seconds=4" >"$TMP/prof.code" 2>&1 &
prof=$!
sleep 1

n=$(tasks "$pid" | wc -l)
if [ "$n" -ge $((IDLE + 1)) ]; then
    pp_ok "helper runs $n threads (main + $IDLE idle + the library's)"
else
    pp_bad "helper runs only $n threads"
fi
one_timer_per_thread "$pid" "1 s into the profile"

# A thread started mid-profile.
kill -USR1 "$pid"
line=$(pp_wait_line "$TMP/svc.out" '^new-tid=[0-9]+$' 5)
newtid=${line#new-tid=}
if [ -n "$newtid" ] && kill -0 "$prof" 2>/dev/null; then
    pp_ok "thread $newtid started while the profile runs"
    one_timer_per_thread "$pid" "after a thread started mid-profile" "$newtid"
else
    pp_bad "no new thread mid-profile ($line)"
fi

# A thread that exits mid-profile.
kill -USR2 "$pid"
line=$(pp_wait_line "$TMP/svc.out" '^exited-tid=[0-9]+$' 5)
gone=${line#exited-tid=}
if [ -n "$gone" ] && kill -0 "$prof" 2>/dev/null && [ ! -e "/proc/$pid/task/$gone" ]; then
    pp_ok "thread $gone exited while the profile runs"
    one_timer_per_thread "$pid" "after a thread exited mid-profile"
    if sigprof_timers "$pid" | awk -v t="$gone" '$1 == t { f = 1 } END { exit f }'; then
        pp_ok "no timer left for the exited thread $gone"
    else
        pp_bad "a timer is left for the exited thread $gone"
    fi
else
    pp_bad "no thread exit mid-profile ($line)"
fi

wait $prof
if [ "$(cat "$TMP/prof.code")" = 200 ] && pp_pprof -raw "$TMP/prof.pb.gz" >/dev/null 2>&1; then
    pp_ok "profile?seconds=4: 200 with a valid profile"
else
    pp_bad "profile?seconds=4 failed" "$(cat "$TMP/prof.code")"
fi
no_timers "$pid" "after the profile ended"

kill -USR1 "$pid"
for i in $(seq 50); do
    [ "$(grep -c '^new-tid=' "$TMP/svc.out")" = 2 ] && break
    sleep 0.1
done
sleep 0.3
if [ "$(grep -c '^new-tid=' "$TMP/svc.out")" = 2 ]; then
    no_timers "$pid" "after a thread started with no profile running"
else
    pp_bad "no second new thread after the profile"
fi

if pp_alive "$pid"; then
    pp_ok "helper still running"
else
    pp_bad "helper died" "$(cat "$TMP/svc.err")"
fi
pp_finish
