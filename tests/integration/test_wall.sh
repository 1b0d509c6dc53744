#!/usr/bin/env bash
# test_wall.sh: the wall-clock profile (wall, fgprof) against threads
# whose time is known (test-labels: plain-only slow)
#
# prog_wall_linked has a thread that computes all the time (thread=compute),
# one that waits in epoll_wait for ever (thread=epoll), one that runs
# requests under spans, each computing 20 ms and then waiting 1.5 s in
# read() (thread=span; span k has span ID k and trace ID 7e57...k), and one that cycles
# through computing, poll(), a contended mutex and nanosleep, measuring
# each phase's wall time itself (thread=cycle; the time it was ready to
# run but waited for a CPU, its run_delay, is running, as for the
# kernel: compared with thread_state running plus runnable). Over one 10 s window at 400 Hz:
#   - each of the three threads' samples x period is the window's length
#     within 2% (every live thread is counted at every tick);
#   - thread_state's shares of the cycling thread (running, poll, futex,
#     clock_nanosleep) are each within 5 points of its own measure over
#     the window, when the thread waited for a CPU under 10% of it.
#     Chance: the window holds n = 10 x 400 = 4,000 samples of the thread;
#     taken as independent draws (an upper bound: ticks are one per
#     period, at a random point of it, so a phase of the thread is counted
#     floor or ceil of its length in periods), a share p has a standard
#     deviation of sqrt(p(1-p)/n): 0.77 points at p = 0.4, 0.72 at 0.3,
#     0.63 at 0.2, 0.47 at 0.1. The sampler adds a bias of its own
#     (docs/wall.md): in 12 runs on the quiet 2-core machine the shares
#     were off by running +1.77, poll -0.19, futex -0.29 and
#     clock_nanosleep -1.29 points on average (at most +2.23 and -2.13),
#     with spreads (standard deviations) of 0.42, 0.47, 0.35 and 0.31,
#     within chance's. 5 points less the bias is 4.2, 6.7, 7.5 and 7.9 of
#     chance's deviations above, one-sided 1.3e-5 or less each: under 1
#     in 1,000 for the four. (With 3 points, a CI run failed on poll +3.01
#     before the sampler's two fixes of docs/wall.md.) The sampler's
#     errors grow when the machine is busy: with the thread kept waiting
#     for a CPU 24 to 47% of the window (load average 4 to 32), the shares
#     were 0 to 3.6 points from the measure in 14 runs; those runs are not
#     checked;
#   - at most 2% of the cycling thread's 3 ms polls take over 5.5 ms (a
#     poll the profiling signal broke after its time ran out, entered
#     again for a whole timeout; checked when the shares are): 54 to 67 of
#     about 980 before that was fixed, 0 to 5 in the 12 runs after;
#   - the waiting thread's samples carry its span, as running ones do:
#     under -tagfocus thread_state=read, every sample has span_name
#     "GET /wait" and a span_id, at least 3 spans show (it waits under a
#     new one every 1.5 s), and each sample's trace ID (on: the program
#     runs with LIBPPROF_TRACE_ID_LABEL=1) is the one of its span ID's
#     request: the span it waited in, not a stale or mixed copy;
#   - go tool pprof reads it (-top, -tags, -tagfocus thread_state=...);
#     format=folded of a window sums to the window's samples;
#   - state=off-cpu has no running or runnable sample, state=on-cpu only
#     those; the computing thread is all running or runnable (ready to run,
#     waiting for a CPU);
#   - fgprof answers in fgprof's types (samples/count, time/nanoseconds,
#     period type wallclock), format=pprof and format=folded as fgprof's,
#     at /debug/pprof/fgprof and at /debug/fgprof (Alloy's fgprof job);
#   - bad hz= and state= values are 400s.
# Usage: test_wall.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

# Ahead of other work on the machine where it may (root): the shares below
# are compared with the program's own measure only when it was not kept
# waiting for a CPU (see there).
nice_=()
nice -n -10 true 2>/dev/null && nice_=(nice -n -10)
pp_start_helper prog "${nice_[@]}" env LIBPPROF_TRACE_ID_LABEL=1 "$BUILD/tests/prog_wall_linked" ||
    pp_give_up "prog_wall_linked did not serve" prog
base=http://127.0.0.1:$PORT/debug/pprof

# --- the bad requests first (they take no time)
for q in "state=idle" "hz=0" "hz=5000" "hz=x" "seconds=1&debug=1"; do
    code=$(curl -sS --max-time 10 -o "$TMP/bad.txt" -w '%{http_code}' "$base/wall?$q")
    pp_check "wall?$q is a 400 ($code: $(head -c 100 "$TMP/bad.txt"))" test "$code" = 400
done
code=$(curl -sS --max-time 10 -o "$TMP/bad.txt" -w '%{http_code}' "$base/fgprof?seconds=1&format=svg")
pp_check "fgprof?format=svg is a 400 ($code)" test "$code" = 400

# --- the accuracy window, with the off-CPU and on-CPU views and fgprof's
# forms running alongside at the same rate
curl -sS --max-time 30 -o "$TMP/off.pb.gz" "$base/wall?seconds=3&hz=400&state=off-cpu" &
off=$!
curl -sS --max-time 30 -o "$TMP/on.pb.gz" "$base/wall?seconds=3&hz=400&state=on-cpu" &
on=$!
curl -sS --max-time 30 -o "$TMP/fg.pb.gz" "$base/fgprof?seconds=3&hz=400&format=pprof" &
fg=$!
curl -sS --max-time 30 -o "$TMP/fg.folded" "$base/fgprof?seconds=3&hz=400&format=folded" &
fgf=$!
curl -sS --max-time 30 -o "$TMP/w.folded" "$base/wall?seconds=3&hz=400&format=folded&sample_index=samples" &
wf=$!
sleep 0.5 # the window at 400 Hz is open: fgprof's root path, as Alloy asks (no hz, no format), joins its rate
curl -sS --max-time 30 -o "$TMP/fgroot.pb.gz" "http://127.0.0.1:$PORT/debug/fgprof?seconds=2" &
fgr=$!
code=$(curl -sS --max-time 30 -o "$TMP/wall.pb.gz" -w '%{http_code}' "$base/wall?seconds=10&hz=400")
wait $off $on $fg $fgf $wf $fgr
pp_check "wall?seconds=10&hz=400 answers 200 ($code)" test "$code" = 200
sleep 0.3 # one more report line after the window

raw=$(pp_pprof -raw "$TMP/wall.pb.gz" 2>&1)
dur=$(sed -n 's/^Duration: //p' <<<"$raw")
period=$(sed -n 's/^Period: //p' <<<"$raw")
start=$(date -d "$(sed -n 's/^Time: //p' <<<"$raw" | sed 's/ UTC$//')" +%s%N)
pp_check "the profile's types are samples/count and wall/nanoseconds" grep -q '^samples/count wall/nanoseconds' <<<"$raw"

# samples of one thread (thread=NAME), in total or in one state
count() {
    pp_pprof -tags -sample_index=samples -tagfocus "thread=$1" "$TMP/wall.pb.gz" 2>/dev/null |
        awk -v s="${2:-}" '/^ *thread_state: Total/ { t = $3; inside = 1; next } /^ *[a-z_.]+: Total/ { inside = 0 }
            inside && s != "" && $NF == s { v = $1 } END { print (s == "" ? t : v) + 0 }'
}
for t in compute epoll cycle; do
    n=$(count $t)
    ms=$(awk -v n="$n" -v p="$period" 'BEGIN { printf "%.0f", n * p / 1e6 }')
    pp_check "thread $t: $n samples x $period ns = $ms ms, the window's $dur s within 2%" \
        pp_in_range "$ms" "$(awk -v d="$dur" 'BEGIN { print d * 980 }')" "$(awk -v d="$dur" 'BEGIN { print d * 1020 }')"
done
pp_check "thread epoll is all epoll_wait" test "$(count epoll epoll_wait)" = "$(count epoll)"
pp_check "thread compute is all running or runnable ($(count compute runnable) runnable)" \
    test "$(($(count compute running) + $(count compute runnable)))" = "$(count compute)"

# the cycling thread's own measure over the window: the report lines
# around its start and end (cumulative ns per phase)
end=$((start + $(awk -v d="$dur" 'BEGIN { printf "%.0f", d * 1e9 }')))
read -r mc mp mm ms md np nl < <(awk -v a="$start" -v b="$end" '
    /^m / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            if (v["t"] <= a) { c0 = v["compute"]; p0 = v["poll"]; m0 = v["mutex"]; s0 = v["sleep"]; d0 = v["delay"]
                               n0 = v["polls"]; l0 = v["long"] }
            if (v["t"] >= b && !done) { c1 = v["compute"]; p1 = v["poll"]; m1 = v["mutex"]; s1 = v["sleep"]; d1 = v["delay"]
                                        n1 = v["polls"]; l1 = v["long"]; done = 1 } }
    END { t = (c1 - c0) + (p1 - p0) + (m1 - m0) + (s1 - s0); if (t <= 0) t = 1
          printf "%.2f %.2f %.2f %.2f %.2f %d %d\n", 100 * (c1 - c0) / t, 100 * (p1 - p0) / t, 100 * (m1 - m0) / t,
                 100 * (s1 - s0) / t, 100 * (d1 - d0) / t, n1 - n0, l1 - l0 }' \
    "$TMP/prog.out")
# The sampler needs a CPU to look, as the thread does to run: when the
# thread waited for one more than 10% of the window (the machine busy with
# more than its two CPUs' worth of other work), when the sampler looks is
# tied to what the thread does, and the shares are printed, not checked.
pp_note "thread cycle: $(count cycle runnable) of its samples runnable; it waited for a CPU $md% of the window"
busy=$(awk -v d="$md" 'BEGIN { exit !(d > 10) }' && echo 1 || echo 0)
total=$(count cycle)
for pair in "running:$mc" "poll:$mp" "futex:$mm" "clock_nanosleep:$ms"; do
    st=${pair%%:*} want=${pair#*:}
    n=$(count cycle "$st")
    [ "$st" = running ] && n=$((n + $(count cycle runnable))) # the program's compute includes its run_delay
    got=$(awk -v n="$n" -v t="$total" 'BEGIN { printf "%.2f", t ? 100 * n / t : 0 }')
    if [ "$busy" = 1 ]; then
        pp_note "thread cycle's $st share $got%, its own measure $want% (not checked: it waited for a CPU $md% of the window)"
        continue
    fi
    pp_check "thread cycle's $st share $got%, its own measure $want%, within 5 points" \
        pp_in_range "$got" "$(awk -v w="$want" 'BEGIN { print w - 5 }')" "$(awk -v w="$want" 'BEGIN { print w + 5 }')"
done
if [ "$busy" = 1 ]; then
    pp_note "thread cycle: $nl of its $np polls took over 5.5 ms (not checked: it waited for a CPU $md% of the window)"
else
    pp_check "thread cycle: $nl of its $np 3 ms polls took over 5.5 ms, at most 2%" \
        test "$np" -gt 500 -a "$((nl * 50))" -le "$np"
fi

# --- spans on waiting samples: thread span waits in read() under its span
pp_pprof -tags -sample_index=samples -tagfocus thread_state=read "$TMP/wall.pb.gz" >"$TMP/read.tags" 2>&1
total() { awk -v k="$1" '$1 == k":" && $2 == "Total" { print $3 + 0; f = 1 } END { if (!f) print 0 }' "$TMP/read.tags"; }
nread=$(total thread_state)
pp_check "thread span waits in read: $nread samples, all of thread span" \
    test "$nread" -gt 0 -a "$(total thread)" = "$nread" -a "$(grep -c ': span$' "$TMP/read.tags")" = 1
pp_check "every read sample has span_name GET /wait ($(total span_name) of $nread) and a span_id ($(total span_id))" \
    eval '[ "$(total span_name)" = "$nread" ] && [ "$(total span_id)" = "$nread" ] && grep -q "): GET /wait$" "$TMP/read.tags"'
nspans=$(grep -cE '\): 0{12}[0-9a-f]{4}$' "$TMP/read.tags")
pp_check "the read samples carry $nspans spans (at least 3 in 10 s, one each 1.5 s)" test "$nspans" -ge 3
pp_pprof -raw -tagfocus thread_state=read "$TMP/wall.pb.gz" 2>/dev/null |
    awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 } on && /thread_state:\[read\]/ {
        s = t = "none"
        if (match($0, /span_id:\[[0-9a-f]+\]/)) s = substr($0, RSTART + 9, RLENGTH - 10)
        if (match($0, /trace_id:\[[0-9a-f]+\]/)) t = substr($0, RSTART + 10, RLENGTH - 11)
        print (t == "7e57000000000000" s ? "ok" : "bad"), s, t }' >"$TMP/read.ids"
pp_check "each read sample's trace_id is its span's ($(grep -c '^ok' "$TMP/read.ids") ok, $(grep -vc '^ok' "$TMP/read.ids") not)" \
    eval '[ -s "$TMP/read.ids" ] && ! grep -qv "^ok" "$TMP/read.ids"'
[ -s "$TMP/read.ids" ] && grep -v '^ok' "$TMP/read.ids" | head -3 | while read -r l; do pp_note "$l"; done
pp_pprof_shows "-tagfocus thread_state=read keeps span_wait" 'span_wait' -top -tagfocus thread_state=read "$TMP/wall.pb.gz"

# --- go tool pprof reads it
pp_pprof_shows "go tool pprof -top shows epoll_forever" 'epoll_forever' -top "$TMP/wall.pb.gz"
pp_pprof_shows "go tool pprof -tags shows thread_state" 'thread_state: Total' -tags "$TMP/wall.pb.gz"
pp_pprof_shows "-tagfocus thread_state=epoll_wait keeps epoll_forever" 'epoll_forever' \
    -top -tagfocus thread_state=epoll_wait "$TMP/wall.pb.gz"
out=$(pp_pprof -top -tagfocus thread_state=epoll_wait "$TMP/wall.pb.gz" 2>&1)
pp_check "-tagfocus thread_state=epoll_wait leaves compute_forever out" eval '! grep -q compute_forever <<<"$out"'

# --- the other views of the same time
pp_check "state=off-cpu has no running or runnable sample" \
    eval '! pp_pprof -tags "$TMP/off.pb.gz" 2>/dev/null | grep -qE ": (running|runnable)$"'
pp_check "state=off-cpu has epoll_wait samples" eval 'pp_pprof -tags "$TMP/off.pb.gz" 2>/dev/null | grep -q ": epoll_wait$"'
states=$(pp_pprof -tags "$TMP/on.pb.gz" 2>/dev/null | sed -n '/thread_state:/,/^$/p' | grep '): ' | awk '{ print $NF }' | sort | paste -sd, -)
pp_check "state=on-cpu has running and runnable samples only ($states)" \
    eval '[[ $states == running || $states == runnable,running ]]'
fgraw=$(pp_pprof -raw "$TMP/fg.pb.gz" 2>&1)
pp_check "fgprof's types are samples/count and time/nanoseconds, period type wallclock" \
    eval 'grep -q "^PeriodType: wallclock nanoseconds" <<<"$fgraw" && grep -q "^samples/count time/nanoseconds" <<<"$fgraw"'
fgroot=$(pp_pprof -raw "$TMP/fgroot.pb.gz" 2>&1)
pp_check "/debug/fgprof at the root answers in fgprof's types" \
    eval 'grep -q "^PeriodType: wallclock nanoseconds" <<<"$fgroot" && grep -q "^samples/count time/nanoseconds" <<<"$fgroot"'
pp_check "fgprof?format=folded is folded stacks with sample counts" \
    eval 'test -s "$TMP/fg.folded" && awk "NF < 2 || \$NF !~ /^[0-9]+\$/ { bad = 1 } END { exit bad }" "$TMP/fg.folded"'
fsum=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/w.folded")
fthreads=$(awk -v s="$fsum" 'BEGIN { printf "%.2f", s / (3 * 400) }')
pp_check "wall's format=folded sums to its window's samples ($fsum: $fthreads threads x 3 s x 400 Hz, a whole number within 2%)" \
    eval 'pp_in_range "$(awk -v x="$fthreads" "BEGIN { d = x - int(x + 0.5); print (d < 0 ? -d : d) * 100 / x }")" 0 2'
pp_stop "$PID"
pp_finish
