# lib_debuginfod.sh: what the debuginfod tests share (test_debuginfod.sh,
# test_debuginfod_keep.sh): prog_stripped, a stripped copy of it and its
# debug file, a debuginfod serving that file, and readers of the profiles.
# Sourced after lib.sh's pp_init.
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH DEBUGINFOD_TIMEOUT XDG_CACHE_HOME LIBPPROF_DEBUGINFOD \
    LIBPPROF_DEBUGINFOD_URLS LIBPPROF_DEBUGINFO_CACHE LIBPPROF_DEBUGINFO_CACHE_MB \
    LIBPPROF_DEBUGINFOD_WAIT_MS LIBPPROF_DEBUGINFOD_TIMEOUT

LIB=$BUILD/libpprof.so
SRC=$(cd "$(dirname "$0")" && pwd)/prog_stripped.c
PROG=$BUILD/tests/prog_stripped
NAMES=(hidden_sift_rows hidden_weave_cols hidden_round)
begin=$(grep -n '@inline-begin' "$SRC" | cut -d: -f1)
end=$(grep -n '@inline-end' "$SRC" | cut -d: -f1)
callsite=$(grep -n '@call-site' "$SRC" | cut -d: -f1)

bid_of() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }

# start NAME ENV... -- CMD...: CMD under LD_PRELOAD with ENV, serving on a
# free port; sets PID, PORT and URL (ends the test when it does not serve)
start() {
    local name=$1 envs=()
    shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    pp_serve "$name" env LD_PRELOAD="$LIB" LIBPPROF_ADDR=127.0.0.1:@PORT@ "${envs[@]}" "$@" ||
        pp_give_up "$name did not serve" "$name"
    URL=http://127.0.0.1:$PORT/debug/pprof
}

# cpu NAME SECONDS: $URL/profile?seconds=SECONDS into $TMP/NAME.pb.gz, its
# comments in $TMP/NAME.comments; sets CODE and MS (the answer's time)
cpu() {
    local t0
    t0=$(date +%s%N)
    CODE=$(curl -sS --max-time 60 -o "$TMP/$1.pb.gz" -w '%{http_code}' "$URL/profile?seconds=$2" 2>&1)
    MS=$((($(date +%s%N) - t0) / 1000000))
    pp_pprof -comments "$TMP/$1.pb.gz" >"$TMP/$1.comments" 2>&1
}

# names FILE: the static functions the profile names by itself, one a line
names() {
    pp_pprof -top -symbolize=none -nodecount=500 "$1" 2>/dev/null |
        grep -oE ' hidden_[a-z_]+( \(inline\))?$' | sed 's/^ //' | sort -u
}

# named FILE: 0 when it names every static function and the inlined one
named() {
    local n f
    n=$(names "$1")
    for f in "${NAMES[@]}" 'hidden_inlined_mix (inline)'; do
        grep -qxF "$f" <<<"$n" || return 1
    done
}

# mapflags FILE PATH: the flags ([FN][FL]...) of PATH's mapping
mapflags() {
    pp_pprof -raw -symbolize=none "$1" 2>/dev/null |
        awk -v p="$2" '/^Mappings/ { m = 1; next } m && $3 == p { f = ""; for (i = 5; i <= NF; i++) f = f $i; print f; exit }'
}

# row: the text of the index's "Debug files" row
row() {
    curl -sS --max-time 10 "$URL/" 2>/dev/null | tr -d '\n' | grep -oE '<td>Debug files</td><td>.*' |
        sed -e 's|</tr>.*||' -e 's|<[^>]*>| |g' -e 's/  */ /g' -e 's/^ //' -e 's/ $//'
}

# count WORD TEXT: the number written beside WORD ("3 fetched", "fetched: 3")
count() {
    grep -oE "[0-9]+ $1|$1:? [0-9]+" <<<"$2" | head -1 | grep -oE '[0-9]+'
}

# requests BID: libpprof's requests for BID's debug file in the debuginfod's log
requests() { grep 'UA:libpprof/' "$TMP/dbgd.err" | grep -c "GET /buildid/$1/debuginfo"; }

# gap NAME PID: asks NAME for its longest gap since the last report (us)
gap() {
    local n
    n=$(grep -c '^max_gap_us=' "$TMP/$1.out")
    kill -USR1 "$2"
    for _ in $(seq 100); do
        [ "$(grep -c '^max_gap_us=' "$TMP/$1.out")" -gt "$n" ] && break
        sleep 0.05
    done
    grep '^max_gap_us=' "$TMP/$1.out" | tail -1 | sed 's/^max_gap_us=\([0-9]*\).*/\1/'
}

# dbg_stripped: checks the premises, then makes $BIN/prog_stripped (strip
# --strip-all) and its debug file $DBG/prog_stripped.debug; sets BID
dbg_stripped() {
    if [ -x "$PROG" ] && [ -n "$begin" ] && [ -n "$end" ] && [ -n "$callsite" ] && command -v debuginfod >/dev/null; then
        pp_ok "prog_stripped built, source markers found, debuginfod installed"
    else
        pp_bad "premise: $PROG, the markers in $SRC or debuginfod (apt-get install debuginfod) missing"
        pp_finish
    fi
    BIN=$TMP/bin # the stripped programs: no debug file beside them
    DBG=$TMP/debug # what the debuginfod serves
    mkdir -p "$BIN" "$DBG"
    BID=$(bid_of "$PROG")
    cp "$PROG" "$BIN/prog_stripped"
    objcopy --only-keep-debug "$BIN/prog_stripped" "$DBG/prog_stripped.debug"
    strip --strip-all "$BIN/prog_stripped"
    symtab=$(nm "$BIN/prog_stripped" 2>&1)
    dynsym=$(nm -D "$BIN/prog_stripped" 2>&1)
    if [ ${#BID} = 40 ] && [ "$(bid_of "$BIN/prog_stripped")" = "$BID" ] && [ "$(bid_of "$DBG/prog_stripped.debug")" = "$BID" ] &&
        grep -q 'no symbols' <<<"$symtab" && ! grep -q hidden_ <<<"$dynsym" && nm "$PROG" | grep -q ' t hidden_sift_rows$'; then
        pp_ok "stripped copy: build ID $BID, no .symtab, no hidden_* in .dynsym (the built one has them in .symtab)"
    else
        pp_bad "premise: the stripped copy" "build ID '$BID'" "nm: $symtab" "nm -D: $dynsym"
    fi
}

# dbg_serve: a debuginfod on $DBG (it scans it at start, then never again,
# and logs requests to $TMP/dbgd.err); sets DPORT, DPID and SERVER, and
# CODE to its answer for $BID
dbg_serve() {
    for _ in 1 2 3; do
        DPORT=$(pp_free_port)
        pp_start dbgd env -u DEBUGINFOD_URLS debuginfod -v -F -p "$DPORT" -d "$TMP/db.sqlite" -t 0 -g 0 "$DBG"
        DPID=$PID
        for _ in $(seq 150); do
            CODE=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$DPORT/buildid/$BID/debuginfo")
            [ "$CODE" = 200 ] && break
            pp_alive "$DPID" || break
            sleep 0.1
        done
        [ "$CODE" = 200 ] && break
        pp_stop "$DPID" >/dev/null 2>&1
    done
    SERVER=http://127.0.0.1:$DPORT
}
