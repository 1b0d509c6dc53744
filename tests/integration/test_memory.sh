#!/usr/bin/env bash
# test_memory.sh: the memory profile accounts for the whole resident set
# (test-labels: plain-only slow)
#
# prog_memory under LD_PRELOAD (LIBPPROF_HEAP_RATE=8192), whose memory is
# known: 40 MiB touched in its own mmap arena, 50,000 live 1 KiB strings
# among 150,000 freed ones, four threads with 1 MiB of stack touched:
#   the profile's total is within 2% of smaps_rollup's Rss read as the
#   profile read smaps, and between the Rss read before and after it;
#   mapped by the program: under arena_map's stack, within 5% of the
#   bytes it touched; live heap objects within 5% of mallinfo2's bytes in
#   use (the estimate's deviation is sqrt(8192 / 55 MB) = 1.2%, so 5% is
#   4 of them: chance fails it far less than once in a thousand runs);
#   held free by glibc within 5% of mallinfo2's free chunks; each
#   worker's stack within 5% of the Rss of its stack's mapping in smaps;
#   memory?seconds=3 while the program touches 16 MiB more of its arena:
#   resident_change_space of arena_map within 5% of 16 MiB;
#   -tagfocus memory=stack and format=folded read it.
# redis (jemalloc; 1M keys of 200 B, then 3 of every 4 deleted): the
# total within 2% of Rss, live heap within 5% of jemalloc's
# stats.allocated, the allocator's memory (live + free) within 5% of its
# stats.resident. python3 (pymalloc): the total within 2% of Rss, its
# arenas (mapped by the program) within 5% of sys._debugmallocstats.
# memcached (150,000 items of 1 KiB): the total within 2% of Rss, live
# heap objects within 5% of its own count (total_malloced + hash_bytes).
# nginx (a master and two workers: one process tree): the merged profile's
# samples of each pid between that process's Rss before and after the
# request (a member's first answer maps the symbolizer's files).
# Usage: test_memory.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so

top() { # FILE [ARGS...]: go tool pprof -top in bytes, every node
    local f=$1
    shift
    pp_pprof -top -nodefraction=0 -nodecount=100000 -unit=B "$@" "$f" 2>/dev/null
}
cum() { # FILE NAME: the cumulative bytes of the node named NAME
    top "$1" | awk -v n="$2" '{ line = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", line) }
        line == n { v = $4; sub(/B$/, "", v); print v; exit }'
}
total() { top "$1" | sed -n 's/^Showing nodes accounting for [0-9.]*B, [0-9.]*% of \([0-9]*\)B total.*/\1/p'; }
rollup() { sed -n 's/.*smaps_rollup said \([0-9]*\) as they were read.*/\1/p' <(top "$1"); }
rss_now() { awk '/^Rss:/ { print $2 * 1024 }' "/proc/$1/smaps_rollup"; }
vma_rss() { # PID ADDR: the Rss of the mapping that holds ADDR (hex), bytes
    local a=$((16#$2)) in=0 l
    while read -r l; do
        if [[ $l =~ ^([0-9a-f]+)-([0-9a-f]+)\  ]]; then
            in=0
            ((16#${BASH_REMATCH[1]} <= a && a < 16#${BASH_REMATCH[2]})) && in=1
        elif ((in)) && [[ $l =~ ^Rss:\ +([0-9]+) ]]; then
            echo $((BASH_REMATCH[1] * 1024))
            return
        fi
    done <"/proc/$1/smaps"
}
field() { sed -n "s/^$1=//p" "$TMP/prog.out"; }

fetch_total() { # NAME PID URL FILE: fetches the memory profile, checks its total
    local before after
    before=$(rss_now "$2")
    curl -sf --max-time 60 -o "$4" "$3/memory"
    after=$(rss_now "$2")
    check_total "$1" "$4" "$before" "$after"
}
check_total() { # NAME FILE BEFORE AFTER
    local t r
    t=$(total "$2")
    r=$(rollup "$2")
    pp_check "$1: profile total $t B within 2% of smaps_rollup's Rss $r B at the same moment" within 2 "$t" "$r"
    pp_check "$1: total $t B between the Rss before ($3 B) and after ($4 B) the request, within 2%" \
        pp_in_range "$t" "$(awk -v x="$3" 'BEGIN { print x * 0.98 }')" "$(awk -v x="$4" 'BEGIN { print x * 1.02 }')"
}

# --- prog_memory
mkfifo "$TMP/in"
pp_start prog env LD_PRELOAD="$LIB" LIBPPROF_HEAP_RATE=8192 LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_PRINT_ADDR=1 \
    "$BUILD/tests/prog_memory" "$TMP/in"
exec 7<>"$TMP/in"
pp_wait_line "$TMP/prog.out" '^ready$' 20 "$PID" >/dev/null || pp_give_up "prog_memory did not start"
URL=$(pp_serving_url prog "$PID")
fetch_total prog_memory "$PID" "$URL" "$TMP/m.pb.gz"
v=$(cum "$TMP/m.pb.gz" "[memory: mapped by the program with mmap]")
a=$(cum "$TMP/m.pb.gz" "arena_map(unsigned long) [clone .constprop.0]")
[ -n "$a" ] || a=$(top "$TMP/m.pb.gz" | awk '/arena_map/ { v = $4; sub(/B$/, "", v); print v; exit }')
pp_check "mapped by the program $v B, of it under arena_map $a B, within 5% of the $(field arena_bytes) B touched" \
    within 5 "$a" "$(field arena_bytes)"
v=$(cum "$TMP/m.pb.gz" "[memory: live heap objects]")
pp_check "live heap objects $v B within 5% of mallinfo2's $(field mallinfo_inuse) B in use" \
    within 5 "$v" "$(field mallinfo_inuse)"
v=$(cum "$TMP/m.pb.gz" "[glibc malloc: free memory it holds resident]")
pp_check "held free by glibc $v B within 5% of mallinfo2's $(field mallinfo_free) B of free chunks" \
    within 5 "$v" "$(field mallinfo_free)"
while read -r _ name lo _; do
    want=$(vma_rss "$PID" "$lo")
    v=$(cum "$TMP/m.pb.gz" "[stack: $name]")
    pp_check "[stack: $name] $v B within 5% of its stack mapping's Rss $want B" within 5 "$v" "$want"
done < <(grep '^stack ' "$TMP/prog.out")
pp_pprof_shows "-tagfocus memory=stack keeps the thread stacks only" '^Showing nodes accounting for .*\[stack: worker-0\]|\[stack: worker-0\]' \
    -top -tagfocus memory=stack "$TMP/m.pb.gz"
n=$(top "$TMP/m.pb.gz" -tagfocus memory=stack | grep -c 'arena_map')
pp_check "-tagfocus memory=stack leaves the arena out" test "$n" = 0
curl -sf --max-time 30 -o "$TMP/m.folded" "$URL/memory?format=folded"
pp_check "format=folded roots the arena's stack in [memory: mapped by the program with mmap]" \
    grep -q '^\[memory: mapped by the program with mmap\];.*arena_map' "$TMP/m.folded"

curl -sf --max-time 30 -o "$TMP/w.pb.gz" "$URL/memory?seconds=3" &
cpid=$!
sleep 1
echo grow >&7
pp_wait_line "$TMP/prog.out" '^grown$' 10 "$PID" >/dev/null
wait $cpid
v=$(top "$TMP/w.pb.gz" -sample_index=resident_change_space | awk '/arena_map/ { v = $4; sub(/B$/, "", v); print v; exit }')
pp_check "memory?seconds=3: arena_map's resident change $v B within 5% of the 16 MiB touched meanwhile" \
    within 5 "$v" $((16 << 20))
exec 7>&-

# --- redis over jemalloc
if command -v redis-server >/dev/null; then
    rport=$(pp_free_port)
    pp_start redis env LD_PRELOAD="$LIB" LIBPPROF_HEAP_RATE=8192 LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_PRINT_ADDR=1 \
        redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$TMP"
    rpid=$PID
    RURL=$(pp_serving_url redis "$rpid")
    for i in $(seq 1 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$rport" eval "for i=1,1000000 do redis.call('SET','key:'..i,string.rep('v',200)) end return 1" 0 >/dev/null
    redis-cli -p "$rport" eval "for i=1,1000000 do if i%4~=0 then redis.call('DEL','key:'..i) end end return 1" 0 >/dev/null
    fetch_total "redis after deleting 3 of 4 keys" "$rpid" "$RURL" "$TMP/r.pb.gz"
    stats=$(top "$TMP/r.pb.gz" | grep '^jemalloc (mallctl')
    allocated=$(sed -n 's/.*allocated \([0-9]*\),.*/\1/p' <<<"$stats")
    resident=$(sed -n 's/.*resident \([0-9]*\),.*/\1/p' <<<"$stats")
    live=$(cum "$TMP/r.pb.gz" "[memory: live heap objects]")
    free=$(cum "$TMP/r.pb.gz" "[memory: held free by the allocator]")
    pp_check "redis: live heap objects $live B within 5% of jemalloc's stats.allocated $allocated B" \
        within 5 "$live" "$allocated"
    pp_check "redis: the allocator's memory $((live + free)) B (of it $free B free) within 5% of stats.resident $resident B" \
        within 5 $((live + free)) "$resident"
else
    pp_skip "redis-server is not installed"
fi

# --- memcached: 1 MiB slab pages from malloc (glibc maps them)
if command -v memcached >/dev/null; then
    mport=$(pp_free_port)
    pp_start mc env LD_PRELOAD="$LIB" LIBPPROF_HEAP_RATE=8192 LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_PRINT_ADDR=1 \
        memcached -p "$mport" -l 127.0.0.1 -U 0 -m 1024 -u "$(id -un)"
    mpid=$PID
    MURL=$(pp_serving_url mc "$mpid")
    /usr/bin/python3 - "$mport" >"$TMP/mc.stats" <<'PY'
import socket, sys, time
for _ in range(50):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); break
    except OSError:
        time.sleep(0.1)
val = b"x" * 1024
for b in range(150):
    s.sendall(b"".join(b"set k%d 0 0 1024 noreply\r\n%s\r\n" % (b * 1000 + i, val) for i in range(1000)))
s.sendall(b"stats\r\nstats slabs\r\n")
buf = b""
while buf.count(b"END\r\n") < 2:
    buf += s.recv(65536)
print(buf.decode().replace("\r", ""))
PY
    fetch_total "memcached with 150,000 items of 1 KiB" "$mpid" "$MURL" "$TMP/mc.pb.gz"
    own=$(awk '/STAT (total_malloced|hash_bytes) / { s += $3 } END { print s }' "$TMP/mc.stats")
    v=$(cum "$TMP/mc.pb.gz" "[memory: live heap objects]")
    pp_check "memcached: live heap objects $v B within 5% of its own total_malloced + hash_bytes $own B" within 5 "$v" "$own"
else
    pp_skip "memcached is not installed"
fi

# --- nginx: a master and two workers, one process tree
if command -v nginx >/dev/null; then
    . "$(dirname "$0")/services/nginx_conf.sh"
    mkdir -p "$TMP/nginx/logs"
    nport=$(pp_free_port)
    nginx_conf "$TMP/nginx" "$nport" 256
    if pp_serve ngx env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf"; then
        master=$PID
        sleep 1
        pids="$master $(ps -o pid= --ppid "$master" | tr -d ' ')"
        declare -A before
        for p in $pids; do before[$p]=$(rss_now "$p"); done
        curl -sf --max-time 60 -o "$TMP/n.pb.gz" "http://127.0.0.1:$PORT/debug/pprof/memory"
        for p in $pids; do
            v=$(top "$TMP/n.pb.gz" -tagfocus "pid=$p" | sed -n 's/^Showing nodes accounting for \([0-9]*\)B, .*/\1/p')
            r=$(rss_now "$p")
            pp_check "nginx: the tree's memory profile, pid $p: $v B between its Rss before (${before[$p]} B) and after ($r B), within 2%" \
                pp_in_range "$v" "$(awk -v x="${before[$p]}" 'BEGIN { print x * 0.98 }')" "$(awk -v x="$r" 'BEGIN { print x * 1.02 }')"
        done
    else
        pp_bad "nginx under LD_PRELOAD did not serve" "$(cat "$TMP/ngx.err" 2>/dev/null)"
    fi
else
    pp_skip "nginx is not installed"
fi

# --- python3: pymalloc's arenas are mmap'd
cat >"$TMP/py.py" <<'PY'
import sys
a = [bytes(1000) for _ in range(200000)]
d = {str(i): str(i) * 2 for i in range(300000)}
sys._debugmallocstats()
print("ready", flush=True)
open(sys.argv[1]).readline()
PY
mkfifo "$TMP/pyin"
pp_start py env LD_PRELOAD="$LIB" LIBPPROF_HEAP_RATE=8192 LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_PRINT_ADDR=1 \
    /usr/bin/python3 "$TMP/py.py" "$TMP/pyin"
exec 8<>"$TMP/pyin"
pypid=$PID
pp_wait_line "$TMP/py.out" '^ready$' 30 "$pypid" >/dev/null || pp_give_up "python3 did not start"
fetch_total python3 "$pypid" "$(pp_serving_url py "$pypid")" "$TMP/p.pb.gz"
arenas=$(awk '/^# arenas allocated current/ { gsub(/,/, "", $NF); print $NF * 1048576; exit }' "$TMP/py.err")
v=$(cum "$TMP/p.pb.gz" "[memory: mapped by the program with mmap]")
pp_check "python3: mapped by the program $v B within 5% of pymalloc's $arenas B of arenas" within 5 "$v" "$arenas"
exec 8>&-
pp_finish
