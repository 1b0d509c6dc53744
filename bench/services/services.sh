# services.sh: how bench/services/run.sh starts, loads and stops each of
# Debian's services (redis, memcached, nginx, postgresql); sourced by
# run.sh, never run. For each service NAME:
#
#   svc_NAME_setup           once, before the first run (data directory...)
#   svc_NAME_start ENV...    starts it with the environment assignments
#                            ENV (none: without libpprof) pinned to
#                            $SVC_CPUS, sets SVC_PID to the process whose
#                            tree is the service, and waits until it serves
#   svc_NAME_load warm|full  its own load tool, pinned to $TOOL_CPUS: a
#                            small warm-up or the fixed measured work
#   svc_NAME_begin, svc_NAME_finish, svc_NAME_release  (optional, instead
#                            of load full) the measured work in steps:
#                            begin connects the clients, finish lets them
#                            work and returns when they are done, release
#                            lets them disconnect
#   svc_NAME_stop            stops it and waits for it to exit
#   svc_NAME_work            one line saying what the full work is
#   svc_NAME_idle            (optional) true when no transient process
#                            (a client's backend) is left
#
# The work sizes come from the environment (REDIS_N, MC_N, NGINX_N, PG_N)
# and default to about 2-3.5 s of the service's CPU on the machines of
# bench/RESULTS.md. Needs $WORK (a scratch directory) and $HERE
# (bench/services).

REDIS_N=${REDIS_N:-150000}
MC_N=${MC_N:-20000}
NGINX_N=${NGINX_N:-200000}
PG_N=${PG_N:-15000}

# SVC_PIN: the prefix that pins a service to $SVC_CPUS (an array, so that a
# service started with "${SVC_PIN[@]}" CMD & is $!, not a subshell)
SVC_PIN=()
if [ -n "$SVC_CPUS" ]; then
    SVC_PIN=(taskset -c "$SVC_CPUS")
fi

# pinned KIND CMD...: CMD pinned to $SVC_CPUS (KIND svc) or $TOOL_CPUS (tool)
pinned() {
    local cpus=$SVC_CPUS
    [ "$1" = tool ] && cpus=$TOOL_CPUS
    shift
    if [ -n "$cpus" ]; then
        taskset -c "$cpus" "$@"
    else
        "$@"
    fi
}

# free_port: a TCP port nobody listens on now
. "$ROOT/tests/integration/services/nginx_conf.sh"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: up to 20 s for a listener on 127.0.0.1:PORT
wait_port() {
    timeout 20 bash -c 'until (exec 3<>"/dev/tcp/127.0.0.1/$0") 2>/dev/null; do sleep 0.05; done' "$1" ||
        { echo "nothing listens on 127.0.0.1:$1" >&2; return 1; }
}

# stop_pid PID SIGNAL: signals PID (a child of this shell) and waits for it
stop_pid() {
    kill -"$2" "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# ---- redis: redis-benchmark, REDIS_N SETs then REDIS_N GETs, 50 clients,
# 100,000 keys, values of 200 bytes
svc_redis_setup() { :; }
svc_redis_start() {
    SVC_PORT=$(free_port)
    "${SVC_PIN[@]}" env "$@" redis-server --port "$SVC_PORT" --bind 127.0.0.1 --save "" --appendonly no \
        >"$WORK/redis.log" 2>&1 &
    SVC_PID=$!
    wait_port "$SVC_PORT"
}
svc_redis_load() {
    local n=$REDIS_N
    [ "$1" = warm ] && n=$((REDIS_N / 20))
    pinned tool redis-benchmark -p "$SVC_PORT" -t set,get -n "$n" -r 100000 -d 200 -c 50 -q \
        >"$WORK/redis-benchmark.out" 2>&1
}
svc_redis_stop() { stop_pid "$SVC_PID" TERM; }
svc_redis_work() { echo "redis-benchmark -t set,get -n $REDIS_N -r 100000 -d 200 -c 50 ($((2 * REDIS_N)) requests)"; }

# ---- memcached (2 worker threads): memcslap, 4 threads x MC_N sets, then
# 4 x MC_N gets
svc_memcached_setup() { :; }
svc_memcached_start() {
    SVC_PORT=$(free_port)
    "${SVC_PIN[@]}" env "$@" memcached -u root -l 127.0.0.1 -p "$SVC_PORT" -m 1024 -t 2 \
        >"$WORK/memcached.log" 2>&1 &
    SVC_PID=$!
    wait_port "$SVC_PORT"
}
svc_memcached_load() {
    local n=$MC_N t
    [ "$1" = warm ] && n=$((MC_N / 20))
    for t in set get; do
        pinned tool memcslap --servers="127.0.0.1:$SVC_PORT" --test=$t --concurrency=4 \
            --execute-number="$n" >"$WORK/memcslap.out" 2>&1
    done
}
svc_memcached_stop() { stop_pid "$SVC_PID" TERM; }
svc_memcached_work() { echo "memcslap --concurrency=4 --execute-number=$MC_N, --test=set then --test=get ($((8 * MC_N)) operations)"; }

# ---- nginx (nginx-light: a master and two workers, reuseport): wrk with
# one thread and 20 connections until NGINX_N responses (wrk_count.lua)
svc_nginx_setup() {
    mkdir -p "$WORK/nginx/logs"
}
svc_nginx_start() {
    local dir=$WORK/nginx
    SVC_PORT=$(free_port)
    nginx_conf "$dir" "$SVC_PORT" 256
    "${SVC_PIN[@]}" env "$@" nginx -p "$dir" -c "$dir/nginx.conf" >"$WORK/nginx.log" 2>&1 &
    SVC_PID=$!
    wait_port "$SVC_PORT"
    # both workers up (the port answers as soon as the first listens)
    local i
    for i in $(seq 100); do
        [ "$(pgrep -c -P "$SVC_PID")" -ge 2 ] && break
        sleep 0.05
    done
}
svc_nginx_load() {
    local n=$NGINX_N
    [ "$1" = warm ] && n=$((NGINX_N / 20))
    WRK_N=$n pinned tool wrk -t1 -c20 -d600s -s "$HERE/wrk_count.lua" "http://127.0.0.1:$SVC_PORT/" \
        >"$WORK/wrk.out" 2>&1
    grep -q "^responses $n\$" "$WORK/wrk.out" || { cat "$WORK/wrk.out" >&2; return 1; }
}
svc_nginx_stop() { stop_pid "$SVC_PID" TERM; }
svc_nginx_work() { echo "wrk -t1 -c20 until $NGINX_N responses of 'hello' (bench/services/wrk_count.lua)"; }

# ---- postgresql (runuser, its child the postmaster, the postmaster's
# background processes and a backend per connection): pgbench -S
# (select-only), 4 clients x PG_N transactions, scale 2, no vacuum before
# (-n); each run starts a postmaster afresh over the same data directory
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1)
svc_postgresql_setup() {
    local dir=$WORK/pg
    mkdir -p "$dir"
    chown postgres "$dir"
    setpriv --reuid=postgres --regid=postgres --init-groups "$PG_BIN/initdb" -D "$dir/data" -A trust \
        >"$WORK/initdb.log" 2>&1
    svc_postgresql_start
    setpriv --reuid=postgres --regid=postgres --init-groups "$PG_BIN/pgbench" -h "$dir" -p "$SVC_PORT" \
        -i -s 2 postgres >"$WORK/pgbench-i.log" 2>&1
    svc_postgresql_stop
}
svc_postgresql_start() {
    local dir=$WORK/pg i
    SVC_PORT=$(free_port)
    # runuser, not setpriv, and the preload after it: setpriv keeps its
    # capabilities on its own thread only, so with libpprof's threads in
    # the process glibc's setresgid fails on them and aborts
    "${SVC_PIN[@]}" runuser -u postgres -- env "$@" "$PG_BIN/postgres" -D "$dir/data" -k "$dir" \
        -p "$SVC_PORT" -c listen_addresses= >"$WORK/postgres.log" 2>&1 &
    SVC_PID=$!
    for i in $(seq 300); do
        setpriv --reuid=postgres --regid=postgres --init-groups "$PG_BIN/pg_isready" -q -h "$dir" \
            -p "$SVC_PORT" && return 0
        sleep 0.1
    done
    echo "postgres did not start" >&2
    cat "$WORK/postgres.log" >&2
    return 1
}
svc_postgresql_load() {
    pinned tool setpriv --reuid=postgres --regid=postgres --init-groups "$PG_BIN/pgbench" -h "$WORK/pg" \
        -p "$SVC_PORT" -n -S -c 4 -t $((PG_N / 20)) postgres >"$WORK/pgbench.out" 2>&1
}
# pg_clients: how many backends serve clients now
pg_clients() {
    pgrep -c -P "$(head -1 "$WORK/pg/data/postmaster.pid")" -f '\[local\]' || true
}
svc_postgresql_idle() { [ "$(pg_clients)" = 0 ]; }
# the measured work: pgbench's clients connect, then wait at a gate
# (pgbench_gated.sql) until svc_postgresql_finish opens it, so that a CPU
# profile started in between covers their backends; after their last
# transaction they wait again, until svc_postgresql_release lets them
# disconnect. One pgbench thread per client (-j 4): a client waiting in
# \shell holds up its whole thread.
svc_postgresql_begin() {
    local gate=$WORK/pg/gate i
    rm -f "$gate" "$gate.end" "$gate.exit"
    pinned tool setpriv --reuid=postgres --regid=postgres --init-groups "$PG_BIN/pgbench" -h "$WORK/pg" \
        -p "$SVC_PORT" -n -f "$HERE/pgbench_gated.sql" -D started=0 -D done=0 -D last="$PG_N" \
        -D gate="$gate" -D gate_end="$gate.end" -D gate_exit="$gate.exit" -c 4 -j 4 -t "$PG_N" \
        postgres >"$WORK/pgbench.out" 2>&1 &
    PG_LOADER=$!
    # the 4 backends are up
    for i in $(seq 200); do
        [ "$(pg_clients)" -ge 4 ] && return 0
        sleep 0.05
    done
    echo "pgbench's clients did not connect" >&2
    cat "$WORK/pgbench.out" >&2
    return 1
}
# returns once every client has done its last transaction
svc_postgresql_finish() {
    local -a done=()
    touch "$WORK/pg/gate"
    # polled with builtins (and sleep): no other process on the CPUs
    while [ "${#done[@]}" -lt 4 ]; do
        kill -0 "$PG_LOADER" 2>/dev/null || { cat "$WORK/pgbench.out" >&2; return 1; }
        sleep 0.05
        [ -e "$WORK/pg/gate.end" ] && mapfile -t done <"$WORK/pg/gate.end"
    done
}
# lets the clients disconnect (their backends exit)
svc_postgresql_release() {
    touch "$WORK/pg/gate.exit"
    wait "$PG_LOADER"
    grep -q "^number of transactions actually processed: $((4 * PG_N))/" "$WORK/pgbench.out" ||
        { cat "$WORK/pgbench.out" >&2; return 1; }
}
# SIGINT to the postmaster (runuser's child): fast shutdown
svc_postgresql_stop() {
    kill -INT "$(head -1 "$WORK/pg/data/postmaster.pid")" 2>/dev/null || true
    wait "$SVC_PID" 2>/dev/null || true
}
svc_postgresql_work() { echo "pgbench -n -c 4 -j 4 -t $PG_N -f pgbench_gated.sql (-S's SELECT between gates), scale 2 ($((4 * PG_N)) transactions)"; }
