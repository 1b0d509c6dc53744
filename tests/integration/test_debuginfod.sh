#!/usr/bin/env bash
# test_debuginfod.sh: separate debug files fetched by build ID from a debuginfod
# (test-labels: plain-only slow)
#
# prog_stripped, copied and stripped (strip --strip-all: .dynsym only), its
# debug file (objcopy --only-keep-debug) served by Debian's debuginfod (-F
# on a directory of debug files; none beside the binaries, where libdwfl
# would find <name>.debug on its own), loaded with LD_PRELOAD:
#   with LIBPPROF_DEBUGINFOD_URLS naming the server: the first CPU profile
#     names its static functions with file:line and the always_inline one
#     as an inlined frame, the mapping [FN][FL][LN]; the file is in
#     LIBPPROF_DEBUGINFO_CACHE/<build-id>/debuginfo, byte for byte, asked
#     for once; the index's "Debug files" row counts it fetched;
#   with no URL, and with DEBUGINFOD_URLS alone: none of those names, no
#     [FN] on the mapping, no request reached the server, nothing cached;
#     with DEBUGINFOD_URLS alone the comments and the index say how to turn
#     fetching on; LIBPPROF_DEBUGINFOD=1 with DEBUGINFOD_URLS fetches, into
#     $XDG_CACHE_HOME/libpprof/debuginfo by default;
#   a copy carrying MiniDebugInfo (.gnu_debugdata, as Fedora's binaries do)
#     and no server: its static functions named, its mapping [FN] alone;
#   copies with patched build IDs: one the server does not know (404) and
#     one answered with an HTML page (200): "debuginfod" and "no debug
#     file" in the comments, nothing cached.
# The cache's bound: LIBPPROF_DEBUGINFO_CACHE_MB=1, two copies whose debug
# files are padded to 600 KiB (the second's URL list starting with a port
# where nothing listens): both named, then at most 1 MiB in the cache, the
# first one's file evicted, the second's kept; a 1.1 MiB one is not
# fetched, and the comment says it is over LIBPPROF_DEBUGINFO_CACHE_MB.
# A server that accepts and never answers (LIBPPROF_DEBUGINFOD_WAIT_MS=1500,
# LIBPPROF_DEBUGINFOD_TIMEOUT=5): profile?seconds=2 answers within 5 s,
# its comments say the build ID is pending, the index counts it pending;
# after the timeout the next profile says "no debug file", the connection
# closed; the program's longest gap between two rounds of its loop
# (dl_iterate_phdr and malloc in each) under 50 ms (a run without fetching
# is the reference, reported); a program whose fetch hangs exits within
# 3 s of SIGTERM (the time reported). A server that answers 3 s late
# (LIBPPROF_DEBUGINFOD_WAIT_MS=500): the first profile says pending, the
# next one names the functions.
# The cache without the server: a new process with the same cache names
# the functions; the standard client cache ($DEBUGINFOD_CACHE_PATH) is
# read and left as it was (with fetching off too: reported).
# memcached 1.6.18 built from Debian's source with -g -O2 (kept in
# BUILD/test-cache/memcached for the next runs), at 400 Hz under memcslap
# get load: the share of samples in memcached's own code whose leaf is
# named, unstripped and stripped with its debug file from the server,
# within 1 point (every sample's: reported); Debian's libevent, which has
# no debug file here, is reported missing in the first profile, not
# pending (the server answers 404 at once).
# Usage: test_debuginfod.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
. "$(dirname "$0")/lib_debuginfod.sh"
MC_VERSION=1.6.18
MC_CACHE=$BUILD/test-cache/memcached

# patch_bid FILE OLD NEW: another build ID, in place (the note's bytes)
patch_bid() {
    /usr/bin/python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1], bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
data = open(path, "rb").read()
if data.count(old) != 1:
    sys.exit("%s: the build ID is there %d times" % (path, data.count(old)))
open(path, "wb").write(data.replace(old, new))
PY
}

# shares FILE PATH: "ALL NAMED INMAP INMAP_NAMED", samples (libpprof's own
# work left out) and those whose leaf has a function name, over the whole
# profile and over PATH's mapping
shares() {
    pp_pprof -raw -symbolize=none "$1" 2>/dev/null | awk -v p="$2" '
        /^Samples:/ { s = 1; next }
        /^Locations/ { s = 0; l = 1; next }
        /^Mappings/ { l = 0; m = 1; next }
        s && $2 ~ /^[0-9]+:$/ { n++; cnt[n] = $1; leaf[n] = $3; next }
        s && /pprof\.work:/ { own[n] = 1; next }
        l && $1 ~ /^[0-9]+:$/ && $2 ~ /^0x/ { id = $1 + 0; map[id] = substr($3, 3); fn[id] = NF >= 4 ? 1 : 0; next }
        m && $1 ~ /^[0-9]+:$/ && $3 == p { mid = $1 + 0 }
        END {
            for (i = 1; i <= n; i++) {
                if (own[i]) continue
                all += cnt[i]; if (fn[leaf[i]]) named += cnt[i]
                if (map[leaf[i]] == mid) { inm += cnt[i]; if (fn[leaf[i]]) inmn += cnt[i] }
            }
            printf "%d %d %d %d\n", all, named, inm, inmn
        }'
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else print "nan" }'; }

# --- the programs and their debug files
dbg_stripped

# Three more builds of it, build IDs patched (A and B for the cache bound,
# their debug files padded to 600 KiB; C's debug file is not served).
head -c $((600 * 1024)) /dev/zero >"$TMP/pad"
head -c $((1100 * 1024)) /dev/zero >"$TMP/bigpad"
BID_a=aaaa${BID:4} BID_b=bbbb${BID:4} BID_c=cccc${BID:4} BID_d=dddd${BID:4}
for v in a b c d; do
    vbid=$v$v$v$v${BID:4}
    cp "$BIN/prog_stripped" "$BIN/prog_$v"
    patch_bid "$BIN/prog_$v" "$BID" "$vbid"
    if [ $v != c ]; then
        cp "$DBG/prog_stripped.debug" "$DBG/prog_$v.debug"
        patch_bid "$DBG/prog_$v.debug" "$BID" "$vbid"
        pad=$TMP/pad
        [ $v = d ] && pad=$TMP/bigpad
        objcopy --add-section .libpprof_test_pad="$pad" "$DBG/prog_$v.debug"
    fi
done
if [ "$(bid_of "$BIN/prog_a")" = "$BID_a" ] && [ "$(bid_of "$DBG/prog_b.debug")" = "$BID_b" ] &&
    [ "$(bid_of "$DBG/prog_d.debug")" = "$BID_d" ] && [ "$(stat -c %s "$DBG/prog_d.debug")" -gt 1048576 ] &&
    [ "$(stat -c %s "$DBG/prog_a.debug")" -gt $((600 * 1024)) ] && [ "$(stat -c %s "$DBG/prog_b.debug")" -gt $((600 * 1024)) ]; then
    pp_ok "builds A, B, C, D: build IDs $BID_a, $BID_b, $BID_c, $BID_d; debug files of $(stat -c %s "$DBG/prog_a.debug") B (A, B), $(stat -c %s "$DBG/prog_d.debug") B (D), none (C)"
else
    pp_bad "premise: the patched builds" "$(readelf -n "$BIN/prog_a" "$DBG/prog_b.debug" 2>&1)" "$(ls -l "$DBG")"
fi

# memcached from Debian's source, built once into BUILD/test-cache
mc_build() {
    local dir=$MC_CACHE/memcached-$MC_VERSION dirline sha file
    [ -x "$dir/memcached" ] && [ -e "$dir/.built" ] && return 0
    mkdir -p "$MC_CACHE"
    (
        flock 9
        [ -x "$dir/memcached" ] && [ -e "$dir/.built" ] && exit 0
        rm -rf "$dir" "$MC_CACHE/work"
        mkdir -p "$MC_CACHE/work"
        cd "$MC_CACHE/work" || exit 1
        curl -sSf --max-time 300 -o Sources.xz http://deb.debian.org/debian/dists/bookworm/main/source/Sources.xz || exit 1
        xz -dc Sources.xz | awk -v v="$MC_VERSION" '
            /^Package: / { p = ($2 == "memcached") } p && /^Version: / { p = ($2 ~ "^" v "-") }
            p && /^Directory: / { print "dir", $2 } p && /^Checksums-Sha256:/ { c = 1; next }
            p && c && /^ / { print "sha", $1, $3; next } { c = 0 }' >src.list
        dirline=$(awk '$1 == "dir" { print $2; exit }' src.list)
        [ -n "$dirline" ] || { echo "memcached $MC_VERSION is not in bookworm's Sources" >&2; exit 1; }
        while read -r _ sha file; do
            case $file in *.orig.tar.*|*.debian.tar.*) ;; *) continue ;; esac
            curl -sSf --max-time 300 -o "$file" "http://deb.debian.org/debian/$dirline/$file" || exit 1
            echo "$sha  $file" | sha256sum -c --quiet || exit 1
        done < <(grep '^sha ' src.list)
        tar xf memcached_"$MC_VERSION".orig.tar.* && cd memcached-"$MC_VERSION" || exit 1
        tar xf ../memcached_"$MC_VERSION"-*.debian.tar.*
        while read -r p; do
            case $p in ''|'#'*) continue ;; esac
            patch -p1 -s <"debian/patches/$p" || exit 1
        done <debian/patches/series
        ./configure CFLAGS='-g -O2' >../configure.log 2>&1 && make -j2 memcached >../make.log 2>&1 || exit 1
        cd "$MC_CACHE" && mv work/memcached-"$MC_VERSION" "$dir" && rm -rf work && touch "$dir/.built"
    ) 9>"$MC_CACHE/.lock" >"$TMP/mc-build.log" 2>&1
}
MC=$MC_CACHE/memcached-$MC_VERSION/memcached
t0=$SECONDS
if ! command -v memcslap >/dev/null; then
    pp_skip "memcached: memcslap (libmemcached-tools) is not installed"
    MC=
elif mc_build; then
    mkdir -p "$TMP/mc"
    cp "$MC" "$TMP/mc/memcached"
    objcopy --only-keep-debug "$TMP/mc/memcached" "$DBG/memcached.debug"
    strip --strip-all "$TMP/mc/memcached"
    MC_BID=$(bid_of "$MC")
    if [ ${#MC_BID} = 40 ] && nm "$MC" | grep -q ' process_command_ascii$' && nm "$TMP/mc/memcached" 2>&1 | grep -q 'no symbols'; then
        pp_ok "memcached $MC_VERSION from Debian's source ($((SECONDS - t0)) s; $MC): build ID $MC_BID, a stripped copy"
    else
        pp_bad "premise: memcached's build or its stripped copy" "build ID '$MC_BID'" "$(nm "$MC" 2>&1 | head -3)"
        MC=
    fi
else
    pp_bad "memcached $MC_VERSION could not be built from Debian's source" "$(tail -20 "$TMP/mc-build.log")" \
        "$(tail -20 "$MC_CACHE/work/make.log" "$MC_CACHE/work/configure.log" 2>/dev/null)"
    MC=
fi

# --- the debuginfod
dbg_serve
all=200
for b in "$BID_a" "$BID_b" "$BID_d" ${MC:+"$MC_BID"}; do
    c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$SERVER/buildid/$b/debuginfo")
    [ "$c" = 200 ] || all="$c for $b"
done
c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$SERVER/buildid/$BID_c/debuginfo")
if [ "$CODE" = 200 ] && [ "$all" = 200 ] && [ "$c" = 404 ]; then
    pp_ok "debuginfod on port $DPORT serves the debug files by build ID (C's: 404)"
else
    pp_give_up "debuginfod did not serve the debug files (prog_stripped: $CODE, others: $all, C: $c)" dbgd
fi

# --- 1. fetched from the server
C1=$TMP/cache1
start fetch LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$C1" -- "$BIN/prog_stripped"
cpu fetch1 3
first_pending=no
grep -q pending "$TMP/fetch1.comments" && first_pending=yes
pp_check "fetch: profile?seconds=3 answered 200 in $MS ms" test "$CODE" = 200
if named "$TMP/fetch1.pb.gz"; then
    pp_ok "fetch: the first profile names ${NAMES[*]} and hidden_inlined_mix (inline)"
    prof=$TMP/fetch1.pb.gz
else
    pp_bad "fetch: the first profile (LIBPPROF_DEBUGINFOD_WAIT_MS at its default) lacks the names (pending: $first_pending)" \
        "$(names "$TMP/fetch1.pb.gz")" "$(cat "$TMP/fetch1.comments")"
    cpu fetch2 2
    pp_check "fetch: the second profile names them" named "$TMP/fetch2.pb.gz"
    prof=$TMP/fetch2.pb.gz
fi
raw=$(pp_pprof -raw -symbolize=none "$prof" 2>&1)
if awk -v b="$begin" -v e="$end" -v c="$callsite" '
        /^Locations/ { inloc = 1; next }
        /^Mappings/ { inloc = 0 }
        !inloc { next }
        /^ +[0-9]+: 0x/ { first = ($4 == "hidden_inlined_mix" && $5 ~ /prog_stripped\.c:[0-9]+$/)
                          if (first) { n = $5; sub(/.*:/, "", n); first = (n + 0 > b && n + 0 < e) }
                          next }
        first && $1 == "hidden_weave_cols" && $2 ~ ("prog_stripped\\.c:" c "$") { found = 1 }
        { first = 0 }
        END { exit !found }' <<<"$raw"; then
    pp_ok "fetch: -raw: hidden_inlined_mix (a line of its body) inlined in hidden_weave_cols at line $callsite"
else
    pp_bad "fetch: -raw: no location with hidden_inlined_mix inlined into hidden_weave_cols:$callsite" "$raw"
fi
lines=$(pp_pprof -lines -top -symbolize=none -nodecount=50 "$prof" 2>&1)
if grep -qE ' hidden_sift_rows \S*prog_stripped\.c:[0-9]+$' <<<"$lines" &&
    grep -qE ' hidden_round \S*prog_stripped\.c:[0-9]+$' <<<"$lines"; then
    pp_ok "fetch: -lines: hidden_sift_rows and hidden_round with prog_stripped.c:line"
else
    pp_bad "fetch: -lines: hidden_sift_rows or hidden_round without prog_stripped.c:line" "$lines"
fi
flags=$(mapflags "$prof" "$BIN/prog_stripped")
pp_check "fetch: the program's mapping has $flags (want [FN][FL][LN])" grep -q '\[FN\]\[FL\]\[LN\]' <<<"$flags"
if cmp -s "$C1/$BID/debuginfo" "$DBG/prog_stripped.debug"; then
    pp_ok "fetch: the cache holds $BID/debuginfo, the served file byte for byte"
else
    pp_bad "fetch: no $C1/$BID/debuginfo equal to the debug file" "$(find "$C1" -ls 2>&1)"
fi
r=$(row)
pp_note "fetch: index row: ${r:-none}"
pp_check "fetch: the index's Debug files row counts 1 fetched" test "$(count fetched "$r")" = 1
pp_check "fetch: libpprof asked the server for $BID once ($(requests "$BID"))" test "$(requests "$BID")" = 1
pp_stop "$PID" >/dev/null

# --- 1b. no URL; DEBUGINFOD_URLS alone; LIBPPROF_DEBUGINFOD=1 with it
not_named() { # NAME: checks that profile NAME has none of the names
    local n flags
    n=$(names "$TMP/$1.pb.gz")
    flags=$(mapflags "$TMP/$1.pb.gz" "$BIN/prog_stripped")
    if [ "$CODE" = 200 ] && [ -z "$n" ]; then
        pp_ok "$1: profile 200, no hidden_* name"
    else
        pp_bad "$1: names found (or no profile: $CODE)" "$n"
    fi
    if pp_pprof -raw -symbolize=none "$TMP/$1.pb.gz" 2>/dev/null | grep -qF " $BIN/prog_stripped " &&
        ! grep -qF '[FN]' <<<"$flags"; then
        pp_ok "$1: the program's mapping has no [FN] ('$flags')"
    else
        pp_bad "$1: the program's mapping missing or with [FN] ('$flags')"
    fi
}
before=$(requests "$BID")
start nourl LIBPPROF_DEBUGINFO_CACHE="$TMP/cache0" -- "$BIN/prog_stripped"
cpu nourl 2
not_named nourl
pp_stop "$PID" >/dev/null
start stdurl DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache0" -- "$BIN/prog_stripped"
cpu stdurl 2
not_named stdurl
if grep -q 'LIBPPROF_DEBUGINFOD' "$TMP/stdurl.comments"; then
    pp_ok "stdurl: the comments say how to turn fetching on ($(grep -m1 LIBPPROF_DEBUGINFOD "$TMP/stdurl.comments" | cut -c1-160))"
else
    pp_bad "stdurl: with DEBUGINFOD_URLS alone, no comment names LIBPPROF_DEBUGINFOD" "$(cat "$TMP/stdurl.comments")"
fi
r=$(row)
pp_check "stdurl: the index's Debug files row says how to turn it on: ${r:-none}" grep -q 'LIBPPROF_DEBUGINFOD' <<<"$r"
pp_stop "$PID" >/dev/null
pp_check "nourl, stdurl: no request reached the server ($before before, $(requests "$BID") after)" test "$(requests "$BID")" = "$before"
pp_check "nourl, stdurl: nothing written to the cache dir" test -z "$(find "$TMP/cache0" -type f 2>/dev/null)"
start optin LIBPPROF_DEBUGINFOD=1 DEBUGINFOD_URLS="$SERVER" XDG_CACHE_HOME="$TMP/xdg" -- "$BIN/prog_stripped"
cpu optin 2
pp_check "optin: LIBPPROF_DEBUGINFOD=1 with DEBUGINFOD_URLS: named" named "$TMP/optin.pb.gz"
pp_check "optin: the file is in \$XDG_CACHE_HOME/libpprof/debuginfo/$BID/debuginfo" \
    cmp -s "$TMP/xdg/libpprof/debuginfo/$BID/debuginfo" "$DBG/prog_stripped.debug"
pp_stop "$PID" >/dev/null

# --- 1d. MiniDebugInfo: .gnu_debugdata (an xz-compressed .symtab of the
# functions, as Fedora adds it), no server, no debug file anywhere
nm "$DBG/prog_stripped.debug" --format=posix --defined-only | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort >"$TMP/funcs"
cp "$BIN/prog_stripped" "$BIN/prog_mini"
if objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols="$TMP/funcs" \
        "$DBG/prog_stripped.debug" "$TMP/mini" && xz -f "$TMP/mini" &&
    objcopy --add-section .gnu_debugdata="$TMP/mini.xz" "$BIN/prog_mini"; then
    start mini LIBPPROF_DEBUGINFO_CACHE="$TMP/cache_mini" -- "$BIN/prog_mini"
    cpu mini 2
    n=$(names "$TMP/mini.pb.gz")
    flags=$(mapflags "$TMP/mini.pb.gz" "$BIN/prog_mini")
    pp_check "mini: .gnu_debugdata names the static functions ($(echo $n))" \
        eval 'grep -qx hidden_sift_rows <<<"$n" && grep -qx hidden_weave_cols <<<"$n"'
    pp_check "mini: names without files or lines: the mapping is [FN] only ('$flags')" test "$flags" = '[FN]'
    pp_stop "$PID" >/dev/null
else
    pp_bad "premise: a copy with .gnu_debugdata could not be made"
fi

# --- 1c. a build ID the server does not know
start unknown LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache3" -- "$BIN/prog_c"
cpu unknown 2
cmt=$(grep -i debuginfod "$TMP/unknown.comments" | grep "$BID_c")
if [ "$CODE" = 200 ] && grep -q 'no debug file' <<<"$cmt" && [ -z "$(names "$TMP/unknown.pb.gz")" ]; then
    pp_ok "unknown: $BID_c not on the server: the comments say so ($(head -1 <<<"$cmt" | cut -c1-160))"
else
    pp_bad "unknown: no comment with debuginfod, 'no debug file' and $BID_c (code $CODE)" "$(cat "$TMP/unknown.comments")"
fi
pp_stop "$PID" >/dev/null

# --- 3. the cache's size bound: A then B, 600 KiB each, 1 MiB allowed
C2=$TMP/cache2
start bound_a LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$C2" LIBPPROF_DEBUGINFO_CACHE_MB=1 -- "$BIN/prog_a"
cpu bound_a 2
pp_check "bound: A ($BID_a) named" named "$TMP/bound_a.pb.gz"
pp_stop "$PID" >/dev/null
size_a=$(du -sb "$C2" 2>/dev/null | cut -f1)
start bound_b LIBPPROF_DEBUGINFOD_URLS="http://127.0.0.1:$(pp_free_port) $SERVER" LIBPPROF_DEBUGINFO_CACHE="$C2" \
    LIBPPROF_DEBUGINFO_CACHE_MB=1 -- "$BIN/prog_b"
cpu bound_b 2
pp_check "bound: B ($BID_b) named (its URL list starts with a port where nothing listens)" named "$TMP/bound_b.pb.gz"
pp_stop "$PID" >/dev/null
size_b=$(du -sb "$C2" 2>/dev/null | cut -f1)
pp_note "bound: the cache held ${size_a:-0} B after A, ${size_b:-0} B after B (LIBPPROF_DEBUGINFO_CACHE_MB=1)"
pp_check "bound: after B the cache holds ${size_b:-0} B, at most 1 MiB" test "${size_b:-0}" -le 1048576
if [ -e "$C2/$BID_b/debuginfo" ] && [ ! -e "$C2/$BID_a/debuginfo" ]; then
    pp_ok "bound: A's file evicted, B's kept"
else
    pp_bad "bound: want B's file and not A's" "$(find "$C2" -ls 2>&1)"
fi

# a debug file larger than the whole bound is not fetched
start bound_d LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache11" LIBPPROF_DEBUGINFO_CACHE_MB=1 \
    -- "$BIN/prog_d"
cpu bound_d 1
cmt=$(grep -i debuginfod "$TMP/bound_d.comments" | grep "$BID_d")
if [ "$CODE" = 200 ] && grep -q 'no debug file' <<<"$cmt" && grep -q LIBPPROF_DEBUGINFO_CACHE_MB <<<"$cmt"; then
    pp_ok "bound: D's $(stat -c %s "$DBG/prog_d.debug") B, over the 1 MiB bound: $(head -1 <<<"$cmt" | cut -c1-200)"
else
    pp_bad "bound: D's file over the bound: want 'no debug file' and LIBPPROF_DEBUGINFO_CACHE_MB for $BID_d" \
        "$(cat "$TMP/bound_d.comments")"
fi
pp_check "bound: nothing of D's kept in its cache" test -z "$(find "$TMP/cache11" -type f 2>/dev/null)"
pp_stop "$PID" >/dev/null

# --- 2. a server that accepts and never answers
cat >"$TMP/blackhole.py" <<'PY'
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print("port=%d" % s.getsockname()[1], flush=True)
held = []
def hold(c):
    first = True
    while True:
        try:
            d = c.recv(65536)
        except OSError:
            break
        if not d:
            break
        if first:
            print("request " + d.split(b"\r\n")[0].decode("latin-1"), flush=True)
            first = False
    print("closed", flush=True)
while True:
    c, _ = s.accept()
    held.append(c)
    threading.Thread(target=hold, args=(c,), daemon=True).start()
PY
pp_start blackhole /usr/bin/python3 "$TMP/blackhole.py"
line=$(pp_wait_line "$TMP/blackhole.out" '^port=[0-9]+$' 10 "$PID") || pp_give_up "the silent server did not start" blackhole
BH=http://127.0.0.1:${line#port=}
# the reference: the same program, preloaded, fetching nothing
start control LIBPPROF_DEBUGINFO_CACHE="$TMP/cache0" -- "$BIN/prog_stripped"
pp_wait_line "$TMP/control.out" '^ready$' 10 "$PID" >/dev/null
gap control "$PID" >/dev/null
cpu control 2
gap_control=$(gap control "$PID")
pp_stop "$PID" >/dev/null
start silent LIBPPROF_DEBUGINFOD_URLS="$BH" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache4" LIBPPROF_DEBUGINFOD_WAIT_MS=1500 \
    LIBPPROF_DEBUGINFOD_TIMEOUT=5 -- "$BIN/prog_stripped"
spid=$PID
pp_wait_line "$TMP/silent.out" '^ready$' 10 "$spid" >/dev/null
gap silent "$spid" >/dev/null
t_req=$SECONDS
cpu silent1 2
pp_check "silent: profile?seconds=2 answered 200 in $MS ms (at most 2 s + 1.5 s of LIBPPROF_DEBUGINFOD_WAIT_MS + 1.5 s)" \
    test "$CODE" = 200 -a "$MS" -le 5000
cmt=$(grep -i debuginfod "$TMP/silent1.comments" | grep pending | grep "$BID")
if [ -n "$cmt" ]; then
    pp_ok "silent: the comments say $BID is pending ($(head -1 <<<"$cmt" | cut -c1-160))"
else
    pp_bad "silent: no comment with debuginfod, pending and $BID" "$(cat "$TMP/silent1.comments")"
fi
r=$(row)
pp_note "silent: index row: ${r:-none}"
pp_check "silent: the index counts 1 pending" test "$(count pending "$r")" = 1
pp_check "silent: the request reached the silent server: $(grep -m1 '^request' "$TMP/blackhole.out")" \
    grep -q "^request GET .*/buildid/$BID/debuginfo" "$TMP/blackhole.out"
# LIBPPROF_DEBUGINFOD_TIMEOUT=5: by 7.5 s after the request the fetch failed
[ $((t_req + 8 - SECONDS)) -gt 0 ] && sleep $((t_req + 8 - SECONDS))
cpu silent2 1
cmt=$(grep -i debuginfod "$TMP/silent2.comments" | grep "$BID")
if [ "$CODE" = 200 ] && grep -q 'no debug file' <<<"$cmt" && ! grep -q pending <<<"$cmt"; then
    pp_ok "silent: after LIBPPROF_DEBUGINFOD_TIMEOUT=5 the next profile says no debug file ($(head -1 <<<"$cmt" | cut -c1-160))"
else
    pp_bad "silent: 8 s after the request, want 'no debug file' for $BID, not pending (code $CODE)" "$(cat "$TMP/silent2.comments")"
fi
pp_check "silent: libpprof closed the connection after its timeout" grep -q '^closed' "$TMP/blackhole.out"
gap_silent=$(gap silent "$spid")
pp_note "longest gap between the program's rounds: ${gap_control} us without fetching, ${gap_silent} us while a fetch hung"
pp_check "silent: the program's longest gap ${gap_silent} us, under 50 ms" test "${gap_silent:-999999}" -lt 50000
pp_stop "$spid" >/dev/null

# --- 2b. a server that answers late, and one that answers with no ELF file
mkdir -p "$TMP/late"
cp "$DBG/prog_stripped.debug" "$TMP/late/$BID.debug"
cat >"$TMP/late.py" <<'PY'
# late.py DELAY DIR: GET /buildid/HEX/debuginfo answers DIR/HEX.debug after
# DELAY seconds when there is one, at once with a text otherwise
import http.server, os, sys, time
delay, top = float(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        parts = self.path.split("/")
        path = os.path.join(top, parts[2] + ".debug") if len(parts) == 4 else ""
        if os.path.isfile(path):
            time.sleep(delay)
            body = open(path, "rb").read()
        else:
            body = b"<html>this is not a debug file</html>\n"
        print("answer", self.path, len(body), flush=True)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print("port=%d" % s.server_address[1], flush=True)
s.serve_forever()
PY
pp_start late /usr/bin/python3 "$TMP/late.py" 3 "$TMP/late"
line=$(pp_wait_line "$TMP/late.out" '^port=[0-9]+$' 10 "$PID") || pp_give_up "the late server did not start" late
LATE=http://127.0.0.1:${line#port=}
start late1 LIBPPROF_DEBUGINFOD_URLS="$LATE" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache8" LIBPPROF_DEBUGINFOD_WAIT_MS=500 \
    -- "$BIN/prog_stripped"
t_req=$SECONDS
cpu late1 1
if [ "$CODE" = 200 ] && [ "$MS" -le 3000 ] && grep -i debuginfod "$TMP/late1.comments" | grep pending | grep -q "$BID" &&
    [ -z "$(names "$TMP/late1.pb.gz")" ]; then
    pp_ok "late: a file served 3 s late, LIBPPROF_DEBUGINFOD_WAIT_MS=500: the first profile ($MS ms) says pending, no names"
else
    pp_bad "late: want the first profile within 3 s, pending, unnamed (code $CODE, $MS ms)" \
        "$(cat "$TMP/late1.comments")" "$(names "$TMP/late1.pb.gz")"
fi
[ $((t_req + 6 - SECONDS)) -gt 0 ] && sleep $((t_req + 6 - SECONDS))
cpu late2 1
pp_check "late: the next profile names the functions" named "$TMP/late2.pb.gz"
pp_check "late: and has no debuginfod comment ($(grep -ci debuginfod "$TMP/late2.comments"))" \
    test "$(grep -ci debuginfod "$TMP/late2.comments")" = 0
pp_stop "$PID" >/dev/null
start garbage LIBPPROF_DEBUGINFOD_URLS="$LATE" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache9" -- "$BIN/prog_c"
cpu garbage 1
cmt=$(grep -i debuginfod "$TMP/garbage.comments" | grep "$BID_c")
if [ "$CODE" = 200 ] && grep -q 'no debug file' <<<"$cmt" && grep -q "answer /buildid/$BID_c/" "$TMP/late.out"; then
    pp_ok "garbage: a 200 with no ELF file in it: $(head -1 <<<"$cmt" | cut -c1-200)"
else
    pp_bad "garbage: want a comment with debuginfod, 'no debug file' and $BID_c (code $CODE)" "$(cat "$TMP/garbage.comments")"
fi
pp_check "garbage: nothing kept in the cache" test -z "$(find "$TMP/cache9" -type f 2>/dev/null)"
pp_stop "$PID" >/dev/null

# --- 2c. exit while a fetch hangs (LIBPPROF_DEBUGINFOD_TIMEOUT at its 90 s)
start hang LIBPPROF_DEBUGINFOD_URLS="$BH" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache10" LIBPPROF_DEBUGINFOD_WAIT_MS=0 \
    -- "$BIN/prog_stripped"
n=$(grep -c '^request' "$TMP/blackhole.out")
cpu hang 1
for _ in $(seq 40); do
    [ "$(grep -c '^request' "$TMP/blackhole.out")" -gt "$n" ] && break
    sleep 0.05
done
pp_check "hang: the fetch is in flight (the silent server got its request)" \
    test "$(grep -c '^request' "$TMP/blackhole.out")" -gt "$n"
t0=$(date +%s%N)
pp_stop "$PID" >/dev/null
rc=$?
exit_ms=$((($(date +%s%N) - t0) / 1000000))
pp_note "hang: the program exited ${exit_ms} ms after SIGTERM while its fetch hung"
pp_check "hang: exit status 0 within 3 s of SIGTERM (${exit_ms} ms, status $rc)" test "$rc" = 0 -a "$exit_ms" -le 3000

# --- 4. memcached, unstripped and stripped with its debug file fetched
mc_profile() { # NAME BINARY ENV...: a CPU profile under memcslap get load; sets SHARES
    local name=$1 bin=$2 mport loader
    shift 2
    mport=$(pp_free_port)
    start "$name" LIBPPROF_CPU_HZ=400 "$@" -- "$bin" -u root -l 127.0.0.1 -p "$mport" -m 256 -t 2
    listening "$mport" || pp_bad "$name: memcached did not listen"
    memcslap --servers="127.0.0.1:$mport" --test=set --concurrency=4 --execute-number=20000 >/dev/null 2>&1
    rm -f "$TMP/stop-load"
    (while [ ! -e "$TMP/stop-load" ]; do
        timeout 30 memcslap --servers="127.0.0.1:$mport" --test=get --concurrency=4 --execute-number=20000 >/dev/null 2>&1
    done) &
    loader=$!
    cpu "$name" 6
    cp "$TMP/$name.comments" "$TMP/$name.first.comments"
    if grep -q "pending.*$MC_BID\|$MC_BID.*pending" "$TMP/$name.comments"; then
        pp_note "$name: the first profile said $MC_BID was pending; a second one"
        cpu "$name" 6
    fi
    touch "$TMP/stop-load"
    wait "$loader"
    SHARES=$(shares "$TMP/$name.pb.gz" "$bin")
    pp_check "$name: profile 200, $(cut -d' ' -f3 <<<"$SHARES") samples in memcached's own code" \
        test "$CODE" = 200 -a "$(cut -d' ' -f3 <<<"$SHARES")" -ge 50
}
if [ -n "$MC" ]; then
    . "$(dirname "$0")/services/common.sh"
    LIB=$BUILD/libpprof.so
    # unstripped: its own names from its DWARF; libevent (Debian's, no
    # debug file here) asked for and not found, in time for the first profile
    # (a wait bound of 10 s: on a loaded machine, loading libcurl and the
    # first naming pass can take the default 3 s)
    mc_profile mc_full "$MC" LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache12" \
        LIBPPROF_DEBUGINFOD_WAIT_MS=10000
    read -r all1 named1 in1 inn1 <<<"$SHARES"
    cmt=$(grep -i debuginfod "$TMP/mc_full.first.comments" | grep libevent)
    if grep -q 'no debug file' <<<"$cmt" && ! grep -q pending <<<"$cmt"; then
        pp_ok "mc_full: the first profile says libevent has no debug file: $(head -1 <<<"$cmt" | cut -c1-200)"
    else
        pp_bad "mc_full: libevent's lookup (a 404 within milliseconds) not reported as failed in the first profile" \
            "$(cat "$TMP/mc_full.first.comments")" "row: $(row)" \
            "$(grep 'UA:libpprof' "$TMP/dbgd.err" | grep -v "$BID")"
    fi
    pp_stop "$PID" >/dev/null
    mc_profile mc_fetched "$TMP/mc/memcached" LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache5"
    read -r all2 named2 in2 inn2 <<<"$SHARES"
    pp_stop "$PID" >/dev/null
    s1=$(pct "$inn1" "$in1")
    s2=$(pct "$inn2" "$in2")
    pp_note "memcached: named leaves in its own code: unstripped $s1% ($inn1 of $in1 samples), stripped + debuginfod $s2% ($inn2 of $in2)"
    pp_note "memcached: named leaves of every sample: unstripped $(pct "$named1" "$all1")% ($named1 of $all1), stripped + debuginfod $(pct "$named2" "$all2")% ($named2 of $all2)"
    pp_check "memcached: the named shares in its own code agree within 1 point ($s1% and $s2%)" \
        awk -v a="$s1" -v b="$s2" 'BEGIN { d = a - b; exit !(a != "nan" && b != "nan" && d <= 1 && d >= -1) }'
    flags=$(mapflags "$TMP/mc_fetched.pb.gz" "$TMP/mc/memcached")
    pp_check "memcached: the stripped binary's mapping has $flags (want [FN][FL][LN])" grep -q '\[FN\]\[FL\]\[LN\]' <<<"$flags"
    pp_check "memcached: its debug file is in the cache" cmp -s "$TMP/cache5/$MC_BID/debuginfo" "$DBG/memcached.debug"
fi

# --- 3. the cache with the server gone
pp_stop "$DPID" >/dev/null
start offline LIBPPROF_DEBUGINFOD_URLS="$SERVER" LIBPPROF_DEBUGINFO_CACHE="$C1" -- "$BIN/prog_stripped"
cpu offline 2
pp_check "offline: the server stopped, the same cache: named" named "$TMP/offline.pb.gz"
pp_stop "$PID" >/dev/null
# the standard client cache: read, never written
SC=$TMP/client-cache
mkdir -p "$SC/$BID"
cp "$DBG/prog_stripped.debug" "$SC/$BID/debuginfo"
sc_before=$(find "$SC" -printf '%p %s %T@\n' | sort)
start stdcache LIBPPROF_DEBUGINFOD_URLS="$SERVER" DEBUGINFOD_CACHE_PATH="$SC" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache6" \
    -- "$BIN/prog_stripped"
cpu stdcache 2
pp_check "stdcache: the server stopped, \$DEBUGINFOD_CACHE_PATH/$BID/debuginfo: named" named "$TMP/stdcache.pb.gz"
pp_stop "$PID" >/dev/null
pp_check "stdcache: the standard client cache left as it was" test "$(find "$SC" -printf '%p %s %T@\n' | sort)" = "$sc_before"
start stdcache_off DEBUGINFOD_CACHE_PATH="$SC" LIBPPROF_DEBUGINFO_CACHE="$TMP/cache7" -- "$BIN/prog_stripped"
cpu stdcache_off 2
if named "$TMP/stdcache_off.pb.gz"; then w=names; else w="does not name"; fi
pp_note "stdcache: with fetching off (no URL), the standard client cache alone: the profile $w the functions"
pp_stop "$PID" >/dev/null

pp_finish
