#!/usr/bin/env bash
# test_debuginfod_keep.sh: fetched debug files serve confined processes and process trees
# (test-labels: plain-only slow)
#
# prog_stripped, stripped, its debug file served by Debian's debuginfod
# (lib_debuginfod.sh), loaded with LD_PRELOAD, as root. The symbolizer
# gives its tables back after 1 s without a profile
# (LIBPPROF_SYMBOLIZER_IDLE=1), so each profile below opens the files again.
#   confined after the fetch: the first profile fetches the debug file and
#     names the static functions; SIGUSR2 makes the program chroot into an
#     empty directory and become user 65534; once the index says the tables
#     were given back, the next profile still names them, and the server
#     was asked once;
#   a process tree: bash serving, running one stripped program, then a
#     second once the first profile has named the first one's functions
#     (each an exec'd member, naming its own files): the second profile
#     names them under each pid; the server was asked once, the second
#     member read the file the first one fetched;
#   confined before its first profile: the server stopped, a new process
#     with the same cache, fetching on, confined at once: its first
#     profile names the static functions from the file kept before the
#     chroot; with fetching off too (the cache is read, and kept, either way).
# Usage: test_debuginfod_keep.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
. "$(dirname "$0")/lib_debuginfod.sh"

if [ "$(id -u)" != 0 ]; then
    pp_skip "confinement needs root (chroot, setuid)"
    pp_ok "not root: nothing to check"
    pp_finish
fi
dbg_stripped
dbg_serve
[ "$CODE" = 200 ] || pp_give_up "debuginfod did not serve $BID's debug file ($CODE)" dbgd
pp_ok "debuginfod on port $DPORT serves $BID's debug file"
ROOT=$TMP/empty
mkdir -p "$ROOT"
C1=$TMP/cache1

# idle PID: waits until the index says the symbolizer's tables are given back
idle() {
    local _
    for _ in $(seq 100); do
        curl -sS --max-time 5 "$URL/" 2>/dev/null | grep -q 'tables not built' && return 0
        sleep 0.1
    done
    return 1
}

# confine NAME PID: SIGUSR2, then the program's answer
confine() {
    kill -USR2 "$2"
    pp_wait_line "$TMP/$1.out" '^confine' 10 "$2"
}

# --- 1. confined after the fetch
start after LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$C1" LIBPPROF_SYMBOLIZER_IDLE=1 \
    STRIPPED_ROOT="$ROOT" -- "$BIN/prog_stripped"
P1=$PID
cpu after1 2
pp_check "after: the first profile ($CODE, $MS ms) names the static functions" named "$TMP/after1.pb.gz"
pp_check "after: the cache holds $BID/debuginfo" cmp -s "$C1/$BID/debuginfo" "$DBG/prog_stripped.debug"
line=$(confine after "$P1")
pp_check "after: the program chrooted and dropped to 65534 ($line)" test "$line" = "confined uid=65534"
pp_check "after: the symbolizer's tables given back while idle" idle
cpu after2 2
pp_check "after: the profile after the chroot ($CODE, $MS ms) names them" named "$TMP/after2.pb.gz"
flags=$(mapflags "$TMP/after2.pb.gz" "$BIN/prog_stripped")
pp_check "after: the program's mapping has $flags (want [FN][FL][LN])" grep -q '\[FN\]\[FL\]\[LN\]' <<<"$flags"
pp_check "after: the server was asked for $BID once ($(requests "$BID"))" test "$(requests "$BID")" = 1
pp_stop "$P1" >/dev/null 2>&1

# --- 2. a process tree: two exec'd members, the second after the fetch
C2=$TMP/cache2
asked=$(requests "$BID")
mkfifo "$TMP/go" # bash waits on it with its builtin read: no process of its own meanwhile
start tree LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$C2" LIBPPROF_SYMBOLIZER_IDLE=1 -- \
    bash -c "'$BIN/prog_stripped' & read -r _ <'$TMP/go'; '$BIN/prog_stripped' & wait"
sleep 1
cpu tree1 2
n1=$(pp_pprof -tags "$TMP/tree1.pb.gz" 2>/dev/null | awk '/^ pid:/ { on = 1; next } on && NF == 0 { on = 0 } on' | grep -c .)
pp_check "tree: the first profile ($CODE, $MS ms, $n1 pids) names the first member's static functions" \
    named "$TMP/tree1.pb.gz"
echo go >"$TMP/go"
sleep 1
cpu tree2 2
pids=$(pp_pprof -tags "$TMP/tree2.pb.gz" 2>/dev/null | awk '/^ pid:/ { on = 1; next } on && NF == 0 { on = 0 } on' |
    sed -n 's/.*): *\([0-9]*\).*/\1/p' | sort -u)
named_pids=
for p in $pids; do
    pp_pprof -top -symbolize=none -nodecount=500 -tagfocus="pid=$p" "$TMP/tree2.pb.gz" 2>/dev/null |
        grep -q ' hidden_sift_rows$' && named_pids+=" $p"
done
# shellcheck disable=SC2086
pp_check "tree: the second profile names hidden_sift_rows under two pids (pids:$(echo $pids); named:${named_pids:-})" \
    test "$(wc -w <<<"${named_pids:-}")" -ge 2
pp_check "tree: the server was asked for $BID once ($((  $(requests "$BID") - asked )))" \
    test "$(($(requests "$BID") - asked))" = 1
pp_stop "$PID" >/dev/null 2>&1

# --- 3. confined before its first profile, the server stopped
pp_stop "$DPID" >/dev/null 2>&1
start before LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$C1" STRIPPED_ROOT="$ROOT" -- \
    "$BIN/prog_stripped"
P3=$PID
line=$(confine before "$P3")
pp_check "before: the program chrooted and dropped to 65534 at once ($line)" test "$line" = "confined uid=65534"
cpu before 2
pp_check "before: its first profile ($CODE, $MS ms) names the static functions from the cache" named "$TMP/before.pb.gz"
pp_stop "$P3" >/dev/null 2>&1
start off LIBPPROF_DEBUGINFO_CACHE="$C1" STRIPPED_ROOT="$ROOT" -- "$BIN/prog_stripped"
line=$(confine off "$PID")
cpu off 2
pp_check "off: fetching off, confined at once ($line): named from the cache kept all the same" \
    named "$TMP/off.pb.gz"
pp_stop "$PID" >/dev/null 2>&1
pp_finish
