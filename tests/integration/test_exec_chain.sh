#!/usr/bin/env bash
# test-labels: quick
# test_exec_chain.sh: "libpprof: serving ..." once per process and address.
# A program started through an exec chain (a shim that execs the next
# program, each exec keeping LD_PRELOAD: here env execs env execs env
# execs sleep) serves at the same address after each exec and says so
# once; a chain that changes the address on the way says so for each
# address; a child that serves elsewhere (LIBPPROF_TREE=0, another
# address) prints its own line, though its parent printed one.
# Usage: test_exec_chain.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so

lines() { grep -c '^libpprof: serving ' "$1"; }

a=$(pp_free_port)
pp_start chain env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$a LIBPPROF_PRINT_ADDR=1 env env env sleep 30
chain=$PID
pp_wait_http "http://127.0.0.1:$a/debug/pprof/cmdline" 10 "$chain"
# each program of the chain binds the address again after its exec: the
# last one answers once its constructor has run
for i in $(seq 100); do
    cmd=$(curl -s --max-time 10 "http://127.0.0.1:$a/debug/pprof/cmdline" | tr '\0' ' ')
    [ "$cmd" = "sleep 30" ] && break
    sleep 0.1
done
pp_check "the chain's last program serves at 127.0.0.1:$a ($cmd)" test "$cmd" = "sleep 30"
pp_check "three execs at one address: one serving line ($(lines "$TMP/chain.err"): $(cat "$TMP/chain.err"))" \
    eval 'test "$(lines "$TMP/chain.err")" = 1 && grep -qx "libpprof: serving http://127.0.0.1:$a/debug/pprof/ (pid $chain)" "$TMP/chain.err"'
pp_stop "$chain" >/dev/null 2>&1

a=$(pp_free_port)
b=$(pp_free_port)
while [ "$b" = "$a" ]; do b=$(pp_free_port); done
pp_start moved env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$a LIBPPROF_PRINT_ADDR=1 env LIBPPROF_ADDR=127.0.0.1:$b sleep 30
moved=$PID
pp_wait_line "$TMP/moved.err" "127.0.0.1:$b/" 10 "$moved" >/dev/null
pp_check "an exec to another address: a line for each ($(cat "$TMP/moved.err"))" \
    eval 'test "$(lines "$TMP/moved.err")" = 2 && grep -q "127.0.0.1:$a/" "$TMP/moved.err" && grep -q "127.0.0.1:$b/" "$TMP/moved.err"'
pp_stop "$moved" >/dev/null 2>&1

a=$(pp_free_port)
b=$(pp_free_port)
while [ "$b" = "$a" ]; do b=$(pp_free_port); done
pp_start kids env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:$a LIBPPROF_PRINT_ADDR=1 \
    sh -c "LIBPPROF_TREE=0 LIBPPROF_ADDR=127.0.0.1:$b sleep 30 & exec sleep 30"
kids=$PID
pp_wait_line "$TMP/kids.err" "127.0.0.1:$b/" 10 "$kids" >/dev/null
sleep 0.5
pp_check "a child that serves elsewhere prints its own line ($(cat "$TMP/kids.err"))" \
    eval 'test "$(lines "$TMP/kids.err")" = 2 && grep -q "127.0.0.1:$a/debug/pprof/ (pid $kids)" "$TMP/kids.err" &&
          grep "127.0.0.1:$b/" "$TMP/kids.err" | grep -vq "(pid $kids)"'
pp_stop "$kids" >/dev/null 2>&1
pp_finish
