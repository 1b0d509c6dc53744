#!/usr/bin/env bash
# test_named.sh: Debian's BIND 9.18 (named) under libpprof, started as
# root with -u bind (it drops to that user, keeping capabilities through
# libcap), serving an authoritative zone of 1,000 names to dnsperf
# (test-labels: plain-only slow)
#
# BIND allocates through jemalloc's mallocx and frees with sdallocx. The
# mallocx override did not exist, so the heap profile saw 0.6 MB of
# named's 27 MB.
# - without libpprof and with it, dnsperf loses no query; the rates are
#   noted;
# - under dnsperf, a 3 s CPU profile covers 90% to 110% of named's CPU
#   from /proc, and every kind of profile answers 200;
# - the heap profile's in-use bytes (1 KiB sampling) are within 10% of
#   what named counts it allocated (its statistics channel's
#   memory.Malloced; libuv's and OpenSSL's allocations are outside it)
#   after the load, and their growth over a zone of 20,000 more names
#   within 10% of that count's;
# - rndc reload answers while dnsperf runs; rndc stop ends named.
# Usage: test_named.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
. "$(dirname "$0")/services/common.sh" # inuse_total

if [ ! -x /usr/sbin/named ] || ! command -v dnsperf >/dev/null || ! id bind >/dev/null 2>&1; then
    pp_skip "bind9 or dnsperf is not installed"
    pp_finish
fi
[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }
D=$TMP/named
mkdir -p "$D"
chmod 755 "$TMP"
DPORT=$(pp_free_port)
CPORT=$(pp_free_port)
SPORT=$(pp_free_port)
PORT=$(pp_free_port)
base=http://127.0.0.1:$PORT/debug/pprof
# zone NAME COUNT: an authoritative zone of COUNT names
zone() {
    echo "\$TTL 300"
    echo "@ IN SOA ns.$1. admin.$1. 1 3600 600 86400 300"
    echo "@ IN NS ns"
    echo "ns IN A 127.0.0.1"
    seq "$2" | awk '{ printf "h%d IN A 10.%d.%d.%d\n", $1, int($1 / 65536) % 256, int($1 / 256) % 256, $1 % 256 }'
}
zone example.test 1000 >"$D/example.test.zone"
zone big.test 20000 >"$D/big.test.zone"
seq 1000 | sed 's/.*/h&.example.test A/' >"$D/queries"
cat >"$D/named.conf" <<EOF
options {
    directory "$D";
    listen-on port $DPORT { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    pid-file "$D/named.pid";
};
key rk { algorithm hmac-sha256; secret "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"; };
controls { inet 127.0.0.1 port $CPORT allow { 127.0.0.1; } keys { rk; }; };
statistics-channels { inet 127.0.0.1 port $SPORT allow { 127.0.0.1; }; };
zone "example.test" { type primary; file "$D/example.test.zone"; };
EOF
cat >"$D/rndc.conf" <<EOF
key rk { algorithm hmac-sha256; secret "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"; };
options { default-key rk; default-server 127.0.0.1; default-port $CPORT; };
EOF
chown -R bind "$D"
rndc() { command rndc -c "$D/rndc.conf" "$@"; }

# start WAY: named in the foreground, as root dropping to bind,
# preloaded unless WAY is "without"; NP is its pid.
start() {
    local pre=(env)
    [ "$1" = without ] || pre=(env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT LIBPPROF_HEAP_RATE=1024)
    pp_start "named-$1" "${pre[@]}" /usr/sbin/named -f -u bind -c "$D/named.conf"
    NP=$PID
    for _ in $(seq 100); do
        dig +short +time=1 +tries=1 -p "$DPORT" @127.0.0.1 h1.example.test A 2>/dev/null | grep -q '^10\.' && return 0
        pp_alive "$NP" || return 1
        sleep 0.1
    done
    return 1
}

# load SECONDS: dnsperf, 4 clients; prints "QPS LOST".
load() {
    dnsperf -s 127.0.0.1 -p "$DPORT" -d "$D/queries" -l "$1" -c 4 -t 2 2>&1 |
        awk '/Queries lost:/ { l = $3 } /Queries per second:/ { q = $4 } END { print q, l }'
}

# malloced: what named counts it allocated (its statistics channel)
malloced() {
    curl -sS --max-time 5 "http://127.0.0.1:$SPORT/json/v1/mem" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["memory"]["Malloced"])'
}

start without || pp_give_up "named did not answer without libpprof" named-without
read -r q0 lost0 < <(load 4)
pp_check "without libpprof, dnsperf lost no query (${lost0:-?} lost, $q0 per second)" test "${lost0:-x}" = 0
rndc stop >/dev/null 2>&1
pp_check "rndc stop ends named (without)" pp_wait_gone "$NP" 100 0.1

start with || pp_give_up "named did not answer with libpprof" named-with
pp_wait_http "$base/cmdline" 10 "$NP" || pp_give_up "named did not serve the endpoint" named-with
load 9 >"$TMP/load1" &
ld=$!
sleep 1
pp_check_coverage "of named under dnsperf" "$NP" 3 "$base"
codes=$(pp_every_kind "$base")
pp_check "rndc reload answers under dnsperf" sh -c "rndc -c '$D/rndc.conf' reload 2>&1 | grep -q successful"
wait $ld
read -r q1 lost1 <"$TMP/load1"
pp_note "dnsperf, 4 clients: $q0 queries/s without libpprof (4 s), $q1 with (9 s, profiles running for 8)"
pp_check "with libpprof, dnsperf lost no query (${lost1:-?} lost)" test "${lost1:-x}" = 0
pp_check "every kind of profile answers 200 under dnsperf ($codes)" sh -c "! echo '$codes' | grep -q ':[^2]'"

curl -sS --max-time 20 -o "$TMP/heap0.pb.gz" "$base/heap"
m0=$(malloced)
h0=$(inuse_total "$TMP/heap0.pb.gz")
pp_check "heap in use $h0 B, named's own count $m0 B (within 10%: libuv's and OpenSSL's allocations are not in its count)" \
    within 10 "$h0" "${m0:-0}"
echo "zone \"big.test\" { type primary; file \"$D/big.test.zone\"; };" >>"$D/named.conf"
rndc reconfig >/dev/null 2>&1
for _ in $(seq 50); do
    dig +short +time=1 +tries=1 -p "$DPORT" @127.0.0.1 h20000.big.test A 2>/dev/null | grep -q '^10\.' && break
    sleep 0.1
done
curl -sS --max-time 20 -o "$TMP/heap1.pb.gz" "$base/heap"
m1=$(malloced)
h1=$(inuse_total "$TMP/heap1.pb.gz")
pp_check "a zone of 20,000 names loaded: the heap grew $((h1 - h0)) B, named's own count $((${m1:-0} - ${m0:-0})) B (within 10%)" \
    within 10 "$((h1 - h0))" "$((${m1:-0} - ${m0:-0}))"
rndc stop >/dev/null 2>&1
pp_check "rndc stop ends named" pp_wait_gone "$NP" 100 0.1
pp_finish
