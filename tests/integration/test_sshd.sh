#!/usr/bin/env bash
# test_sshd.sh: Debian's sshd under libpprof: every login succeeds while
# the tree is dumped and profiled, its sandboxed pre-auth children are
# never killed and are named on the index (test-labels: plain-only slow)
#
# A second sshd (openssh-server 9.2) on a free loopback port with its own
# config, host key and key-based root login, started daemonized as its
# init script starts it, preloaded. Each login forks a pre-auth child that
# chroots to /run/sshd, drops to user sshd, sets RLIMIT_NOFILE to 0 and
# enters a seccomp filter that kills it on any call it does not list.
# 30 logins while thread dumps of the tree are asked one after another
# (50 ms apart) and 1 s CPU (1000 Hz) and wall (400 Hz) profiles of the
# tree run back to back: all 30 succeed (before, a dump that reached the
# pre-auth child called rt_sigpending there and the filter killed it:
# 2 to 4 of 12 logins hung), sshd logs no killed child, the index names a
# pre-auth child as not profiled because it entered a seccomp filter, and
# after SIGTERM no process of this sshd is left (before: 10 in one run).
# Before the profiler registered the descriptors it holds for a moment,
# 1 login in about 300 failed with "Bad packet length": a thread dump
# closed the log that the re-exec'd child had just opened, and the child
# wrote its log lines to the client's socket (test_fd_churn.sh). A failed
# login is shown with the client's last debug lines and sshd's log lines
# that came with it. LOGINS=N runs N logins instead of 30.
# Usage: test_sshd.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

if [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null; then
    pp_skip "openssh-server is not installed"
    pp_finish
fi
D=$TMP/sshd
mkdir -p "$D" /run/sshd
chmod 755 /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$D/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$D/user_key"
cp "$D/user_key.pub" "$D/authorized_keys"
SPORT=$(pp_free_port)
cat >"$D/sshd_config" <<CONF
Port $SPORT
ListenAddress 127.0.0.1
HostKey $D/host_key
PidFile $D/sshd.pid
AuthorizedKeysFile $D/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
LogLevel VERBOSE
CONF
login() {
    timeout 8 ssh -v -E "$D/ssh.log" -i "$D/user_key" -p "$SPORT" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
        -o BatchMode=yes -o ConnectTimeout=6 root@127.0.0.1 echo logged-in 2>&1 || echo "exit $?"
}
PORT=$(pp_free_port)
LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT /usr/sbin/sshd -f "$D/sshd_config" -E "$D/sshd.log" \
    2>"$TMP/sshd.err"
pp_wait_http "http://127.0.0.1:$PORT/debug/pprof/cmdline" 10 || pp_give_up "sshd did not serve the endpoint" sshd
# the daemon writes its pid file after the command returned: wait for it
for _ in $(seq 50); do
    master=$(cat "$D/sshd.pid" 2>/dev/null)
    [ -n "$master" ] && break
    sleep 0.1
done
base=http://127.0.0.1:$PORT/debug/pprof
pp_check "sshd serves (master $master) and a login works" grep -q logged-in <<<"$(login)"

asker() {
    while [ ! -e "$TMP/stop" ]; do
        curl -sS --max-time 5 -o /dev/null "$base/goroutine?debug=2"
        curl -sS --max-time 5 "$base/" >>"$TMP/index.html"
        sleep 0.05
    done
}
profiler() {
    while [ ! -e "$TMP/stop" ]; do
        curl -sS --max-time 5 -o /dev/null "$base/profile?seconds=1&hz=1000"
        curl -sS --max-time 5 -o /dev/null "$base/wall?seconds=1&hz=400"
    done
}
asker &
ask=$!
profiler &
prof=$!
ok=0
failed=""
for i in $(seq ${LOGINS:-30}); do
    start=$(date +%s.%N)
    rm -f "$D/ssh.log"
    lines=$(wc -l <"$D/sshd.log")
    out=$(login)
    if grep -q logged-in <<<"$out"; then
        ok=$((ok + 1))
    else
        failed+="login $i at $start: ${out:-(no output)}"$'\n'
        failed+="$(grep -vE 'identity file|Reading config|Applying options' "$D/ssh.log" | tail -n 12)"$'\n'
        failed+="sshd: $(tail -n +$((lines + 1)) "$D/sshd.log" | tr -d '\0' | head -n 12)"$'\n'
    fi
done
touch "$TMP/stop"
wait $ask $prof
pp_check "every login succeeded while the tree was dumped and profiled ($ok of ${LOGINS:-30})" test $ok = ${LOGINS:-30}
[ -n "$failed" ] && pp_note "$failed"
bad=$(grep -iE 'killed|signal [0-9]|fatal' "$D/sshd.log" || true)
pp_check "sshd logged no killed or failed child" test -z "$bad"
[ -n "$bad" ] && pp_note "$(head -n 5 <<<"$bad")"
pp_check "the index names a pre-auth child as not profiled: it entered a seccomp filter" \
    grep -q 'not profiled: it entered a seccomp filter' "$TMP/index.html"
kill -TERM "$master"
left=""
for _ in $(seq 30); do
    left=$(pgrep -f "$D/sshd_config" || true)
    [ -z "$left" ] && break
    sleep 0.1
done
pp_check "no process of this sshd is left 3 s after SIGTERM (${left:-none})" test -z "$left"
[ -n "$left" ] && pkill -KILL -f "$D/sshd_config"
pp_finish
