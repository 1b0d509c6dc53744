#!/usr/bin/env bash
# test-labels: plain-only slow
# test_launcher.sh: libpprof-run, the launcher of the no-rebuild mode. --help
# lists every option and variable; it runs prog_plain (not linked with
# libpprof) with the preload, which prints one serving line with the port it
# got, and go tool pprof reads a CPU profile from there at the rate asked;
# the options become the environment variables; LD_PRELOAD entries already
# there are kept after libpprof (and a libpprof among them is not doubled);
# "#!" scripts run with the preload. Refused with one "libpprof-run:" line,
# nothing run: a statically linked program, a 32-bit one, a setuid program
# of another user and a program with file capabilities (as root only), a
# missing library, a port in use, a bad number or address (exit 2), a
# missing program (127), one that is not executable (126). The program is
# checked before the address: with the port held by a listener, a missing,
# not executable, static, 32-bit or setuid program is reported as such,
# not as "in use". What the library's server would refuse at start is
# refused too (exit 1, one line naming the fix): an address other than
# loopback (0.0.0.0, ":PORT", "[::]") with neither a token, a client CA nor
# LIBPPROF_AUTH=none, a token file it cannot read or that holds no token,
# TLS half set; with LIBPPROF_AUTH=none, a token file or a client CA such an
# address is served. The preload's own serving line: printed for port 0,
# not for a fixed port unless asked.
# Usage: test_launcher.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

RUN=$BUILD/libpprof-run
LIB=$BUILD/libpprof.so.0
PROG=$BUILD/tests/prog_plain
SERVING='^libpprof: serving http://127\.0\.0\.1:[0-9]+/debug/pprof/ \(pid [0-9]+\)$'

[ -x "$RUN" ] || { pp_bad "$RUN is missing"; pp_finish; }

# refused NAME WANT_RC REGEX CMD...: CMD (a launcher run) exits WANT_RC with
# exactly one stderr line, "libpprof-run: " and matching REGEX, nothing on
# stdout, and $TMP/ran.NAME (which the program would create) absent.
refused() {
    local name=$1 want=$2 re=$3 rc err
    shift 3
    timeout 20 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
    err=$(cat "$TMP/$name.err")
    if [ "$rc" = "$want" ] && [ "$(grep -c '' "$TMP/$name.err")" = 1 ] &&
        grep -q '^libpprof-run: ' "$TMP/$name.err" && grep -qE -- "$re" "$TMP/$name.err" &&
        [ ! -s "$TMP/$name.out" ] && [ ! -e "$TMP/ran.$name" ]; then
        pp_ok "$name: exit $rc, $err"
    else
        pp_bad "$name: want exit $want and one line matching '$re', the program not run (exit $rc)" \
            "$err" "$(cat "$TMP/$name.out")" "$(ls "$TMP"/ran.* 2>/dev/null)"
    fi
}

# env_of PID NAME: the value of NAME in the environment of PID.
env_of() {
    tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n "s/^$2=//p"
}

# ---- --help and --version
help=$("$RUN" --help 2>&1)
rc=$?
missing=
for w in --addr --cpu-hz --heap-rate --mutex-fraction --block-rate --signal --symbolize --no-tree --lib \
    --help --version LIBPPROF_ADDR LIBPPROF_CPU_HZ LIBPPROF_HEAP_RATE LIBPPROF_MUTEX_FRACTION \
    LIBPPROF_BLOCK_RATE LIBPPROF_SIGNAL LIBPPROF_SYMBOLIZE LIBPPROF_TREE=0 LIBPPROF_LIB LD_PRELOAD \
    LIBPPROF_PRINT_ADDR 127.0.0.1:6060 'default 100' 'default 524288' LIBPPROF_TOKEN_FILE \
    LIBPPROF_TLS_CLIENT_CA LIBPPROF_AUTH=none; do
    grep -qF -- "$w" <<<"$help" || missing="$missing $w"
done
pp_check "--help: exit 0, every option, variable and default listed (missing:${missing:- none})" \
    test "$rc" = 0 -a -z "$missing"
ver=$("$RUN" --version 2>&1)
pp_check "--version: $ver" eval '[[ "$ver" =~ ^libpprof-run\ [0-9]+\.[0-9]+\.[0-9]+$ ]]'

# ---- the main run: port 0, a CPU profile through go tool pprof
pp_start main "$RUN" --addr 127.0.0.1:0 --cpu-hz=250 "$PROG" 10 1
main=$PID
line=$(pp_wait_line "$TMP/main.err" '^libpprof: serving' 10 "$main")
port=$(sed -n 's|^libpprof: serving http://127\.0\.0\.1:\([0-9]*\)/debug/pprof/ (pid \([0-9]*\))$|\1|p' <<<"$line")
lpid=$(sed -n 's|.* (pid \([0-9]*\))$|\1|p' <<<"$line")
if [[ "$line" =~ $SERVING ]] && [ "$port" != 0 ] && [ "$lpid" = "$main" ]; then
    pp_ok "serving line with the bound port and the launcher's pid (exec keeps it): $line"
else
    pp_give_up "no serving line naming pid $main and a port" main "$TMP/main.out"
fi
base=http://127.0.0.1:$port/debug/pprof
pp_check "the program itself is prog_plain, with libpprof.so.0 mapped" \
    eval 'test "$(readlink /proc/$main/exe)" = "$(readlink -f "$PROG")" && grep -q "/libpprof\.so\.0" /proc/$main/maps'
pp_check "LD_PRELOAD is the absolute path of libpprof.so.0 ($(env_of "$main" LD_PRELOAD))" \
    test "$(env_of "$main" LD_PRELOAD)" = "$(cd "$BUILD" && pwd -P)/libpprof.so.0"

# A second launcher on the port the first one's program holds.
refused inuse 1 "127\.0\.0\.1:$port is in use.*--addr.*port 0" "$RUN" --addr "127.0.0.1:$port" -- touch "$TMP/ran.inuse"
refused inuse_env 1 "127\.0\.0\.1:$port is in use" env LIBPPROF_ADDR="127.0.0.1:$port" "$RUN" touch "$TMP/ran.inuse_env"

top=$(pp_pprof -top -nodecount=30 "$base/profile?seconds=1" 2>&1)
if grep -qE ' busy_loop_for_preload$' <<<"$top"; then
    pp_ok "go tool pprof -top on profile?seconds=1 names busy_loop_for_preload"
else
    pp_bad "go tool pprof -top on profile?seconds=1 lacks busy_loop_for_preload" "$top"
fi
curl -sS --max-time 10 -o "$TMP/cpu.pb.gz" "$base/profile?seconds=1"
period=$(pp_pprof -raw "$TMP/cpu.pb.gz" 2>/dev/null | awk '/^Period:/ { print $2 }')
pp_check "--cpu-hz=250 reached the library: period $period ns (want 4000000)" test "$period" = 4000000


pp_wait_gone "$main" 150 0.1 || true
{ wait "$main"; } 2>/dev/null
rc=$?
n=$(grep -c '' "$TMP/main.err")
pp_check "the program ran to completion (exit $rc) with one stderr line (its exec'd child joined its endpoint: $n lines)" \
    eval 'test $rc = 0 && test "$(tail -1 "$TMP/main.out")" = done && test "$n" = 1'

# ---- the options become the environment (env as the program)
"$RUN" --addr=127.0.0.1:0 --cpu-hz 0 --heap-rate=4096 --mutex-fraction 7 --block-rate=1000 --signal 40 \
    --symbolize=functions --no-tree -- env >"$TMP/env.out" 2>"$TMP/env.err"
rc=$?
want="LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_CPU_HZ=0 LIBPPROF_HEAP_RATE=4096 LIBPPROF_MUTEX_FRACTION=7
LIBPPROF_BLOCK_RATE=1000 LIBPPROF_SIGNAL=40 LIBPPROF_SYMBOLIZE=functions LIBPPROF_TREE=0 LIBPPROF_PRINT_ADDR=1"
missing=
for w in $want; do grep -qx -- "$w" "$TMP/env.out" || missing="$missing $w"; done
pp_check "every option sets its variable (exit $rc; missing:${missing:- none})" test "$rc" = 0 -a -z "$missing"

# The default address: 127.0.0.1:6060 (or, when that port is taken, a
# refusal naming it).
"$RUN" -- env >"$TMP/def.out" 2>"$TMP/def.err"
rc=$?
if { [ $rc = 0 ] && grep -qx 'LIBPPROF_ADDR=127.0.0.1:6060' "$TMP/def.out"; } ||
    { [ $rc = 1 ] && grep -q '^libpprof-run: 127.0.0.1:6060 is in use' "$TMP/def.err"; }; then
    pp_ok "without --addr or LIBPPROF_ADDR: 127.0.0.1:6060 (exit $rc)"
else
    pp_bad "without --addr or LIBPPROF_ADDR: want 127.0.0.1:6060 (exit $rc)" "$(cat "$TMP/def.err")" \
        "$(grep LIBPPROF_ADDR "$TMP/def.out")"
fi

# ---- LD_PRELOAD entries already there are kept after libpprof
other=
for f in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
    [ -e "$f" ] && { other=$f; break; }
done
if [ -n "$other" ]; then
    pp_start kept env LD_PRELOAD="$other" "$RUN" --addr 127.0.0.1:0 "$PROG" 3 -1
    kept=$PID
    if pp_wait_line "$TMP/kept.err" "$SERVING" 10 "$kept" >/dev/null; then
        pre=$(env_of "$kept" LD_PRELOAD)
        pp_check "LD_PRELOAD: libpprof first, the entry already there after it ($pre)" \
            test "$pre" = "$(cd "$BUILD" && pwd -P)/libpprof.so.0:$other"
        pp_check "/proc/$kept/maps holds both libpprof.so.0 and $(basename "$other")" \
            eval 'grep -q "/libpprof\.so\.0" /proc/$kept/maps && grep -qF "$(readlink -f "$other")" /proc/$kept/maps'
    else
        pp_bad "with LD_PRELOAD=$other: no serving line" "$(cat "$TMP/kept.err")"
    fi
    pp_stop "$kept" >/dev/null 2>&1
    pre=$(LD_PRELOAD="$BUILD/libpprof.so $other" "$RUN" --addr 127.0.0.1:0 -- env 2>/dev/null | sed -n 's/^LD_PRELOAD=//p')
    pp_check "a libpprof already in LD_PRELOAD is not doubled ($pre)" \
        test "$pre" = "$(cd "$BUILD" && pwd -P)/libpprof.so.0:$other"
else
    pp_bad "neither libjemalloc nor libtcmalloc_minimal is installed (scripts/deps.sh installs them)"
fi

# ---- "#!" scripts: the interpreter gets the preload
printf '#!/bin/sh\nprintf "%%s\\n" "$LD_PRELOAD"\nexit 3\n' >"$TMP/script.sh"
chmod +x "$TMP/script.sh"
out=$("$RUN" --addr 127.0.0.1:0 "$TMP/script.sh" 2>"$TMP/script.err")
rc=$?
pp_check "a #! script runs preloaded, its exit status passed on (exit $rc, $(cat "$TMP/script.err"))" \
    eval 'test $rc = 3 && test "$out" = "$(cd "$BUILD" && pwd -P)/libpprof.so.0" && grep -qE "$SERVING" "$TMP/script.err"'

# ---- programs the preload cannot reach
printf '#include <stdio.h>\nint main(int c, char **v) { return c > 1 && fopen(v[1], "w") ? 0 : 1; }\n' >"$TMP/mark.c"
if gcc -static -o "$TMP/static_mark" "$TMP/mark.c" 2>"$TMP/static.cc"; then
    "$TMP/static_mark" "$TMP/premise" && rm -f "$TMP/premise"
    pp_check "premise: the static program runs and creates its file" test $? = 0
    refused static 1 "static_mark is statically linked: LD_PRELOAD cannot load a library into it; link it with libpprof\.a" \
        "$RUN" --addr 127.0.0.1:0 "$TMP/static_mark" "$TMP/ran.static"
    printf '#!%s\n' "$TMP/static_mark" >"$TMP/static_script"
    chmod +x "$TMP/static_script"
    refused static_script 1 "static_mark \(the interpreter of .*static_script\) is statically linked" \
        "$RUN" --addr 127.0.0.1:0 "$TMP/static_script"
else
    pp_skip "gcc -static cannot link here: $(head -1 "$TMP/static.cc")"
fi

# A 32-bit i386 executable (its ELF header is what the launcher reads).
python3 -c 'import struct, sys
sys.stdout.buffer.write(b"\x7fELF\x01\x01\x01" + bytes(9) + struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, 0x8048000, 52, 0, 0, 52, 32, 0, 40, 0, 0))' \
    >"$TMP/elf32"
chmod +x "$TMP/elf32"
refused elf32 1 "elf32 is a 32-bit i386 program and libpprof is 64-bit" "$RUN" --addr 127.0.0.1:0 "$TMP/elf32"

if [ "$(id -u)" = 0 ]; then
    if findmnt -no OPTIONS -T "$TMP" | grep -qw nosuid; then
        pp_skip "$TMP is on a nosuid mount: no setuid program can be made there"
    else
        cp /bin/true "$TMP/suid_true"
        chown nobody "$TMP/suid_true" && chmod u+s "$TMP/suid_true"
        env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:0 "$TMP/suid_true" 2>"$TMP/suid_direct.err"
        rc=$?
        pp_check "premise: preloaded by hand, the setuid program runs without libpprof (exit $rc, no serving line)" \
            eval 'test $rc = 0 && test ! -s "$TMP/suid_direct.err"'
        refused setuid 1 "suid_true is setuid \(owner uid [0-9]+\): the dynamic loader ignores LD_PRELOAD.*secure-execution" \
            "$RUN" --addr 127.0.0.1:0 "$TMP/suid_true"
        chown root "$TMP/suid_true" && chmod u+s "$TMP/suid_true"
        "$RUN" --addr 127.0.0.1:0 "$TMP/suid_true" 2>"$TMP/suid_own.err"
        pp_check "a setuid program owned by the caller runs preloaded (exit $?, $(cat "$TMP/suid_own.err"))" \
            grep -qE "$SERVING" "$TMP/suid_own.err"

        # File capabilities, for a caller that is not root.
        if command -v setcap >/dev/null && command -v setpriv >/dev/null &&
            cp /bin/true "$TMP/cap_true" && setcap cap_net_raw+ep "$TMP/cap_true" 2>/dev/null; then
            chmod 755 "$TMP"
            asnobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
            "${asnobody[@]}" env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:0 "$TMP/cap_true" 2>"$TMP/cap_direct.err"
            rc=$?
            pp_check "premise: preloaded by hand, the capability program runs without libpprof (exit $rc)" \
                eval 'test $rc = 0 && test ! -s "$TMP/cap_direct.err"'
            refused caps 1 "cap_true has file capabilities: the dynamic loader ignores LD_PRELOAD.*secure-execution" \
                "${asnobody[@]}" "$RUN" --addr 127.0.0.1:0 "$TMP/cap_true"
            chmod 700 "$TMP"
        else
            pp_skip "setcap or setpriv unavailable: file capabilities not tried"
        fi
    fi
else
    pp_skip "not root: no setuid program of another user can be made"
fi

# ---- the launcher's own errors
refused lib 1 "--lib /nonexistent: No such file or directory; point --lib PATH or LIBPPROF_LIB at libpprof\.so\.0" \
    "$RUN" --addr 127.0.0.1:0 --lib /nonexistent touch "$TMP/ran.lib"
refused libenv 1 "LIBPPROF_LIB /nonexistent: No such file" \
    env LIBPPROF_LIB=/nonexistent "$RUN" --addr 127.0.0.1:0 touch "$TMP/ran.libenv"
# A copy of the launcher where no library is beside it, nor installed.
installed=$(sed -n 's|.*then in \(/[^)]*\)).*|\1|p' <<<"$help")/libpprof.so.0
if [ -e "$installed" ]; then
    pp_skip "$installed is installed: the launcher always finds a library"
else
    cp "$RUN" "$TMP/libpprof-run"
    refused nolib 1 "cannot find libpprof\.so\.0 \(looked for $TMP/libpprof\.so\.0, .*\); point --lib PATH or LIBPPROF_LIB at it" \
        env -u LIBPPROF_LIB "$TMP/libpprof-run" --addr 127.0.0.1:0 touch "$TMP/ran.nolib"
fi
for bad in "--cpu-hz abc" "--cpu-hz=-1" "--heap-rate 99999999999999999999" "--cpu-hz 10001" "--signal 0" \
    "--block-rate 1.5" "--mutex-fraction="; do
    name=num_$(tr -c 'a-z0-9' _ <<<"$bad")
    # shellcheck disable=SC2086
    refused "$name" 2 "want a whole number" "$RUN" --addr 127.0.0.1:0 $bad touch "$TMP/ran.$name"
done
refused symbolize 2 "--symbolize fast: want full, functions or none" "$RUN" --symbolize fast touch "$TMP/ran.symbolize"
for bad in 127.0.0.1:65536 127.0.0.1:abc 127.0.0.1: nocolon '[::1]80' 1:2:3; do
    name=addr_$(tr -c 'a-z0-9' _ <<<"$bad")
    esc=$(sed 's/[].[]/\\&/g' <<<"$bad")
    refused "$name" 2 "bad address '$esc': malformed address" \
        "$RUN" --addr "$bad" touch "$TMP/ran.$name"
done
refused addr_env 2 "bad address '127\.0\.0\.1:99999'" env LIBPPROF_ADDR=127.0.0.1:99999 "$RUN" touch "$TMP/ran.addr_env"
refused unknown 2 "unknown option --bogus" "$RUN" --bogus touch "$TMP/ran.unknown"
refused noprog 2 "no program to run" "$RUN" --addr 127.0.0.1:0
refused missing 127 "no-such-program-[0-9]+: command not found" "$RUN" --addr 127.0.0.1:0 "no-such-program-$$"
refused missing_path 127 "/nonexistent/prog: No such file or directory" "$RUN" --addr 127.0.0.1:0 /nonexistent/prog
printf 'data\n' >"$TMP/notexec"
refused notexec 126 "notexec: not executable \(Permission denied\)" "$RUN" --addr 127.0.0.1:0 "$TMP/notexec"
printf '\x01\x02garbage\n' >"$TMP/garbage"
chmod +x "$TMP/garbage"
refused execfail 126 "cannot run .*garbage: Exec format error" "$RUN" --addr 127.0.0.1:0 "$TMP/garbage"

# ---- the program is checked before the address: with the port held by a
# listener, a program the launcher refuses is named as such, not "in use"
busy=
for _ in 1 2 3; do
    pp_start holder python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
print("port=%d" % s.getsockname()[1], flush=True)
time.sleep(300)' "$(pp_free_port)"
    holder=$PID
    line=$(pp_wait_line "$TMP/holder.out" '^port=[0-9]+$' 10 "$holder") && { busy=${line#port=}; break; }
    pp_stop "$holder" >/dev/null 2>&1
done
if [ -z "$busy" ]; then
    pp_bad "no listener could hold a port" "$(cat "$TMP/holder.err")"
else
    refused busy_inuse 1 "127\.0\.0\.1:$busy is in use: choose another with --addr" \
        "$RUN" --addr "127.0.0.1:$busy" touch "$TMP/ran.busy_inuse"
    refused busy_missing 127 "no-such-program-[0-9]+: command not found" \
        "$RUN" --addr "127.0.0.1:$busy" "no-such-program-$$"
    refused busy_missing_path 127 "/nonexistent/prog: No such file or directory" \
        "$RUN" --addr "127.0.0.1:$busy" /nonexistent/prog
    refused busy_notexec 126 "notexec: not executable \(Permission denied\)" \
        "$RUN" --addr "127.0.0.1:$busy" "$TMP/notexec"
    if [ -x "$TMP/static_mark" ]; then
        refused busy_static 1 "static_mark is statically linked: LD_PRELOAD cannot load a library into it" \
            "$RUN" --addr "127.0.0.1:$busy" "$TMP/static_mark" "$TMP/ran.busy_static"
        refused busy_static_env 1 "static_mark is statically linked" \
            env LIBPPROF_ADDR="127.0.0.1:$busy" "$RUN" "$TMP/static_mark" "$TMP/ran.busy_static_env"
    else
        pp_skip "no static program (gcc -static): the static one not tried on a busy port"
    fi
    refused busy_elf32 1 "elf32 is a 32-bit i386 program" "$RUN" --addr "127.0.0.1:$busy" "$TMP/elf32"
    if [ "$(id -u)" = 0 ] && ! findmnt -no OPTIONS -T "$TMP" | grep -qw nosuid; then
        cp /bin/true "$TMP/suid_busy"
        chown nobody "$TMP/suid_busy" && chmod u+s "$TMP/suid_busy"
        refused busy_setuid 1 "suid_busy is setuid \(owner uid [0-9]+\)" \
            "$RUN" --addr "127.0.0.1:$busy" "$TMP/suid_busy"
    else
        pp_skip "not root (or a nosuid $TMP): no setuid program tried on a busy port"
    fi
    pp_stop "$holder" >/dev/null 2>&1
fi

# ---- addresses the library's server would refuse at start
# Without any authentication set (whatever the caller's environment holds).
noauth=(env -u LIBPPROF_TOKEN_FILE -u LIBPPROF_TLS_CERT -u LIBPPROF_TLS_KEY -u LIBPPROF_TLS_CLIENT_CA
    -u LIBPPROF_AUTH)
fix='set LIBPPROF_TOKEN_FILE or LIBPPROF_TLS_CLIENT_CA, or LIBPPROF_AUTH=none to serve anyone who reaches it$'
free=$(pp_free_port)
open_addrs=("0.0.0.0:$free" ":$free" 0.0.0.0:0)
python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::", 0))' 2>/dev/null && open_addrs+=("[::]:$free")
for a in "${open_addrs[@]}"; do
    name=open_$(tr -c 'a-z0-9' _ <<<"$a")
    esc=$(sed 's/[].[]/\\&/g' <<<"$a")
    refused "$name" 1 "^libpprof-run: $esc is not a loopback address and no token or client CA is set: .*$fix" \
        "${noauth[@]}" "$RUN" --addr "$a" touch "$TMP/ran.$name"
done
refused open_env 1 "0\.0\.0\.0:$free is not a loopback address .*$fix" \
    "${noauth[@]}" LIBPPROF_ADDR="0.0.0.0:$free" "$RUN" touch "$TMP/ran.open_env"
refused open_badauth 1 "0\.0\.0\.0:$free is not a loopback address .*\(LIBPPROF_AUTH=open is not understood: the one value is none\).*$fix" \
    "${noauth[@]}" LIBPPROF_AUTH=open "$RUN" --addr "0.0.0.0:$free" touch "$TMP/ran.open_badauth"

# served_open NAME WHAT SCHEME ENV...: the launcher runs prog_plain on
# 0.0.0.0 with ENV set; it serves there (its serving line, exit 0).
served_open() {
    local name=$1 what=$2 scheme=$3 p rc
    shift 3
    p=$(pp_free_port)
    "${noauth[@]}" "$@" "$RUN" --addr "0.0.0.0:$p" "$PROG" 0.2 -1 >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
    if [ $rc = 0 ] && [ "$(grep -c '' "$TMP/$name.err")" = 1 ] &&
        grep -qE "^libpprof: serving $scheme://0\.0\.0\.0:$p/debug/pprof/ \(pid [0-9]+\)$" "$TMP/$name.err"; then
        pp_ok "0.0.0.0 with $what: served (exit $rc, $(cat "$TMP/$name.err"))"
    else
        pp_bad "0.0.0.0 with $what: want it served, one serving line on port $p (exit $rc)" "$(cat "$TMP/$name.err")"
    fi
}
served_open open_none LIBPPROF_AUTH=none http LIBPPROF_AUTH=none
printf 'launcher-token\n' >"$TMP/token"
served_open open_token "a token file" http LIBPPROF_TOKEN_FILE="$TMP/token"

# The token is in force: a request without it gets 401, with it 200.
p=$(pp_free_port)
pp_start open_token_live "${noauth[@]}" LIBPPROF_TOKEN_FILE="$TMP/token" "$RUN" --addr "0.0.0.0:$p" "$PROG" 30 -1
if pp_wait_line "$TMP/open_token_live.err" "^libpprof: serving http://0\.0\.0\.0:$p/" 10 "$PID" >/dev/null; then
    bare=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$p/debug/pprof/cmdline")
    with=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Authorization: Bearer launcher-token' \
        "http://127.0.0.1:$p/debug/pprof/cmdline")
    pp_check "0.0.0.0 with a token file: without the token $bare, with it $with (want 401, 200)" \
        test "$bare" = 401 -a "$with" = 200
else
    pp_bad "0.0.0.0 with a token file: no serving line" "$(cat "$TMP/open_token_live.err")"
fi
pp_stop "$PID" >/dev/null 2>&1

# A token file the server cannot read, or that holds no token: refused
# whatever the address, as the server refuses it.
refused token_missing 1 "cannot read the token file $TMP/no-token \(LIBPPROF_TOKEN_FILE\): No such file or directory; .*point LIBPPROF_TOKEN_FILE at" \
    "${noauth[@]}" LIBPPROF_TOKEN_FILE="$TMP/no-token" "$RUN" --addr 127.0.0.1:0 touch "$TMP/ran.token_missing"
: >"$TMP/empty-token"
refused token_empty 1 "the token file $TMP/empty-token \(LIBPPROF_TOKEN_FILE\) must hold one token of 1 to 1023 bytes" \
    "${noauth[@]}" LIBPPROF_TOKEN_FILE="$TMP/empty-token" "$RUN" --addr "0.0.0.0:$free" touch "$TMP/ran.token_empty"
refused tls_ca_alone 1 "TLS needs both a certificate and a key \(a client CA alone is not enough\).*LIBPPROF_TLS_CERT and LIBPPROF_TLS_KEY" \
    "${noauth[@]}" LIBPPROF_TLS_CLIENT_CA="$TMP/token" "$RUN" --addr "0.0.0.0:$free" touch "$TMP/ran.tls_ca_alone"

if command -v openssl >/dev/null &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
        -keyout "$TMP/tls.key" -out "$TMP/tls.pem" >/dev/null 2>&1; then
    # A certificate is not authentication; a client CA is.
    refused tls_no_ca 1 "0\.0\.0\.0:$free is not a loopback address .*$fix" \
        "${noauth[@]}" LIBPPROF_TLS_CERT="$TMP/tls.pem" LIBPPROF_TLS_KEY="$TMP/tls.key" \
        "$RUN" --addr "0.0.0.0:$free" touch "$TMP/ran.tls_no_ca"
    refused tls_ca_missing 1 "cannot read the TLS client CA $TMP/no-ca\.pem \(LIBPPROF_TLS_CLIENT_CA\): No such file" \
        "${noauth[@]}" LIBPPROF_TLS_CERT="$TMP/tls.pem" LIBPPROF_TLS_KEY="$TMP/tls.key" \
        LIBPPROF_TLS_CLIENT_CA="$TMP/no-ca.pem" "$RUN" --addr "0.0.0.0:$free" touch "$TMP/ran.tls_ca_missing"
    served_open open_client_ca "a client CA" https LIBPPROF_TLS_CERT="$TMP/tls.pem" LIBPPROF_TLS_KEY="$TMP/tls.key" \
        LIBPPROF_TLS_CLIENT_CA="$TMP/tls.pem"
else
    pp_skip "openssl cannot make a certificate: TLS settings not tried"
fi

# ---- the preload's serving line without the launcher
LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:0 "$PROG" 0.2 -1 >/dev/null 2>"$TMP/zero.err"
pp_check "preloaded by hand on port 0: exactly one serving line ($(cat "$TMP/zero.err"))" \
    eval 'test "$(grep -c "" "$TMP/zero.err")" = 1 && grep -qE "$SERVING" "$TMP/zero.err"'
fixed=$(pp_free_port)
LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$fixed "$PROG" 0.2 -1 >/dev/null 2>"$TMP/fixed.err"
pp_check "preloaded by hand on a fixed port: nothing on stderr ($(cat "$TMP/fixed.err"))" test ! -s "$TMP/fixed.err"
fixed=$(pp_free_port)
LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$fixed LIBPPROF_PRINT_ADDR=1 "$PROG" 0.2 -1 >/dev/null 2>"$TMP/print.err"
pp_check "LIBPPROF_PRINT_ADDR=1 on a fixed port: the serving line names it ($(cat "$TMP/print.err"))" \
    eval 'test "$(grep -c "" "$TMP/print.err")" = 1 && grep -q "^libpprof: serving http://127\.0\.0\.1:$fixed/debug/pprof/ (pid [0-9]*)$" "$TMP/print.err"'

pp_finish
