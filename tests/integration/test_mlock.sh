#!/usr/bin/env bash
# test_mlock.sh: a program that locks all its memory (mlockall, as
# corosync, multipathd, iscsid, chronyd -m, memcached -k and
# openvpn --mlock do) locks its own under LD_PRELOAD, not the profiler's
# (test-labels: plain-only quick)
#
# prog_mlock calls mlockall(MCL_CURRENT | MCL_FUTURE). Before, the kernel
# locked and faulted in the profiler's memory with it: 1,112,556 KiB
# locked (the own heap's reserved region), 57 MB more resident (the
# profiler's threads' stacks, tables and libraries) in a program of
# 2.4 MB, 124 MB more locked after the profiles; an unprivileged program
# whose RLIMIT_MEMLOCK fits its own size was refused (ENOMEM). 5 of the
# 11 checks failed.
# - as root: what is locked, and the resident growth at the call, within
#   1 MiB of the run without libpprof;
# - as nobody: a soft limit of the program's size plus 1 MiB lets it lock
#   all, with libpprof as without; half its size refuses it (ENOMEM) in
#   both;
# - MCL_FUTURE: after every kind of profile, and a CPU profile that names
#   the program's function, the program's locked memory grew by at most
#   1 MiB more than without libpprof; munlockall leaves nothing locked;
# - getrlimit reads back the RLIMIT_AS the program set (the override of
#   getrlimit was not exported, so programs read the kernel's value, which
#   includes the profiler's part).
# Usage: test_mlock.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }
PROG=$BUILD/tests/prog_mlock
chmod 755 "$TMP"
cp "$PROG" "$TMP/prog_mlock"
chmod 755 "$TMP/prog_mlock"

# field FILE KEY N: the Nth number after KEY in FILE.
field() { awk -v k="$2" -v n="$3" '$1 == k { print $(n + 1); exit }' "$1"; }

PORT=$(pp_free_port)
"$TMP/prog_mlock" 6 >"$TMP/without.out" 2>&1
env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT "$TMP/prog_mlock" 6 >"$TMP/with.out" 2>"$TMP/with.err" &
P=$!
base=http://127.0.0.1:$PORT/debug/pprof
pp_wait_http "$base/cmdline" 10 "$P" || pp_give_up "prog_mlock did not serve" with
codes=$(pp_every_kind "$base")
cpu=$(curl -sS --max-time 10 -o "$TMP/cpu.pb.gz" -w '%{http_code}' "$base/profile?seconds=1")
wait "$P"

pp_check "mlockall succeeds without and with libpprof ($(field "$TMP/without.out" mlockall 1), $(field "$TMP/with.out" mlockall 1))" \
    test "$(field "$TMP/without.out" mlockall 1)$(field "$TMP/with.out" mlockall 1)" = 00
l0=$(field "$TMP/without.out" mlockall 3)
l1=$(field "$TMP/with.out" mlockall 3)
pp_check "locked: $l1 KiB with libpprof, $l0 KiB without (within 1024)" pp_in_range "${l1:-x}" $((l0 - 1024)) $((l0 + 1024))
g0=$(($(field "$TMP/without.out" mlockall 4) - $(field "$TMP/without.out" before 2)))
g1=$(($(field "$TMP/with.out" mlockall 4) - $(field "$TMP/with.out" before 2)))
pp_check "resident growth at the call: $g1 KiB with libpprof, $g0 KiB without (within 1024)" pp_in_range "$g1" $((g0 - 1024)) $((g0 + 1024))
pp_check "every kind of profile answers 200 after the program locked its future mappings ($codes)" \
    sh -c "! echo '$codes' | grep -q ':[^2]'"
pp_pprof_shows "the CPU profile ($cpu) names the program's burn()" burn -top "$TMP/cpu.pb.gz"
d0=$(($(field "$TMP/without.out" later 1) - l0))
d1=$(($(field "$TMP/with.out" later 1) - ${l1:-0}))
pp_check "locked memory grew $d1 KiB over the profiles with libpprof, $d0 KiB without (at most 1024 more)" \
    test "$d1" -le $((d0 + 1024))
pp_check "munlockall leaves nothing locked ($(field "$TMP/with.out" munlockall 2) KiB)" \
    test "$(field "$TMP/with.out" munlockall 1) $(field "$TMP/with.out" munlockall 2)" = "0 0"
pp_check "getrlimit reads the RLIMIT_AS the program set ($(sed -n 's/^as //p' "$TMP/with.out"))" \
    test "$(field "$TMP/with.out" as 1)" = "$(field "$TMP/with.out" as 2)"

# unprivileged: RLIMIT_MEMLOCK against the program's own size
size=$(field "$TMP/without.out" before 1)
hard=$(ulimit -H -l)
run_as_nobody() { # LIMIT_KIB [preload]: mlockall's return and errno
    runuser -u nobody -- env ${2:+LD_PRELOAD=$BUILD/libpprof.so LIBPPROF_ADDR=127.0.0.1:0} \
        bash -c "ulimit -S -l $1 && exec $TMP/prog_mlock 0" 2>/dev/null | awk '$1 == "mlockall" { print $2, $3 }'
}
fit=$((size + 1024))
if [ "$hard" != unlimited ] && [ "$fit" -gt "$hard" ]; then
    pp_skip "unprivileged: the hard RLIMIT_MEMLOCK ($hard KiB) is under the program's size plus 1 MiB ($fit KiB)"
else
    pp_check "as nobody, RLIMIT_MEMLOCK $fit KiB (its size $size KiB + 1 MiB): mlockall without libpprof: $(run_as_nobody $fit)" \
        test "$(run_as_nobody $fit)" = "0 0"
    pp_check "and with libpprof: $(run_as_nobody $fit 1)" test "$(run_as_nobody $fit 1)" = "0 0"
fi
half=$((size / 2))
pp_check "as nobody, RLIMIT_MEMLOCK $half KiB (half its size): refused (ENOMEM) without ($(run_as_nobody $half)) and with libpprof ($(run_as_nobody $half 1))" \
    test "$(run_as_nobody $half) $(run_as_nobody $half 1)" = "-1 12 -1 12"
pp_finish
