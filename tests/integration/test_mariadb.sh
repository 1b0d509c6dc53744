#!/usr/bin/env bash
# test_mariadb.sh: Debian's MariaDB 10.11 under libpprof, started as root
# with --user=mysql (it drops to that user) and --memlock (it locks all
# its memory), driven by sysbench's OLTP read-only load
# (test-labels: plain-only slow)
#
# With --memlock, libpprof's memory was locked and faulted in with the
# database's: 1.8 GB more resident than without libpprof.
# - its resident size once ready is within 64 MiB of the run without
#   libpprof (1.8 GB more before), and what it locks within 1 GiB (the
#   C library's arenas vary; 3 GB more before);
# - under sysbench: a 3 s CPU profile covers 90% to 110% of mariadbd's
#   CPU from /proc over the window, and names the query path
#   (dispatch_command); every kind of profile answers 200; the
#   throughput is noted against the run without;
# - the heap profile's in-use growth over a MEMORY table of 200,000 rows
#   is within 5% of the growth of MariaDB's own count (Memory_used);
# - SELECT SLEEP(2) under a wall profile takes 2 s (at most 2.5), and the
#   wall profile shows it in Item_func_sleep;
# - mariadb-admin shutdown ends it.
# Usage: test_mariadb.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
. "$(dirname "$0")/services/common.sh" # inuse_total

if [ ! -x /usr/sbin/mariadbd ] || ! command -v sysbench >/dev/null || ! id mysql >/dev/null 2>&1; then
    pp_skip "mariadb-server or sysbench is not installed"
    pp_finish
fi
[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }
D=$TMP/mdb
mkdir -p "$D"
chmod 755 "$TMP"
chown mysql "$D"
mariadb-install-db --user=mysql --datadir="$D/data" --auth-root-authentication-method=normal >"$TMP/install.log" 2>&1 ||
    pp_give_up "mariadb-install-db failed" install
chmod 755 "$BUILD" 2>/dev/null
MPORT=$(pp_free_port)
PORT=$(pp_free_port)
base=http://127.0.0.1:$PORT/debug/pprof
q() { mariadb -S "$D/sock" -uroot -N -e "$1"; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# start WAY: mariadbd as Debian's unit gives it its options, with
# --memlock, preloaded unless WAY is "without"; MD is its pid.
start() {
    local pre=(env)
    [ "$1" = without ] || pre=(env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT LIBPPROF_HEAP_RATE=16384)
    pp_start "mariadb-$1" "${pre[@]}" /usr/sbin/mariadbd --no-defaults --memlock --user=mysql --datadir="$D/data" \
        --socket="$D/sock" --port="$MPORT" --bind-address=127.0.0.1 --pid-file="$D/pid"
    MD=$PID
    for _ in $(seq 150); do
        q "select 1" >/dev/null 2>&1 && return 0
        pp_alive "$MD" || return 1
        sleep 0.2
    done
    return 1
}

# bench SECONDS: sysbench's OLTP read-only load; prints transactions/s.
bench() {
    sysbench oltp_read_only --db-driver=mysql --mysql-socket="$D/sock" --mysql-user=root --tables=1 \
        --table-size=10000 --threads=2 --time="$1" run 2>&1 | awk '/transactions:/ { gsub(/[(]/, "", $3); print $3 }'
}

# stop: mariadb-admin shutdown; whether it ended within 30 s.
stop() {
    mariadb-admin -S "$D/sock" -uroot shutdown >/dev/null 2>&1
    pp_wait_gone "$MD" 300 0.1
}

start without || pp_give_up "mariadbd did not start without libpprof" mariadb-without
lck0=$(status_kb "$MD" VmLck)
rss0=$(status_kb "$MD" VmRSS)
q "create database sbtest"
sysbench oltp_read_only --db-driver=mysql --mysql-socket="$D/sock" --mysql-user=root --tables=1 \
    --table-size=10000 prepare >"$TMP/prepare.log" 2>&1 || pp_give_up "sysbench prepare failed" prepare
tps0=$(bench 5)
pp_check "mariadb-admin shutdown ends mariadbd (without)" stop

start with || pp_give_up "mariadbd did not start with libpprof" mariadb-with
pp_wait_http "$base/cmdline" 10 "$MD" || pp_give_up "mariadbd did not serve the endpoint" mariadb-with
lck1=$(status_kb "$MD" VmLck)
rss1=$(status_kb "$MD" VmRSS)
# (what is locked includes the reserved part of the C library's
# per-thread arenas, 64 MiB each, whose number varies with the threads'
# timing: 8,590,797,716 to 8,591,018,912 kB without libpprof here; the
# profiler's memory added 3,105,948 kB before)
pp_check "--memlock: mariadbd locks $lck1 kB with libpprof, $lck0 kB without (within 1 GiB)" \
    pp_in_range "${lck1:-x}" $((lck0 - 1048576)) $((lck0 + 1048576))
pp_check "--memlock: resident once ready $rss1 kB with libpprof, $rss0 kB without (within 64 MiB)" \
    pp_in_range "${rss1:-x}" $((rss0 - 65536)) $((rss0 + 65536))

bench 8 >"$TMP/tps1" &
ld=$!
sleep 1
pp_check_coverage "of mariadbd under sysbench" "$MD" 3 "$base"
pp_pprof_shows "the CPU profile names the query path (dispatch_command)" dispatch_command -top -nodecount=400 \
    "$TMP/cpu.pb.gz"
codes=$(pp_every_kind "$base")
wait $ld
tps1=$(cat "$TMP/tps1")
pp_note "sysbench oltp_read_only, 2 threads: $tps0 transactions/s without libpprof, $tps1 with (profiles running for 6 s of 8)"
pp_check "every kind of profile answers 200 under sysbench ($codes)" sh -c "! echo '$codes' | grep -q ':[^2]'"

# the heap against MariaDB's own count of what it allocated
m0=$(q "show global status like 'Memory_used'" | awk '{ print $2 }')
curl -sS --max-time 20 -o "$TMP/heap0.pb.gz" "$base/heap"
q "set session max_heap_table_size = 200 * 1024 * 1024; use sbtest;
   create table m (a int primary key, b varchar(200)) engine = memory;
   insert into m select seq, repeat('x', 190) from seq_1_to_200000;"
m1=$(q "show global status like 'Memory_used'" | awk '{ print $2 }')
curl -sS --max-time 20 -o "$TMP/heap1.pb.gz" "$base/heap"
h0=$(inuse_total "$TMP/heap0.pb.gz")
h1=$(inuse_total "$TMP/heap1.pb.gz")
pp_check "a MEMORY table of 200,000 rows: the heap grew $((h1 - h0)) B, MariaDB's Memory_used $((m1 - m0)) B (within 5%)" \
    within 5 "$((h1 - h0))" "$((m1 - m0))"

# a timed wait in the server under a wall profile
curl -sS --max-time 20 -o "$TMP/wall.pb.gz" "$base/wall?seconds=4" &
wl=$!
sleep 0.5
s=$(date +%s%N)
q "select sleep(2)" >/dev/null
ms=$((($(date +%s%N) - s) / 1000000))
wait $wl
pp_check "SELECT SLEEP(2) under a wall profile took $ms ms (2000 to 2500)" pp_in_range "$ms" 2000 2500
pp_pprof_shows "the wall profile shows the sleep (Item_func_sleep)" Item_func_sleep -top -nodecount=400 \
    "$TMP/wall.pb.gz"
pp_check "mariadb-admin shutdown ends mariadbd" stop
pp_finish
