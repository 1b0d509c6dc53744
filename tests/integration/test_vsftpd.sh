#!/usr/bin/env bash
# test_vsftpd.sh: Debian's vsftpd under libpprof, standalone in the
# foreground as Debian's unit runs it, with its defaults for isolation
# (each session in new IPC and network namespaces; seccomp_sandbox, which
# left these anonymous sessions at "Seccomp: 0"),
# serving anonymous downloads to an FTP client in python3
# (test-labels: plain-only slow)
#
# Each session process sets its address-space limit (RLIMIT_AS) to
# 200 MiB. The profiler's own mappings (its heap's reserved region, its
# threads' stacks) counted in it: every session answered "500 OOPS: mmap"
# and no file was sent.
# - without libpprof, every download of a 4 s run completes;
# - with it, every download completes too, at a rate within a factor of 2
#   of the run without, and the session's kernel limit is 200 MiB plus the
#   profiler's part;
# - every kind of profile of the listening process answers 200 meanwhile;
# - SIGTERM ends vsftpd.
# Usage: test_vsftpd.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"

if [ ! -x /usr/sbin/vsftpd ]; then
    pp_skip "vsftpd is not installed"
    pp_finish
fi
[ "$(id -u)" = 0 ] || { pp_skip "not root"; pp_finish; }
D=$TMP/vsftpd
mkdir -p "$D/pub" /var/run/vsftpd/empty
chmod 755 "$TMP" "$D" "$D/pub"
head -c 100000 /dev/urandom >"$D/pub/f.bin"
chmod 644 "$D/pub/f.bin"
FPORT=$(pp_free_port)
# Debian's /etc/vsftpd.conf, anonymous downloads from $D/pub instead of
# local users, on a loopback port (the sandbox and isolation: vsftpd's
# defaults, as there).
cat >"$D/vsftpd.conf" <<EOF
listen=YES
listen_address=127.0.0.1
listen_port=$FPORT
anonymous_enable=YES
anon_root=$D/pub
local_enable=NO
write_enable=NO
dirmessage_enable=YES
use_localtime=YES
xferlog_enable=YES
vsftpd_log_file=$D/vsftpd.log
connect_from_port_20=YES
secure_chroot_dir=/var/run/vsftpd/empty
pam_service_name=vsftpd
pasv_min_port=30000
pasv_max_port=40000
EOF

# load SECONDS: one FTP session downloading f.bin again and again; prints
# the downloads and the complete ones, and the first error.
load() {
    python3 - "$FPORT" "$1" <<'EOF'
import ftplib, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
n = ok = 0
err = ""
end = time.time() + secs
try:
    f = ftplib.FTP()
    f.connect("127.0.0.1", port, timeout=10)
    f.login()
    while time.time() < end:
        buf = bytearray()
        n += 1
        f.retrbinary("RETR f.bin", buf.extend)
        ok += len(buf) == 100000
except Exception as e:
    err = str(e).strip()
print(n, ok, err)
EOF
}

# start WAY: vsftpd in the foreground, preloaded unless WAY is "without".
start() {
    local pre=(env)
    [ "$1" = without ] || pre=(env LD_PRELOAD="$BUILD/libpprof.so" LIBPPROF_ADDR=127.0.0.1:$PORT)
    pp_start "vsftpd-$1" "${pre[@]}" /usr/sbin/vsftpd "$D/vsftpd.conf"
    VS=$PID
    for _ in $(seq 50); do
        curl -sS --max-time 2 -o /dev/null "ftp://127.0.0.1:$FPORT/f.bin" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

PORT=$(pp_free_port)
start without || pp_give_up "vsftpd did not serve without libpprof" vsftpd-without
read -r n0 ok0 err0 < <(load 4)
pp_check "without libpprof, every download completes ($ok0 of $n0${err0:+; $err0})" \
    sh -c "[ '${n0:-0}' -gt 20 ] && [ '$ok0' = '$n0' ]"
kill -TERM "$VS"
pp_check "SIGTERM ends vsftpd (without)" pp_wait_gone "$VS" 50 0.1

base=http://127.0.0.1:$PORT/debug/pprof
start with
pp_wait_http "$base/cmdline" 10 "$VS" || pp_give_up "vsftpd did not serve the endpoint" vsftpd-with
load 4 >"$TMP/load.out" &
ld=$!
session=""
for _ in $(seq 50); do # the process that sends the files: the listener's grandchild
    for c in $(pgrep -P "$VS"); do session=$(pgrep -P "$c" | head -1); done
    [ -n "$session" ] && break
    sleep 0.05
done
limit=$(awk '/^Max address space/ { print $4 }' "/proc/$session/limits" 2>/dev/null)
pp_check "a session process ($session) has its 200 MiB plus the profiler's part ($limit bytes)" \
    sh -c "[ -n '$limit' ] && [ '$limit' != unlimited ] && [ '$limit' -gt $((200 << 20)) ]"
codes=$(pp_every_kind "$base")
wait $ld
read -r n1 ok1 err1 <"$TMP/load.out"
pp_check "with libpprof, every download completes ($ok1 of $n1${err1:+; $err1})" \
    sh -c "[ '${n1:-0}' -gt 20 ] && [ '$ok1' = '$n1' ]"
pp_check "downloads ran at a rate within a factor of 2 of the run without ($n1 for $n0 in 4 s)" \
    test "$((n1 * 2))" -ge "${n0:-0}"
pp_check "every kind of profile of the listening process answers 200 ($codes)" \
    sh -c "! echo '$codes' | grep -q ':[^2]'"
kill -TERM "$VS"
pp_check "SIGTERM ends vsftpd" pp_wait_gone "$VS" 50 0.1
pp_finish
