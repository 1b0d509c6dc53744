# common.sh: helpers of the tests that run Debian's services under
# LD_PRELOAD (test_real_services.sh, test_daemons.sh); sourced after
# lib.sh and pp_init, never run. It sets LIB (the library to preload) and
# HERE (tests/integration).

LIB=$BUILD/libpprof.so
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$HERE/services/nginx_conf.sh"

# redis_memory PORT FIELD: one field of redis's INFO memory.
redis_memory() {
    redis-cli -p "$1" info memory | tr -d '\r' | sed -n "s/^$2://p"
}

# inuse_total FILE: the heap profile's in-use bytes, summed over samples.
inuse_total() {
    pp_pprof -raw "$1" 2>/dev/null |
        awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $1 ~ /^[0-9]+$/ && $4 ~ /:$/ { t += $4 } END { print t + 0 }'
}

# mc_stat PORT COMMAND KEY: one value of memcached's "COMMAND" (stats,
# stats slabs) over its text protocol.
mc_stat() {
    local out
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf '%s\r\nquit\r\n' "$2" >&3
    out=$(timeout 5 cat <&3)
    exec 3<&-
    awk -v k="$3" '$1 == "STAT" && $2 == k { sub(/\r$/, "", $3); print $3; exit }' <<<"$out"
}

# listening PORT: waits up to 10 s for a listener on 127.0.0.1:PORT. The
# libpprof endpoint answers from the service's first instant, its own port
# only once it has started: a load tool started before then finds nothing
# (redis-benchmark then spins without ever connecting).
listening() {
    local i
    for i in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# mc_load PORT TEST: memcslap's run against PORT; prints its seconds.
mc_load() {
    local s
    s=$(date +%s%N)
    memcslap --servers="127.0.0.1:$1" --test="$2" --concurrency=4 --execute-number=50000 >/dev/null 2>&1
    echo $(( ($(date +%s%N) - s) / 1000000 ))
}

# mc_load_gets PORT: two of memcslap's get runs
mc_load_gets() {
    mc_load "$1" get >/dev/null
    mc_load "$1" get >/dev/null
}

# cpu_under_load NAME BASE CMD...: a 2 s CPU profile from BASE while CMD
# (a load) runs; pprof's -top -cum of it in $TMP/NAME.cpu.top
cpu_under_load() {
    local name=$1 base=$2 loader
    shift 2
    ("$@" >/dev/null 2>&1) &
    loader=$!
    curl -sS --max-time 60 -o "$TMP/$name.cpu" "$base/profile?seconds=2"
    wait "$loader"
    pp_pprof -top -cum -nodecount=80 "$TMP/$name.cpu" >"$TMP/$name.cpu.top" 2>&1
}

# redis_load PORT: redis-benchmark's SET requests/s (300,000 requests,
# 300,000 keys, values of 200 bytes: strings that ask jemalloc for 204
# bytes and get a 224-byte block)
redis_load() {
    timeout 120 redis-benchmark -p "$1" -t set -n 300000 -r 300000 -d 200 -q 2>/dev/null |
        tr '\r' '\n' | sed -n 's/^SET: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}

# ratio A B: " (throughput with/without libpprof B/A)", or nothing; A and B
# are throughputs without and with libpprof, or times with and without
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf " (throughput with/without libpprof %.2f)", b / a }'
}
