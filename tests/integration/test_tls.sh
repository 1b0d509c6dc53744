#!/usr/bin/env bash
# test-labels: plain-only slow
# test_tls.sh: HTTPS on the built-in server (preload mode, prog_plain),
# with certificates made here by openssl. With LIBPPROF_TLS_CERT and _KEY:
# the line saying where it serves says https; curl and go tool pprof read
# profiles; a plain-HTTP request to the port is closed at once. With
# LIBPPROF_TLS_CLIENT_CA too, on 0.0.0.0 with no token (a client CA is
# authentication): no client certificate, or one another CA signed, gets
# 403 with its reason; the CA's client certificate gets 200, with curl and
# with pprof -tls_cert -tls_key -tls_ca (CPU and heap profiles). A
# certificate without a key, and an unreadable certificate, stop the
# server from starting with the reason.
#
# go tool pprof fetches URLs with a client of its own that ignores the
# -tls_* flags (they serve only its symbol requests); it verifies a server
# against SSL_CERT_FILE, or not at all with https+insecure://, but cannot
# send a client certificate. The standalone pprof (the same google/pprof
# code, built here from Debian's golang-github-google-pprof-dev) honours
# -tls_cert, -tls_key and -tls_ca, and is the client-certificate client.
# Usage: test_tls.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
LIB=$BUILD/libpprof.so
PROG=$BUILD/tests/prog_plain

# --- certificates: a CA, the server's (for 127.0.0.1), a client's, and a
# client's signed by another CA
cd "$TMP"
mk_ca() { # NAME
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=$1" -keyout "$1.key" -out "$1.pem" 2>/dev/null
}
mk_cert() { # NAME CA EXT
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
        -keyout "$1.key" -out "$1.csr" 2>/dev/null &&
        printf '%s\n' "$3" >"$1.ext" &&
        openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
            -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
if ! { mk_ca ca && mk_ca otherca &&
    mk_cert server ca "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" &&
    mk_cert client ca "extendedKeyUsage=clientAuth" &&
    mk_cert stranger otherca "extendedKeyUsage=clientAuth"; }; then
    pp_give_up "openssl makes the test certificates"
fi
cd - >/dev/null
PPROF_BIN=$TMP/pprof
if ! (cd "$TMP" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$TMP/gocache" \
    go build -o "$PPROF_BIN" github.com/google/pprof) >"$TMP/pprof-build.log" 2>&1; then
    pp_give_up "the standalone pprof builds from golang-github-google-pprof-dev" pprof-build "$TMP/pprof-build.log"
fi

# start_tls NAME ENV...: preloads prog_plain with ENV on port 0 and waits
# for the line saying where it serves; sets PID and URL.
start_tls() {
    local name=$1 line
    shift
    pp_start "$name" env LD_PRELOAD="$LIB" LIBPPROF_PRINT_ADDR=1 "$@" "$PROG" 120 -1
    line=$(pp_wait_line "$TMP/$name.err" 'libpprof: (serving|LIBPPROF_ADDR=)' 10 "$PID")
    URL=$(echo "$line" | sed -n 's|.*serving \(https*://[^ ]*\) .*|\1|p')
    URL=${URL/0.0.0.0/127.0.0.1}
    [ -n "$URL" ]
}
code() { curl -s -o "$TMP/body" -w '%{http_code}' --max-time 10 "$@"; }

# --- server certificate only
if ! start_tls tls LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_TLS_CERT="$TMP/server.pem" LIBPPROF_TLS_KEY="$TMP/server.key"; then
    pp_give_up "prog_plain serves HTTPS under LD_PRELOAD" tls
fi
pp_check "the serving line says https ($URL)" eval 'echo "$URL" | grep -q "^https://127.0.0.1:[0-9]*/debug/pprof/$"'
c=$(code --cacert "$TMP/ca.pem" "${URL}heap?debug=1")
pp_check "curl --cacert reads heap over HTTPS ($c)" eval 'test "$c" = 200 && grep -q "^heap profile:" "$TMP/body"'
c=$(code "${URL}heap")
pp_check "curl without the CA refuses the server's certificate ($c)" test "$c" = 000
plain=${URL/https:/http:}
start=$(date +%s%N)
c=$(code "${plain}heap")
ms=$((($(date +%s%N) - start) / 1000000))
pp_check "a plain-HTTP request to the HTTPS port is closed at once ($c in $ms ms)" \
    test "$c" = 000 -a "$ms" -lt 2000
SSL_CERT_FILE=$TMP/ca.pem pp_pprof -top "${URL}profile?seconds=2" >"$TMP/cpu.top" 2>&1
pp_check "go tool pprof (SSL_CERT_FILE naming the CA) reads a CPU profile over HTTPS" \
    grep -q 'busy_loop_for_preload' "$TMP/cpu.top"
pp_pprof -top "${URL/https:/https+insecure:}heap" >"$TMP/insecure.top" 2>&1
pp_check "go tool pprof https+insecure:// reads the heap profile" grep -q 'Type: inuse_space' "$TMP/insecure.top"
timeout 120 "$PPROF_BIN" -top -tls_ca "$TMP/ca.pem" "${URL}heap" >"$TMP/ca.top" 2>&1
pp_check "pprof -tls_ca reads the heap profile" grep -q 'Type: inuse_space' "$TMP/ca.top"
pp_stop "$PID" >/dev/null 2>&1

# --- client certificates, on every interface without a token
if ! start_tls mtls LIBPPROF_ADDR=0.0.0.0:0 LIBPPROF_TLS_CERT="$TMP/server.pem" LIBPPROF_TLS_KEY="$TMP/server.key" \
    LIBPPROF_TLS_CLIENT_CA="$TMP/ca.pem"; then
    pp_give_up "a client CA serves 0.0.0.0 without a token" mtls
fi
pp_ok "a client CA serves 0.0.0.0 without a token"
c=$(code --cacert "$TMP/ca.pem" "${URL}heap")
pp_check "no client certificate: 403 with the reason ($c: $(cat "$TMP/body"))" \
    eval 'test "$c" = 403 && grep -q "client certificate" "$TMP/body"'
c=$(code --cacert "$TMP/ca.pem" --cert "$TMP/stranger.pem" --key "$TMP/stranger.key" "${URL}heap")
pp_check "a client certificate another CA signed: refused ($c)" test "$c" = 403 -o "$c" = 000
c=$(code --cacert "$TMP/ca.pem" --cert "$TMP/client.pem" --key "$TMP/client.key" "${URL}heap?debug=1")
pp_check "the CA's client certificate: 200 ($c)" eval 'test "$c" = 200 && grep -q "^heap profile:" "$TMP/body"'
tls_flags=(-tls_ca "$TMP/ca.pem" -tls_cert "$TMP/client.pem" -tls_key "$TMP/client.key")
timeout 120 "$PPROF_BIN" -top "${tls_flags[@]}" "${URL}profile?seconds=2" >"$TMP/mcpu.top" 2>&1
pp_check "pprof -tls_cert -tls_key -tls_ca: the CPU profile" grep -q 'busy_loop_for_preload' "$TMP/mcpu.top"
timeout 120 "$PPROF_BIN" -sample_index=alloc_space -top "${tls_flags[@]}" "${URL}heap" >"$TMP/mheap.top" 2>&1
pp_check "pprof -tls_cert -tls_key -tls_ca: the heap profile" grep -q 'Type: alloc_space' "$TMP/mheap.top"
timeout 120 "$PPROF_BIN" -top -tls_ca "$TMP/ca.pem" "${URL}heap" >"$TMP/nocert.top" 2>&1
pp_check "pprof without a client certificate: 403" \
    eval '! grep -q "Type:" "$TMP/nocert.top" && grep -q "403 Forbidden" "$TMP/nocert.top"'
SSL_CERT_FILE=$TMP/ca.pem pp_pprof -top "${URL}heap" >"$TMP/gonocert.top" 2>&1
pp_check "go tool pprof (it sends no client certificate): 403" grep -q "403 Forbidden" "$TMP/gonocert.top"
pp_stop "$PID" >/dev/null 2>&1

# --- settings that cannot serve
pp_start nokey env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_TLS_CERT="$TMP/server.pem" "$PROG" 2 -1
line=$(pp_wait_line "$TMP/nokey.err" 'libpprof: LIBPPROF_ADDR=.*running unprofiled' 10 "$PID")
pp_check "a certificate without a key: not served, saying why ($line)" \
    eval 'echo "$line" | grep -q "both a certificate and a key"'
pp_stop "$PID" >/dev/null 2>&1
pp_start badcert env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:0 LIBPPROF_TLS_CERT="$TMP/missing.pem" \
    LIBPPROF_TLS_KEY="$TMP/server.key" "$PROG" 2 -1
line=$(pp_wait_line "$TMP/badcert.err" 'libpprof: LIBPPROF_ADDR=.*running unprofiled' 10 "$PID")
pp_check "an unreadable certificate: not served, saying why ($line)" \
    eval 'echo "$line" | grep -q "cannot read the TLS certificate"'
pp_stop "$PID" >/dev/null 2>&1
pp_finish
