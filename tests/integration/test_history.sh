#!/usr/bin/env bash
# test_history.sh: the CPU history (LIBPPROF_HISTORY): profile?last=N and
# profile?from=T1&until=T2 after the fact
# (test-labels: plain-only slow)
#
# prog_burst under LD_PRELOAD with LIBPPROF_HISTORY=120 (the history at
# its default 19 Hz) sleeps 3 s, computes in burst_spin() for 5 s of wall
# time on its main thread (printing the burst's Unix start and end and the
# thread's CPU time over it, CLOCK_THREAD_CPUTIME_ID), then sleeps. While it
# computes, profile?seconds=2 answers 200 with burst_spin in it, sampled
# at 100 Hz (a usual profile beside the history: its samples/count over
# cpu/nanoseconds says the rate). 15 s after the burst (three 5-second slices
# in the past):
#   profile?last=60, from=(burst start - 1)&until=(burst end + 1), and
#     until=(burst end + 1) alone: burst_spin's CPU (go tool pprof -top,
#     cum) within 5% of the program's own count;
#   from=(burst end + 11) (until omitted: now) and last=5: no burst_spin
#     (under 1% of its CPU), the first slice they can include beginning
#     5 s or more after the burst; last=5 is asked half a second (less the
#     fraction of a second the slices begin at: the program is started
#     just after a whole second) after a slice's end + 5 s, so that the
#     profile must start at that end and not a slice earlier;
#   from=(burst start - 1)&until=4102444800 (2100, past 32 bits): 200 with
#     burst_spin within 5%;
#   each profile's time_nanos and duration_nanos (read from the proto): the
#     span covers what was asked and at most one 5-second slice more at
#     each end that is not now (0.5 s of margin), ends within 1 s of the
#     request when it reaches now, and starts within 1 s of the program's
#     start when the history is younger than asked; its comments say
#     "history:"; last=60 answers within 3 s;
#   last=0, last=-1, last=abc, last=1.5, from=5&until=3, from=-1,
#     last=10&seconds=5, last=10&from=1, last=10&until=5,
#     allocs?last=10&debug=1: 400 with one line of text/plain; with
#     LIBPPROF_HISTORY unset (a second program) last=10 (profile and
#     allocs) is a 404 whose one line names LIBPPROF_HISTORY;
#   allocs?last=60 (LIBPPROF_HEAP_RATE=4096): burst_alloc's alloc_space
#     within 5% of the program's count, its inuse_space (the live heap at
#     the end, once) within 10%; allocs?from=(burst end + 11): its
#     alloc_space under 1%, its inuse_space within 10%; a third program
#     with LIBPPROF_HISTORY=10, asked 20 s after its allocations: none
#     allocated, the live heap within 10% (its slices left the history,
#     their live blocks went into its base); mutex?last=60 and
#     block?last=60: 200 with a "history:" comment;
#   40 requests of last=1 in a row leave what is kept as it was: last=60
#     after them still starts at the program's start, burst_spin within 5%;
#   last=2000000000 (further back than 1970): the whole history, burst_spin
#     within 5%; last=2147483648 (past 32 bits): that or a 400, not an
#     empty profile;
#   libpprof's threads in the idle program use under 1% of a core over
#     the 13 s or more it idles after its burst;
#   the index has a "History" row with a memory figure and a link to
#     profile?last=60.
# The memory bound: prog_burst stacks (one thread walking 2^30 distinct
# stacks) with LIBPPROF_HISTORY_MB=1 and LIBPPROF_HISTORY=120 at
# LIBPPROF_HISTORY_HZ=1000,
# while prog_burst idles, until the index's History row counts a slice
# dropped early for the bound (at most 30 s): the memory the row reports,
# read every second, stays within 1 MiB, and profile?last=60 then covers
# at least a slice less than the program's age.
#
# Why 5% holds at 19 Hz: the check is burst_spin within 5% of the thread's
# CPU time, and chance must fail it less than once in 1,000 runs. Were the
# samples independent (a Poisson count), 5 s of CPU at 19 Hz would be 95
# samples, sd 10%: it would fail one run in two. But each signal weighs
# the thread's own CPU time since the previous one (samples.c), and the
# burst is all the main thread computes: the count is exact but for the
# burst's two edges, a period (53 ms) each at most, 2% of 5 s in all.
# Usage: test_history.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
unset LIBPPROF_HISTORY LIBPPROF_HISTORY_MB LIBPPROF_HISTORY_SPAN_MS

LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_burst
IDLE=3      # seconds before the burst
BURST=5     # the burst's wall time
AFTER=15    # seconds after the burst before the history is asked
HZ=19       # LIBPPROF_HISTORY_HZ's default
SLICE=5     # the history's slice
M=0.5       # margin on slice edges, in seconds

[ -x "$PROG" ] || pp_give_up "no $PROG (build the tree)" none

# fetch NAME QUERY: $URL/$EP?QUERY (EP: profile unless set) into $TMP/NAME.pb.gz (headers in
# NAME.hdr); sets CODE, TT (seconds the answer took), TB and TA (Unix
# time before and after the request, decimals)
fetch() {
    local out
    TB=$(date +%s.%N)
    out=$(curl -sS --max-time 30 -D "$TMP/$1.hdr" -o "$TMP/$1.pb.gz" -w '%{http_code} %{time_total}' \
        "$URL/${EP:-profile}?$2" 2>&1)
    TA=$(date +%s.%N)
    CODE=${out%% *}
    TT=${out##* }
}

# alloc_b FILE INDEX: burst_alloc's cumulative INDEX (alloc_space,
# inuse_space) in the profile, in bytes
alloc_b() {
    pp_pprof -top -symbolize=none -unit=B -sample_index="$2" -nodecount=1000 "$1" 2>/dev/null |
        awk '$6 == "burst_alloc" { v = $4; sub(/B$/, "", v); s += v } END { printf "%d\n", s }'
}

# spin_ms FILE [INDEX]: burst_spin's cumulative CPU in the profile, in ms
# (INDEX samples: its samples; 0: absent)
spin_ms() {
    pp_pprof -top -symbolize=none -unit=ms -sample_index="${2:-cpu}" -nodecount=1000 "$1" 2>/dev/null |
        awk '$6 == "burst_spin" { v = $4; sub(/ms$/, "", v); s += v } END { printf "%d\n", s }'
}

# span FILE: "TIME DURATION", the profile's time_nanos and duration_nanos
# in seconds (fields 9 and 10 of the Profile message), "x x" if unreadable
span() {
    /usr/bin/python3 - "$1" <<'PY' 2>/dev/null || echo "x x"
import gzip, sys
d = gzip.open(sys.argv[1]).read()
i = 0
def varint():
    global i
    r = s = 0
    while True:
        b = d[i]; i += 1
        r |= (b & 0x7f) << s; s += 7
        if b < 0x80:
            return r
f9 = f10 = 0  # proto3 leaves zeros out
while i < len(d):
    k = varint(); f, w = k >> 3, k & 7
    if w == 0:
        v = varint()
        if f == 9: f9 = v
        elif f == 10: f10 = v
    elif w == 2:
        n = varint()  # before i is read: not i += varint()
        i += n
    elif w == 1: i += 8
    elif w == 5: i += 4
    else: raise SystemExit(1)
print("%.3f %.3f" % (f9 / 1e9, f10 / 1e9))
PY
}

# history_row: the text of the index's "History" row (tags dropped)
history_row() {
    curl -sS --max-time 10 "$URL/" 2>/dev/null | tr -d '\n' | grep -oE '<td>History</td><td>.*' |
        sed -e 's|</tr>.*||' -e 's|<[^>]*>| |g' -e 's/  */ /g' -e 's/^ //' -e 's/ $//'
}

# row_mib ROW: the memory the row reports, in MiB: the first figure
# followed by a unit of bytes
row_mib() {
    grep -oE '[0-9]+(\.[0-9]+)? ?(bytes|B|KiB|MiB|GiB)\b' <<<"$1" | head -1 |
        awk '{ v = $0 + 0; u = $0; sub(/^[0-9.]+ ?/, "", u)
               if (u == "KiB") v /= 1024; else if (u == "GiB") v *= 1024; else if (u == "bytes" || u == "B") v /= 1048576
               printf "%.3f\n", v }'
}

# comments_say FILE: one of the profile's comments says "history:"
comments_say() {
    pp_pprof -comments "$1" 2>/dev/null | grep -q 'history:'
}

# proc_start PID: the Unix time PID started (decimals)
proc_start() {
    awk -v b="$(awk '$1 == "btime" { print $2 }' /proc/stat)" -v hz="$(getconf CLK_TCK)" \
        '{ sub(/.*\) /, ""); printf "%.2f\n", b + $20 / hz }' "/proc/$1/stat"
}

# le A B: A <= B (decimals); calc EXPR: EXPR to 3 decimals
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a != "x" && a + 0 <= b + 0) }'; }
calc() { awk "BEGIN { printf \"%.3f\n\", $1 }"; }

# check_span LABEL FILE FIRST_LO FIRST_HI END_LO END_HI: the profile
# starts (time_nanos) in [FIRST_LO, FIRST_HI] and ends (time_nanos +
# duration_nanos) in [END_LO, END_HI], all Unix seconds
check_span() {
    local label=$1 f=$2 t d e
    read -r t d <<<"$(span "$f")"
    e=$(calc "${t/x/0} + ${d/x/0}")
    if [ "$t" != x ] && le "$3" "$t" && le "$t" "$4" && le "$5" "$e" && le "$e" "$6"; then
        pp_ok "$label: time_nanos $(calc "$t - $START") s after the start, duration $d s, ending $(calc "$e - $START") s after the start (want start in $(calc "$3 - $START")..$(calc "$4 - $START"), end in $(calc "$5 - $START")..$(calc "$6 - $START"))"
    else
        pp_bad "$label: time_nanos $t, duration_nanos $d (s): want the start in [$3, $4], the end in [$5, $6]" \
            "process start $START, burst $BS..$BE"
    fi
    DUR=$d
}

# check_spin LABEL FILE: burst_spin within 5% of the burst's CPU time
check_spin() {
    local ms
    ms=$(spin_ms "$2")
    pp_note "$1: burst_spin $ms ms, the program counted $CPU_MS ms ($(calc "($ms - $CPU_MS) * 100 / $CPU_MS")%)"
    pp_check "$1: burst_spin's $ms ms within 5% of the program's $CPU_MS ms" within 5 "$ms" "$CPU_MS"
}

# check_no_spin LABEL FILE: burst_spin under 1% of the burst's CPU time
check_no_spin() {
    local ms
    ms=$(spin_ms "$2")
    pp_check "$1: burst_spin $ms ms, under 1% of its $CPU_MS ms" le "$ms" "$(calc "$CPU_MS / 100")"
}

# ---- the program with the burst, and one without the history. It starts
# just after a whole second, so that its slices begin early in a second
# (last=5 below is timed by them).
sleep "$(date +%s.%N | awk '{ f = $1 - int($1); printf "%.3f\n", f < 0.05 ? 0.05 - f : 1.05 - f }')"
pp_serve burst env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HISTORY=120 LIBPPROF_HEAP_RATE=4096 \
    "$PROG" burst $IDLE $BURST || pp_give_up "prog_burst did not serve" burst
BPID=$PID
URL=http://127.0.0.1:$PORT/debug/pprof
line=$(pp_wait_line "$TMP/burst.out" '^start=' 10 "$BPID") || pp_give_up "prog_burst printed no start" burst
START=${line#start=}
pp_ok "prog_burst serves on $PORT with LIBPPROF_HISTORY=120"

pp_serve off env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ "$PROG" burst 3600 0 ||
    pp_give_up "prog_burst without the history did not serve" off
OFF_URL=http://127.0.0.1:$PORT/debug/pprof
# a history of 10 s whose allocations will have left it when asked
pp_serve short env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HISTORY=10 LIBPPROF_HEAP_RATE=4096 \
    "$PROG" burst 0 1 || pp_give_up "prog_burst with a 10 s history did not serve" short
SHORT_URL=http://127.0.0.1:$PORT/debug/pprof

# ---- bad input, while prog_burst waits for its burst
# bad NAME QUERY CODE [WORD]: a CODE with one line of text/plain (naming WORD)
bad() {
    local name=$1 q=$2 want=$3 word=${4:-} code body ctype
    code=$(curl -sS --max-time 10 -D "$TMP/$name.hdr" -o "$TMP/$name.body" -w '%{http_code}' "$URL/${EP:-profile}?$q" 2>&1)
    body=$(cat "$TMP/$name.body")
    ctype=$(pp_header "$TMP/$name.hdr" Content-Type)
    if [ "$code" = "$want" ] && [ "$(grep -c '' "$TMP/$name.body")" = 1 ] && [ -n "$body" ] &&
        [[ "$ctype" == text/plain* ]] && { [ -z "$word" ] || grep -q "$word" <<<"$body"; }; then
        pp_ok "$q: $code, one line of $ctype: $body"
    else
        pp_bad "$q: want $want with one line of text/plain${word:+ naming $word} (got $code, $ctype, $(grep -c '' "$TMP/$name.body") lines)" \
            "$(head -c 600 "$TMP/$name.body")"
    fi
}
n=0
for q in last=0 last=-1 last=abc last=1.5 'from=5&until=3' from=-1 'last=10&seconds=5' 'last=10&from=1' \
    'last=10&until=5'; do
    n=$((n + 1))
    bad "bad$n" "$q" 400
done
EP=allocs bad alloc_debug "last=10&debug=1" 400 debug
u=$URL
URL=$OFF_URL
bad off "last=10" 404 LIBPPROF_HISTORY
bad off2 "from=1" 404 LIBPPROF_HISTORY
EP=allocs bad off3 "last=10" 404 LIBPPROF_HISTORY
URL=$u

# ---- the burst, and profile?seconds=2 while it runs
line=$(pp_wait_line "$TMP/burst.out" '^burst_start=' $((IDLE + 10)) "$BPID") ||
    pp_give_up "prog_burst did not begin its burst" burst "$TMP/burst.out"
BS=${line#burst_start=}
sleep 0.5
(fetch during "seconds=2" && echo "$CODE $TT" >"$TMP/during.code") &
during=$!
line=$(pp_wait_line "$TMP/burst.out" '^done$' $((BURST + 10)) "$BPID") ||
    pp_give_up "prog_burst did not end its burst" burst "$TMP/burst.out"
BE=$(sed -n 's/^burst_end=//p' "$TMP/burst.out")
CPU_MS=$(($(sed -n 's/^burst_cpu_ns=//p' "$TMP/burst.out") / 1000000))
pp_note "burst: $(calc "$BS - $START") s to $(calc "$BE - $START") s after the start, $CPU_MS ms of CPU in $(calc "$BE - $BS") s"
wait $during
read -r code _ <"$TMP/during.code" 2>/dev/null
ms=$(spin_ms "$TMP/during.pb.gz")
n=$(spin_ms "$TMP/during.pb.gz" samples)
pp_note "profile?seconds=2 during the burst: burst_spin $ms ms in $n samples"
# at its own 100 Hz, not the history's 19: 10 ms a sample (a period at each edge more)
if [ "$code" = 200 ] && pp_in_range "$ms" 500 2100 && pp_in_range "$((n * 10))" "$((ms - 30))" "$((ms + 30))"; then
    pp_ok "profile?seconds=2 beside the history: 200, burst_spin $ms ms of its 2 s in $n samples (100 Hz)"
else
    pp_bad "profile?seconds=2 beside the history: want 200, burst_spin 500..2100 ms at 100 Hz (code '$code', $ms ms, $n samples)" \
        "$(pp_pprof -top -symbolize=none "$TMP/during.pb.gz" 2>&1 | head -15)"
fi

# libpprof's own threads in prog_burst from here to the history's requests,
# the program idle (a window of 13 s or more: 10 ms ticks are too coarse for
# lib.sh's 2 s)
idle_t0=$(date +%s.%N)
idle_c0=$(pp_ticks "$BPID" "$PP_OWN_THREADS")

# ---- the memory bound, while prog_burst idles after its burst: one
# thread at 1000 Hz (LIBPPROF_HISTORY_HZ) through 2^30 stacks fills a slice with about 0.5 to
# 0.8 MiB, so LIBPPROF_HISTORY_MB=1 holds one or two; read the row every
# second until it says a slice was dropped early and 3 s more (at most 30 s)
pp_serve stacks env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HISTORY=120 LIBPPROF_HISTORY_MB=1 \
    LIBPPROF_HISTORY_HZ=1000 "$PROG" stacks 1 || pp_give_up "prog_burst stacks did not serve" stacks
SPID=$PID
u=$URL
URL=http://127.0.0.1:$PORT/debug/pprof
s0=$SECONDS
maxmib=0
rows=()
early=0
seen=
while [ $((SECONDS - s0)) -lt 30 ]; do
    sleep 1
    r=$(history_row)
    rows+=("$((SECONDS - s0)) s: $r")
    mib=$(row_mib "$r")
    [ -n "$mib" ] && ! le "$mib" "$maxmib" && maxmib=$mib
    early=$(grep -oE '[0-9]+ slices? dropped early' <<<"$r" | grep -oE '^[0-9]+')
    [ "${early:-0}" -gt 0 ] && [ -z "$seen" ] && seen=$SECONDS
    [ -n "$seen" ] && [ $((SECONDS - seen)) -ge 3 ] && break
done
pp_note "stacks, LIBPPROF_HISTORY_MB=1, after $((SECONDS - s0)) s: ${r:-no History row}"
pp_check "stacks: slices dropped early for LIBPPROF_HISTORY_MB=1 (${early:-none})" test "${early:-0}" -gt 0
if [ -n "$(row_mib "$r")" ] && le "$maxmib" 1; then
    pp_ok "stacks: the History row's memory at most $maxmib MiB over $((SECONDS - s0)) s, within LIBPPROF_HISTORY_MB=1"
else
    pp_bad "stacks: the History row's memory went to ${maxmib} MiB (want at most 1 MiB)" "${rows[@]}"
fi
age=$(calc "$(date +%s.%N) - $(proc_start "$SPID")")
fetch stacks "last=60"
read -r t d <<<"$(span "$TMP/stacks.pb.gz")"
pp_note "stacks: profile?last=60 covers $d s of the program's $age s"
if [ "$CODE" = 200 ] && [ "$d" != x ] && le "$d" "$(calc "$age - $SLICE + $M")"; then
    pp_ok "stacks: profile?last=60 covers $d s of the program's $age s: its oldest slices were dropped"
else
    pp_bad "stacks: profile?last=60 (code $CODE) covers '$d' s of $age s: want a slice or more dropped for the bound" \
        "${rows[@]}"
fi
pp_stop "$SPID" >/dev/null
URL=$u

# ---- the history, AFTER s past the burst
wait_until=$(calc "$BE + $AFTER")
while ! le "$wait_until" "$(date +%s.%N)"; do sleep 0.2; done
pp_check "prog_burst still runs" pp_alive "$BPID"
idle_c=$(($(pp_ticks "$BPID" "$PP_OWN_THREADS") - idle_c0))
idle_s=$(calc "$(date +%s.%N) - $idle_t0")
idle_pct=$(calc "$idle_c * 100 / $(getconf CLK_TCK) / $idle_s")
pp_note "prog_burst idle with the history at $HZ Hz: libpprof's threads $idle_c ticks in $idle_s s ($idle_pct% of a core)"
pp_check "prog_burst idle: libpprof's threads under 1% of a core ($idle_pct%)" le "$idle_pct" 1

fetch last60 "last=60"
pp_note "last=60: answered in $TT s"
pp_check "last=60: 200 within 3 s ($CODE, $TT s)" eval '[ "$CODE" = 200 ] && le "$TT" 3'
pp_check "last=60: Content-Type $(pp_header "$TMP/last60.hdr" Content-Type)" \
    test "$(pp_header "$TMP/last60.hdr" Content-Type)" = application/octet-stream
check_spin "last=60" "$TMP/last60.pb.gz"
# the history is younger than 60 s: it begins at the program's start
check_span "last=60" "$TMP/last60.pb.gz" "$(calc "$START - 1")" "$(calc "$START + 1")" \
    "$(calc "$TB - 1")" "$(calc "$TA + 1")"
pp_check "last=60: a comment says history:" comments_say "$TMP/last60.pb.gz"
pp_note "last=60: $(pp_pprof -comments "$TMP/last60.pb.gz" 2>/dev/null | grep 'history:' | head -1)"

F_IN=$(awk -v t="$BS" 'BEGIN { printf "%d\n", int(t) - 1 }')
U_IN=$(awk -v t="$BE" 'BEGIN { printf "%d\n", int(t) + 2 }')
fetch in "from=$F_IN&until=$U_IN"
pp_check "from=$F_IN&until=$U_IN (around the burst): 200 ($CODE)" test "$CODE" = 200
check_spin "from..until around the burst" "$TMP/in.pb.gz"
check_span "from..until around the burst" "$TMP/in.pb.gz" "$(calc "$F_IN - $SLICE - $M")" "$(calc "$F_IN + $M")" \
    "$(calc "$U_IN - $M")" "$(calc "$U_IN + $SLICE + $M")"
pp_check "from..until: a comment says history:" comments_say "$TMP/in.pb.gz"
pp_note "from..until: $(pp_pprof -comments "$TMP/in.pb.gz" 2>/dev/null | grep 'history:' | head -1)"

fetch until "until=$U_IN"
pp_check "until=$U_IN alone (from: as far back as kept): 200 ($CODE)" test "$CODE" = 200
check_spin "until alone" "$TMP/until.pb.gz"
check_span "until alone" "$TMP/until.pb.gz" "$(calc "$START - 1")" "$(calc "$START + 1")" \
    "$(calc "$U_IN - $M")" "$(calc "$U_IN + $SLICE + $M")"

F_OUT=$(awk -v t="$BE" 'BEGIN { printf "%d\n", int(t) + 11 }')
fetch out "from=$F_OUT"
pp_check "from=$F_OUT (10 s or more after the burst, until now): 200 ($CODE)" test "$CODE" = 200
check_no_spin "from=burst end + 11" "$TMP/out.pb.gz"
check_span "from=burst end + 11" "$TMP/out.pb.gz" "$(calc "$F_OUT - $SLICE - $M")" "$(calc "$F_OUT + $M")" \
    "$(calc "$TB - 1")" "$(calc "$TA + 1")"

# ---- allocations, mutex and block: burst_alloc allocated ALLOC_B bytes
# in 4 KiB blocks right after the burst and keeps LIVE_B of them live (at
# LIBPPROF_HEAP_RATE=4096, 50,000 samples, sd 0.5%, and 2,000, sd 2.2%):
# allocs?last=60 has both, the live heap once (the last slice's, not a
# sum of slices'); a span after it none of its allocations but its live
# blocks still
ALLOC_B=$(sed -n 's/^alloc_bytes=//p' "$TMP/burst.out")
LIVE_B=$(sed -n 's/^live_bytes=//p' "$TMP/burst.out")
for span_q in "last=60" "from=$F_OUT"; do
    EP=allocs fetch allocs "$span_q"
    a=$(alloc_b "$TMP/allocs.pb.gz" alloc_space)
    l=$(alloc_b "$TMP/allocs.pb.gz" inuse_space)
    pp_note "allocs?$span_q: burst_alloc alloc_space $a B (program: $ALLOC_B), inuse_space $l B (program: $LIVE_B)"
    if [ "$span_q" = last=60 ]; then
        pp_check "allocs?$span_q: 200, burst_alloc's alloc_space within 5% of $ALLOC_B B ($CODE, $a)" \
            eval '[ "$CODE" = 200 ] && within 5 "$a" "$ALLOC_B"'
    else
        pp_check "allocs?$span_q (after the allocations): 200, burst_alloc's alloc_space under 1% of $ALLOC_B B ($CODE, $a)" \
            eval '[ "$CODE" = 200 ] && le "$a" "$((ALLOC_B / 100))"'
    fi
    pp_check "allocs?$span_q: burst_alloc's inuse_space, the live heap at the end, within 10% of $LIVE_B B ($l)" \
        within 10 "$l" "$LIVE_B"
done
# the 10 s history, asked 20 s or more after its allocations: they have
# left it (alloc_space 0), their live blocks are in its base
u=$URL
URL=$SHORT_URL
EP=allocs fetch short last=60
URL=$u
a=$(alloc_b "$TMP/short.pb.gz" alloc_space)
l=$(alloc_b "$TMP/short.pb.gz" inuse_space)
pp_check "a 10 s history, 20 s after the allocations: 200, burst_alloc's alloc_space 0 ($CODE, $a), inuse_space within 10% of $LIVE_B B ($l)" \
    eval '[ "$CODE" = 200 ] && [ "$a" = 0 ] && within 10 "$l" "$LIVE_B"'
for ep in mutex block; do
    EP=$ep fetch "$ep" last=60
    pp_check "$ep?last=60: 200, a comment says history: ($CODE)" eval '[ "$CODE" = 200 ] && comments_say "$TMP/$ep.pb.gz"'
done

# last=5 asked at a moment T chosen by the slices' edges: a slice ends at
# B = S0 + 5k (S0: where the history begins, time_nanos of last=60), and
# T = B + 5 + (1 - f) / 2, f the fraction of a second in S0: the slice
# that ends at B ends (1 - f) / 2 s before T - 5, so it does not overlap
# [T - 5, T] and must not be in the profile (which then starts at B, 5.x s
# before T, and not at B - 5); asked at any moment, the check would be
# decided by chance. Whole seconds of T - 5 would take it in.
read -r s0 _ <<<"$(span "$TMP/last60.pb.gz")"
f=$(calc "$s0 - int($s0)")
if [ "$s0" != x ] && le "$f" 0.6; then
    T=$(awk -v s="$s0" -v f="$f" -v now="$(date +%s.%N)" \
        'BEGIN { t = s + 5 + (1 - f) / 2; while (t < now + 0.3) t += 5; printf "%.3f\n", t }')
    sleep "$(calc "$T - $(date +%s.%N)")"
    fetch last5 "last=5"
    pp_note "last=5 asked $(calc "$TB - $T") s after T = $(calc "$T - $START") s after the start (f = $f)"
    lo=$(calc "$TB - 5 - $SLICE - 0.1")
else
    pp_note "last=5 not timed: the history begins at $s0, late in its second"
    fetch last5 "last=5"
    lo=$(calc "$TB - 6 - $SLICE - $M")
fi
pp_check "last=5: 200 ($CODE)" test "$CODE" = 200
check_no_spin "last=5" "$TMP/last5.pb.gz"
check_span "last=5" "$TMP/last5.pb.gz" "$lo" "$(calc "$TA - 5 + 0.05")" "$(calc "$TB - 1")" "$(calc "$TA + 1")"
pp_check "last=5: a duration of 5 s or more ($DUR s)" le 4.99 "$DUR"

# until past 2038 (past 32 bits of Unix seconds): the slices up to now
fetch y2038 "from=$F_IN&until=4102444800"
pp_check "from=$F_IN&until=4102444800 (year 2100): 200 ($CODE$([ "$CODE" != 200 ] && echo ": $(head -c 200 "$TMP/y2038.pb.gz")"))" \
    test "$CODE" = 200
[ "$CODE" = 200 ] && check_spin "from..until=4102444800" "$TMP/y2038.pb.gz"

# A history asked for again and again: a request reads the open slice
# where it stands; were it to cut it instead, 40 of them (more than the 26
# slices LIBPPROF_HISTORY=120 makes room for) would push the burst out.
for _ in $(seq 40); do
    curl -sS --max-time 10 -o /dev/null "$URL/profile?last=1" 2>/dev/null
done
fetch again "last=60"
pp_check "after 40 requests of last=1: last=60 answers 200 ($CODE)" test "$CODE" = 200
check_spin "last=60 after 40 requests" "$TMP/again.pb.gz"
check_span "last=60 after 40 requests" "$TMP/again.pb.gz" "$(calc "$START - 1")" "$(calc "$START + 1")" \
    "$(calc "$TB - 1")" "$(calc "$TA + 1")"

# last= beyond what is kept: last=2000000000 (more seconds than since
# 1970, within 32 bits) is the whole history; past 32 bits, the whole
# history or a 400
fetch huge "last=2000000000"
ms=$(spin_ms "$TMP/huge.pb.gz")
if [ "$CODE" = 200 ] && within 5 "$ms" "$CPU_MS"; then
    pp_ok "last=2000000000: 200, the whole history (burst_spin $ms ms)"
else
    pp_bad "last=2000000000: want 200 and the whole history (burst_spin within 5% of $CPU_MS ms): $CODE, burst_spin $ms ms" \
        "$(head -c 300 "$TMP/huge.pb.gz" | tr -c '[:print:]\n' .)"
fi
fetch huge2 "last=2147483648"
ms=$(spin_ms "$TMP/huge2.pb.gz")
if { [ "$CODE" = 200 ] && within 5 "$ms" "$CPU_MS"; } || [ "$CODE" = 400 ]; then
    pp_ok "last=2147483648: $CODE$([ "$CODE" = 200 ] && echo ", the whole history (burst_spin $ms ms)")"
else
    pp_bad "last=2147483648: want the whole history (burst_spin within 5% of $CPU_MS ms) or a 400: $CODE, burst_spin $ms ms" \
        "$(head -c 300 "$TMP/huge2.pb.gz" | tr -c '[:print:]\n' .)"
fi

# ---- the index
page=$(curl -sS --max-time 10 "$URL/" 2>/dev/null)
r=$(history_row)
pp_note "the index's History row: ${r:-none}"
pp_check "the index has a History row with a memory figure ($(row_mib "$r") MiB)" test -n "$r" -a -n "$(row_mib "$r")"
pp_check "the History row names the rate, $HZ Hz" grep -q "\b$HZ Hz" <<<"$r"
pp_check "the index links profile?last=60" grep -q 'profile?last=60' <<<"$page"
r=$(curl -sS --max-time 10 "$OFF_URL/" 2>/dev/null | tr -d '\n' | grep -oE '<td>History</td><td>.*' |
    sed -e 's|</tr>.*||' -e 's|<[^>]*>| |g' -e 's/  */ /g' -e 's/^ //' -e 's/ $//')
pp_note "without LIBPPROF_HISTORY, the index's History row: ${r:-none}"

pp_finish
