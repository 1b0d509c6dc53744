#!/usr/bin/env bash
# test-labels: plain-only slow
# test_torture.sh: the torture test. prog_torture_linked profiles itself at
# 1000 Hz for TORTURE_SECONDS (30) while it loops over dlopen/dlclose, thread
# creation and exit, fork+exec, posix_spawn and C++ exceptions; meanwhile
# this script polls its /debug/pprof/ endpoint every half second (cmdline,
# the index) and every few seconds fetches profile?seconds=2, parses it
# with `go tool pprof -raw`, and then fetches in turn a thread dump, heap,
# mutex, block or threadcreate (the mutex and block profiles are on). Every poll must answer 200; the program must
# neither hang (watchdog: a hang is a failure, with all threads' backtraces
# printed when gdb is at hand) nor die of a signal (core dumps are enabled in
# the program's temporary directory: a crash prints the crashing thread's
# backtrace and the core is then deleted), and must end with "torture: ok"
# and status 0.
# Usage: test_torture.sh BUILD_DIR
set -u

build=${1:?usage: test_torture.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
prog=$build/tests/prog_torture_linked
secs=${TORTURE_SECONDS:-30}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pprof-torture.XXXXXX")
passed=0
failed=0
tpid=""
fetcher=""

pass() { passed=$((passed + 1)); echo "ok:   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

cleanup() {
    # Only what this script started, by pid.
    [ -n "$fetcher" ] && kill "$fetcher" 2>/dev/null
    [ -n "$tpid" ] && kill -KILL "$tpid" 2>/dev/null
    if [ "$failed" -eq 0 ]; then
        rm -rf "$tmp"
    else
        echo "(files kept in $tmp)"
    fi
}
trap cleanup EXIT

finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

if [ ! -x "$prog" ]; then
    fail "$prog is not built"
    finish
fi

# The plugin: the build's copy if there is one, else compiled here.
plugin=""
for p in "$build/tests/torture_plugin.so" "$build/tests/libtorture_plugin.so"; do
    [ -f "$p" ] && plugin=$p && break
done
if [ -z "$plugin" ]; then
    plugin=$tmp/torture_plugin.so
    if ! ${CC:-cc} -shared -fPIC -O1 -g -fexceptions -fno-omit-frame-pointer \
        -o "$plugin" "$here/torture_plugin.c"; then
        fail "cannot build torture_plugin.so"
        finish
    fi
fi

# go tool pprof keeps its state under a throwaway home.
export HOME=$tmp/home GOCACHE=$tmp/gocache PPROF_TMPDIR=$tmp/pprof
mkdir -p "$HOME" "$GOCACHE" "$PPROF_TMPDIR"
have_go=1
command -v go >/dev/null 2>&1 || have_go=0

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%d", (b - a) * 1000 }'; } # ms

# --- start the program under the watchdog
out=$tmp/out.txt err=$tmp/err.txt
(cd "$tmp" && ulimit -c unlimited 2>/dev/null
    LIBPPROF_MUTEX_FRACTION=5 LIBPPROF_BLOCK_RATE=100000 \
        exec timeout -s KILL $((secs + 60)) "$prog" 0 "$plugin" "$secs") >"$out" 2>"$err" &
tpid=$!
t0=$(now)

port=""
for _ in $(seq 1 100); do
    port=$(sed -n 's/^torture: serving on 127\.0\.0\.1:\([0-9]*\) (pid [0-9]*)$/\1/p' "$out")
    [ -n "$port" ] && break
    [ -e "/proc/$tpid" ] || break
    sleep 0.1
done
if [ -z "$port" ]; then
    fail "the program did not start serving"
    wait "$tpid"
    cat "$out" "$err"
    tpid=""
    finish
fi
pass "serving on 127.0.0.1:$port"
base=http://127.0.0.1:$port/debug/pprof
prog_pid=$(sed -n 's/^torture: serving on .* (pid \([0-9]*\))$/\1/p' "$out")

alive() { [ -n "$prog_pid" ] && [ -e "/proc/$prog_pid" ]; }

# The polls stop a little before the program's own end.
poll_ms=$(((secs - 1) * 1000))

# --- profile?seconds=2 every few seconds, parsed by go tool pprof (in the background)
fetch_profiles() {
    local n=0
    while [ "$(elapsed "$t0")" -lt $((poll_ms - 3000)) ] && alive; do
        n=$((n + 1))
        local f=$tmp/profile.$n.pb.gz
        local code took
        read -r code took < <(curl -sS --max-time 5 -o "$f" -w '%{http_code} %{time_total}\n' \
            "$base/profile?seconds=2" 2>>"$tmp/curl.err")
        if [ "$code" != 200 ]; then
            echo "FAIL profile #$n: HTTP ${code:-no answer}"
        elif [ "$have_go" -eq 1 ]; then
            if go tool pprof -raw "$f" >"$f.raw" 2>"$f.err" &&
                grep -q '^PeriodType: cpu nanoseconds' "$f.raw" &&
                grep -q '^Samples:' "$f.raw"; then
                echo "ok profile #$n: $(grep -cE '^ +[0-9]+ +[0-9]+:' "$f.raw") stacks in ${took}s"
            else
                echo "FAIL profile #$n: go tool pprof -raw: $(head -c 300 "$f.err")"
            fi
        else
            echo "ok profile #$n: 200 in ${took}s (go not installed, not parsed)"
        fi
        # between profiles (they share the symbolizer): one of the others
        local what=${others[$((n % ${#others[@]}))]}
        code=$(curl -sS --max-time 10 -o "$tmp/other" -w '%{http_code}' "$base/$what" 2>>"$tmp/curl.err")
        if [ "$code" = 200 ] && [ -s "$tmp/other" ]; then
            echo "ok other $what"
        else
            echo "FAIL other $what: HTTP ${code:-no answer}"
        fi
    done
}
others=("goroutine?debug=2" heap mutex block threadcreate "goroutine?debug=1")
fetch_profiles >"$tmp/profiles.txt" 2>&1 &
fetcher=$!

# --- cmdline and the index every half second (in the foreground)
want_cmdline=$(printf '%s\n' "$prog" 0 "$plugin" "$secs")
cmd_ok=0 cmd_bad=0 idx_ok=0 idx_bad=0
while [ "$(elapsed "$t0")" -lt "$poll_ms" ] && alive; do
    code=$(curl -sS --max-time 5 -o "$tmp/cmdline" -w '%{http_code}' "$base/cmdline" 2>>"$tmp/curl.err")
    if [ "$code" = 200 ] && [ "$(tr '\0' '\n' <"$tmp/cmdline")" = "$want_cmdline" ]; then
        cmd_ok=$((cmd_ok + 1))
    else
        cmd_bad=$((cmd_bad + 1))
        echo "  cmdline poll at $(elapsed "$t0") ms: HTTP ${code:-no answer}: $(tr '\0' ' ' <"$tmp/cmdline" 2>/dev/null | head -c 200)"
    fi
    code=$(curl -sS --max-time 5 -o "$tmp/index" -w '%{http_code}' "$base/" 2>>"$tmp/curl.err")
    if [ "$code" = 200 ] && grep -q 'profile' "$tmp/index"; then
        idx_ok=$((idx_ok + 1))
    else
        idx_bad=$((idx_bad + 1))
        echo "  index poll at $(elapsed "$t0") ms: HTTP ${code:-no answer}"
    fi
    sleep 0.5
done
wait "$fetcher"
fetcher=""
early=""
[ "$(elapsed "$t0")" -lt "$poll_ms" ] && early=" (the program ended early)"

if [ "$cmd_bad" -eq 0 ] && [ "$cmd_ok" -ge $((secs / 2)) ]; then
    pass "cmdline answered 200 with the program's argv on all $cmd_ok polls"
else
    fail "cmdline: $cmd_ok good polls, $cmd_bad bad$early"
fi
if [ "$idx_bad" -eq 0 ] && [ "$idx_ok" -ge $((secs / 2)) ]; then
    pass "the index answered 200 on all $idx_ok polls"
else
    fail "index: $idx_ok good polls, $idx_bad bad$early"
fi
oth_ok=$(grep -c '^ok other ' "$tmp/profiles.txt")
oth_bad=$(grep -c '^FAIL other ' "$tmp/profiles.txt")
if [ "$oth_bad" -eq 0 ] && [ "$oth_ok" -ge 3 ]; then
    pass "thread dumps, heap, mutex, block and threadcreate answered 200 on all $oth_ok polls"
else
    fail "thread dump/heap/mutex/block/threadcreate: $oth_ok good polls, $oth_bad bad$early"
fi
prof_ok=$(grep -c '^ok profile ' "$tmp/profiles.txt")
prof_bad=$(grep -c '^FAIL profile ' "$tmp/profiles.txt")
grep '^FAIL ' "$tmp/profiles.txt" | sed 's/^/  /'
if [ "$prof_bad" -eq 0 ] && [ "$prof_ok" -ge $(((secs - 4) / 5)) ]; then
    pass "profile?seconds=2 answered 200 and parsed on all $prof_ok fetches ($(sed -n 's/^ok profile #[0-9]*: //p' "$tmp/profiles.txt" | tr '\n' ',' | sed 's/,$//'))"
else
    fail "profile?seconds=2: $prof_ok good fetches, $prof_bad bad$early"
fi
[ -s "$tmp/curl.err" ] && sed 's/^/  curl: /' "$tmp/curl.err" | sort | uniq -c | head -5

# --- the end: no hang, no signal, status 0, "torture: ok"
hang=0
deadline_ms=$(((secs + 40) * 1000))
while [ "$(awk '{print $3}' "/proc/$tpid/stat" 2>/dev/null)" != Z ] && [ -e "/proc/$tpid" ]; do
    if [ "$(elapsed "$t0")" -ge "$deadline_ms" ]; then
        hang=1
        if [ -n "$prog_pid" ] && command -v gdb >/dev/null 2>&1; then
            echo "  the program (pid $prog_pid) still runs after $((secs + 40)) s; its threads:"
            timeout 60 gdb -p "$prog_pid" -batch -ex "thread apply all bt" 2>&1 |
                grep -vE '^\[New LWP|^\[Thread debugging|^Using host libthread' | sed 's/^/    /'
        fi
        [ -n "$prog_pid" ] && kill -KILL "$prog_pid" 2>/dev/null
        break
    fi
    sleep 0.2
done
wait "$tpid"
status=$?
tpid=""
echo "  program output:"
sed 's/^/    /' "$out" "$err"
if [ "$hang" -eq 1 ] || [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    fail "the program hung (killed by the watchdog, status $status)"
elif [ "$status" -gt 128 ]; then
    fail "the program died of signal $((status - 128)) ($(kill -l $((status - 128)) 2>/dev/null))"
else
    pass "no hang, no death by signal"
fi
for core in $(find "$tmp" -maxdepth 1 -name 'core*' | head -3); do
    fail "core dump $(basename "$core")"
    if command -v gdb >/dev/null 2>&1; then
        echo "  the crashing thread:"
        timeout 120 gdb -batch -ex "bt 40" "$prog" "$core" 2>&1 | grep '^#' | awk '!seen[$0]++' |
            sed 's/^/    /'
    fi
    rm -f "$core"
done
if [ "$status" -eq 0 ]; then
    pass "exit status 0"
else
    fail "exit status $status"
fi
if grep -qx 'torture: ok' "$out" && ! grep -q 'torture: FAIL' "$err"; then
    pass "the program reports torture: ok"
else
    fail "the program did not report torture: ok"
fi
echo "  total $(($(elapsed "$t0") / 1000)) s"
finish
