# lib.sh: helpers shared by the integration tests (sourced, never run).
#
#   pp_init BUILD_DIR        temp dir, HOME/GOCACHE/PPROF_TMPDIR for go tool
#                            pprof, and an EXIT trap that ends every process
#                            group started with pp_start and removes the dir
#   pp_start NAME CMD...     runs CMD in its own process group (stdout and
#                            stderr in $TMP/NAME.out / NAME.err); PID=its pid
#   pp_serve NAME CMD...     pp_start on a free port: "@PORT@" in CMD is
#                            replaced by the port; retries with another port
#                            if the program cannot listen; sets PORT and PID
#   pp_wait_line FILE RE S [PID]
#                            waits up to S seconds for a line matching RE
#   pp_wait_http URL S       waits up to S seconds until URL answers over HTTP
#   pp_serving_url NAME PID  the URL prefix NAME's LIBPPROF_PRINT_ADDR line names
#   pp_pprof ARGS...         go tool pprof with a time limit
#   pp_ticks PID [RE [NOT]]  CPU ticks of PID's threads named RE, not NOT
#   pp_top_ms FILE           a CPU profile's total and "not sampled" ms
#   pp_pid_ms FILE PID       a tree's CPU profile's ms for one pid
#   pp_check_rests LABEL PID libpprof's threads in PID use under 1% of a
#                            core over 2 s
#   pp_ok / pp_bad / pp_check / pp_skip / pp_note / pp_finish
#                            count checks; pp_finish prints "N passed, M
#                            failed" as the last line and exits non-zero on
#                            any failure
#
# Every address is 127.0.0.1; every curl call should carry --max-time.

PP_PASS=0
PP_FAIL=0
PP_GROUPS=()

pp_init() {
    if [ $# -lt 1 ] || [ ! -d "$1" ]; then
        echo "usage: $0 BUILD_DIR" >&2
        echo "0 passed, 1 failed"
        exit 2
    fi
    BUILD=$(cd "$1" && pwd)
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/pprof-it.XXXXXX")
    export HOME=$TMP/home
    export GOCACHE=$TMP/home/gocache
    export PPROF_TMPDIR=$TMP/home/pprof
    export GOFLAGS='' GOTOOLCHAIN=local
    unset PPROF_BINARY_PATH LIBPPROF_ADDR LIBPPROF_CPU_HZ LD_PRELOAD
    mkdir -p "$HOME" "$GOCACHE" "$PPROF_TMPDIR"
    trap pp_cleanup EXIT
    trap 'exit 130' INT TERM HUP
}

# Ends the process groups this test started (politely, then by force) and
# removes the temp dir. Prints nothing: the summary stays the last line.
pp_cleanup() {
    local g t
    for g in "${PP_GROUPS[@]}"; do
        kill -TERM -- "-$g" 2>/dev/null
    done
    for g in "${PP_GROUPS[@]}"; do
        for t in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
            kill -0 -- "-$g" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$g" 2>/dev/null
    done
    { wait; } 2>/dev/null
    [ -n "${TMP:-}" ] && rm -rf "$TMP"
}

pp_ok() {
    PP_PASS=$((PP_PASS + 1))
    echo "ok   - $1"
}

# pp_bad MESSAGE [DETAIL...]: a failed check; details are printed indented.
pp_bad() {
    PP_FAIL=$((PP_FAIL + 1))
    echo "FAIL - $1"
    shift
    local d
    for d in "$@"; do
        printf '%s\n' "$d" | head -n 40 | sed 's/^/       | /'
    done
}

# pp_check MESSAGE CMD...: passes when CMD succeeds.
pp_check() {
    local msg=$1
    shift
    if "$@"; then pp_ok "$msg"; else pp_bad "$msg"; fi
}

# pp_skip MESSAGE: a part that cannot run here (a package is missing); it
# neither passes nor fails.
pp_skip() {
    echo "skip - $1"
}

# pp_note MESSAGE: a figure the test reports without asserting it.
pp_note() {
    echo "note - $1"
}

# pp_give_up MESSAGE NAME [FILE...]: a helper NAME did not start: fails with
# its stderr (and FILEs) and ends the test.
pp_give_up() {
    local msg=$1 name=$2
    shift 2
    pp_bad "$msg" "$(cat "$TMP/$name.err" "$@" 2>/dev/null)"
    pp_finish
}

pp_finish() {
    echo "$PP_PASS passed, $PP_FAIL failed"
    [ "$PP_FAIL" -eq 0 ] && [ "$PP_PASS" -gt 0 ]
    exit $?
}

# pp_start NAME CMD...: starts CMD as the leader of a new process group, so
# that cleanup also reaches the children it forks.
pp_start() {
    local name=$1
    shift
    setsid "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null &
    PID=$!
    PP_GROUPS+=("$PID")
}

# pp_stop PID: SIGTERM, wait up to 5 s, then SIGKILL; returns the exit status
# (or 137 when it had to be killed).
pp_stop() {
    local pid=$1 t
    kill -TERM "$pid" 2>/dev/null
    for t in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL -- "-$pid" 2>/dev/null
        { wait "$pid"; } 2>/dev/null
        return 137
    fi
    { wait "$pid"; } 2>/dev/null
}

pp_alive() {
    kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# pp_wait_gone PID TRIES STEP: waits until PID has ended (or is a zombie),
# looking TRIES times, STEP seconds apart; fails when it is still there.
pp_wait_gone() {
    local i
    for i in $(seq "$2"); do
        pp_alive "$1" || return 0
        sleep "$3"
    done
    ! pp_alive "$1"
}

# A TCP port on 127.0.0.1 with no listener: one the kernel chooses by binding
# port 0 (then closed; pp_serve tries again should another take it meanwhile),
# else a random one outside the ephemeral range.
pp_free_port() {
    local p i
    # the kernel's choice: a port nothing listens on nor connects from now
    if [ -x /usr/bin/python3 ] && p=$(/usr/bin/python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' 2>/dev/null) && [ -n "$p" ]; then
        echo "$p"
        return 0
    fi
    for i in $(seq 200); do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# pp_wait_http URL SECONDS [PID]: 0 once URL answers any HTTP status.
pp_wait_http() {
    local url=$1 limit=$2 pid=${3:-} end code
    end=$((SECONDS + limit))
    while [ $SECONDS -le $end ]; do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" 2>/dev/null)
        [ -n "$code" ] && [ "$code" != 000 ] && return 0
        [ -n "$pid" ] && ! pp_alive "$pid" && return 1
        sleep 0.05
    done
    return 1
}

# pp_serve NAME CMD...: see the top of the file. The command is expected to
# serve /debug/pprof/ on 127.0.0.1:@PORT@.
pp_serve() {
    local name=$1 attempt a args
    shift
    for attempt in 1 2 3; do
        PORT=$(pp_free_port) || return 1
        args=()
        for a in "$@"; do args+=("${a//@PORT@/$PORT}"); done
        pp_start "$name" "${args[@]}"
        if pp_wait_http "http://127.0.0.1:$PORT/debug/pprof/cmdline" 10 "$PID"; then
            return 0
        fi
        pp_stop "$PID" >/dev/null 2>&1
    done
    return 1
}

# pp_wait_line FILE REGEX SECONDS [PID]: prints the first matching line;
# gives up early when PID has exited.
pp_wait_line() {
    local file=$1 re=$2 limit=$3 pid=${4:-} end
    end=$((SECONDS + limit))
    while [ $SECONDS -le $end ]; do
        if grep -m1 -E "$re" "$file" 2>/dev/null; then
            return 0
        fi
        if [ -n "$pid" ] && ! pp_alive "$pid"; then
            grep -m1 -E "$re" "$file" 2>/dev/null
            return
        fi
        sleep 0.05
    done
    return 1
}

# pp_start_helper NAME CMD...: starts a helper that prints "port=N" once it
# serves (its address defaults to 127.0.0.1:0); sets PID and PORT.
pp_start_helper() {
    local name=$1 line
    shift
    pp_start "$name" "$@"
    line=$(pp_wait_line "$TMP/$name.out" '^port=[0-9]+$' 10 "$PID") || return 1
    PORT=${line#port=}
    pp_wait_http "http://127.0.0.1:$PORT/debug/pprof/cmdline" 10 "$PID"
}

# pp_serving_url NAME PID: the URL prefix (…/debug/pprof) that the
# LIBPPROF_PRINT_ADDR=1 line in $TMP/NAME.err names; gives up without one.
pp_serving_url() {
    local line
    line=$(pp_wait_line "$TMP/$1.err" 'serving' 10 "$2") || pp_give_up "$1: no serving line"
    echo "http://127.0.0.1:$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' <<<"$line" | head -1)/debug/pprof"
}

# pp_each_allocator FN: runs FN NAME LIBRARY for Debian's jemalloc and
# tcmalloc (the heap tests run over each; scripts/deps.sh installs them).
pp_each_allocator() {
    local a
    for a in jemalloc:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 tcmalloc:/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
        if [ -e "${a#*:}" ]; then
            "$1" "${a%%:*}" "${a#*:}"
        else
            pp_bad "${a#*:} is missing (scripts/deps.sh installs it)"
        fi
    done
}

pp_pprof() {
    timeout 120 go tool pprof "$@"
}

# pp_pprof_shows MESSAGE PATTERN ARGS...: a check that `go tool pprof
# ARGS` prints a line matching the extended regular expression PATTERN
# (its output is shown when not).
pp_pprof_shows() {
    local msg=$1 pat=$2 out
    shift 2
    out=$(pp_pprof "$@" 2>&1)
    if grep -qE -- "$pat" <<<"$out"; then pp_ok "$msg"; else pp_bad "$msg" "$out"; fi
}

# pp_header FILE NAME: the value of header NAME in a curl -D dump (last
# response), without the trailing CR.
pp_header() {
    tr -d '\r' <"$1" | awk -v n="$(echo "$2" | tr 'A-Z' 'a-z')" '
        /^HTTP\// { delete h }
        { i = index($0, ":"); if (i > 0) { k = tolower(substr($0, 1, i - 1)); v = substr($0, i + 1); sub(/^[ \t]+/, "", v); h[k] = v } }
        END { if (n in h) print h[n] }'
}

# pp_status FILE: the status code of the last response in a curl -D dump.
pp_status() {
    tr -d '\r' <"$1" | awk '/^HTTP\// { s = $2 } END { print s }'
}

# pp_in_range X LO HI: LO <= X <= HI for decimal numbers.
pp_in_range() {
    awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x + 0 >= lo + 0 && x + 0 <= hi + 0) }'
}

# within PERCENT VALUE TRUTH: VALUE is within PERCENT% of TRUTH (> 0).
within() {
    awk -v p="$1" -v v="$2" -v t="$3" 'BEGIN { exit !(t > 0 && v >= t * (1 - p / 100) && v <= t * (1 + p / 100)) }'
}

# pp_ticks PID [RE [NOT]]: the CPU ticks (user + system) of the threads of
# PID whose name matches the extended regex RE (every thread when empty)
# and not NOT. Libpprof's threads: pp_ticks PID "$PP_OWN_THREADS".
PP_OWN_THREADS='^(pprof-|MHD-)'
pp_ticks() {
    local t c sum=0
    for t in /proc/"$1"/task/*; do
        c=$(cat "$t/comm" 2>/dev/null) || continue
        [[ -z "${2:-}" || "$c" =~ $2 ]] || continue
        [[ -n "${3:-}" && "$c" =~ $3 ]] && continue
        sum=$((sum + $(awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null || echo 0)))
    done
    echo "$sum"
}

# pp_cpu_window PID SECONDS BASE: BASE/profile?seconds=SECONDS into
# $TMP/cpu.pb.gz (its HTTP code in $TMP/cpu.code), with PID's CPU ticks
# read at the window's ends, one a line, in $TMP/ticks: the process's own
# count (so its threads that ended count too), less those of libpprof's
# threads (listed before the window: one read of each file at each end).
pp_cpu_window() {
    pp_cpu_windows "$2" "$3" "$1"
    mv "$TMP/ticks.$1" "$TMP/ticks"
}

# pp_cpu_windows SECONDS BASE PID...: pp_cpu_window for several processes
# over one window, each PID's ticks in $TMP/ticks.PID.
pp_cpu_windows() {
    local s=$1 base=$2 p cpu own=()
    shift 2
    for p in "$@"; do
        own[p]=$(for t in /proc/"$p"/task/*; do [[ "$(cat "$t/comm" 2>/dev/null)" =~ $PP_OWN_THREADS ]] && echo "$t/stat"; done)
    done
    curl -sS --max-time 20 -o "$TMP/cpu.pb.gz" -w '%{http_code}' "$base/profile?seconds=$s" >"$TMP/cpu.code" &
    cpu=$!
    # shellcheck disable=SC2086 # one word per thread
    for p in "$@"; do pp_ticks_less "$p" ${own[p]} >"$TMP/ticks.$p"; done
    sleep "$s"
    # shellcheck disable=SC2086
    for p in "$@"; do pp_ticks_less "$p" ${own[p]} >>"$TMP/ticks.$p"; done
    wait $cpu
}

# pp_check_coverage WHAT PID SECONDS BASE: a check that a SECONDS CPU
# profile of BASE (pp_cpu_window: $TMP/cpu.pb.gz) covers 90% to 110% of
# PID's CPU from /proc over the window, which is over 300 ms.
pp_check_coverage() {
    local t0 t1 total proc
    pp_cpu_window "$2" "$3" "$4"
    read -r t0 t1 < <(paste -sd' ' "$TMP/ticks")
    read -r total _ < <(pp_top_ms "$TMP/cpu.pb.gz")
    total=${total:-0}
    proc=$((((${t1:-0} - ${t0:-0}) * 1000) / $(getconf CLK_TCK)))
    pp_check "a $3 s CPU profile $1 covers the CPU from /proc: $total of $proc ms (90% to 110%)" \
        sh -c "[ $proc -gt 300 ] && [ $((total * 100)) -ge $((proc * 90)) ] && [ $((total * 100)) -le $((proc * 110)) ]"
}

# pp_every_kind BASE: asks BASE for every kind of profile, one after the
# other (1 s windows); prints " KIND:CODE" for each.
pp_every_kind() {
    local k
    for k in "profile?seconds=1" "wall?seconds=1" heap allocs goroutine "goroutine?debug=2" mutex block \
        threadcreate memory; do
        printf ' %s:%s' "$k" "$(curl -sS --max-time 15 -o /dev/null -w '%{http_code}' "$1/$k")"
    done
}

# pp_ticks_less PID [STAT...]: PID's CPU ticks by its own count, less
# those of the thread stat files given.
pp_ticks_less() {
    local pid=$1
    shift
    cat "/proc/$pid/stat" "$@" 2>/dev/null | awk 'NR == 1 { s = $14 + $15; next } { s -= $14 + $15 } END { print s }'
}

# pp_web_backend DIR: a loopback web server (python3's http.server,
# pp_start's helper "backend") serving DIR/www, which holds an index.html
# of 2.7 kB; its port in BPORT.
pp_web_backend() {
    mkdir -p "$1/www"
    chmod 755 "$TMP" "$1" "$1/www"
    head -c 2000 /dev/urandom | base64 >"$1/www/index.html"
    BPORT=$(pp_free_port)
    pp_start backend python3 -m http.server "$BPORT" --bind 127.0.0.1 --directory "$1/www"
}

# pp_top_ms FILE: "TOTAL NOT_SAMPLED", the CPU profile's samples and its
# "not sampled" frames' flat time, in milliseconds.
pp_top_ms() {
    pp_pprof -top -unit=ms -sample_index=cpu "$1" 2>&1 | awk '
        /Total samples = / { v = $0; sub(/.*Total samples = /, "", v); n = v + 0; if (v ~ /^[0-9.]+s/) n *= 1000; total = n }
        /not sampled/ { f = $4; sub(/ms$/, "", f); ns += f }
        END { printf "%d %d\n", total, ns }'
}

# pp_pid_ms FILE PID: the milliseconds of a tree's CPU profile whose pid
# label is PID, libpprof's own work (pprof.work) left out.
pp_pid_ms() {
    pp_pprof -traces "$1" 2>/dev/null | awk -v pid="$2" '
        /^-----------\+/ { p = ""; w = 0; v = 0; next }
        /^ *pid: / { p = $2; next }
        /^ *pprof.work: / { w = 1; next }
        !v && /^ +[0-9.]+(ms|s|us) / {
            x = $1; u = x; sub(/[a-z]+$/, "", x); sub(/^[0-9.]+/, "", u)
            x = u == "s" ? x * 1000 : u == "us" ? x / 1000 : x
            if (p == pid && !w) sum += x
            v = 1
        }
        END { printf "%d\n", sum }'
}

# pp_check_rests LABEL PID: a check that libpprof's threads in PID use
# under 1% of a core over the next 2 s.
pp_check_rests() {
    local hz c0 c1
    hz=$(getconf CLK_TCK)
    c0=$(pp_ticks "$2" "$PP_OWN_THREADS")
    sleep 2
    c1=$(pp_ticks "$2" "$PP_OWN_THREADS")
    pp_check "$1 ($((c1 - c0)) ticks of $hz/s in 2 s, under 1%)" test $(((c1 - c0) * 100)) -lt $((hz * 2))
}
