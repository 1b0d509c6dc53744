#!/usr/bin/env bash
# test-labels: plain-only slow
# test_package.sh: libpprof as its users install it. scripts/package.sh
# builds the Debian packages; `cmake --install --prefix` of that build into
# a temp dir gives a relocated install whose pkg-config file, CMake package
# and launcher point there; as root, `apt-get install ./*.deb` installs
# libpprof0, libpprof-dev and libpprof-tools, and consumers build against
# the installed files with pkg-config (shared, static with hooks, static
# without) and with find_package(libpprof), and serve profiles that go tool
# pprof reads; libpprof-run runs a program that is not linked with libpprof
# with its endpoint on. A consumer also builds the source tree through
# add_subdirectory(), which builds no test, benchmark or demo. The packages
# are purged at the end (unless they were installed before the test).
# Usage: test_package.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CONSUMER=$SRC/tests/package
PROG=$BUILD/tests/prog_plain
PKGS="libpprof0 libpprof-dev libpprof-tools"
PURGE=0
on_exit() {
    [ "$PURGE" = 1 ] && apt-get purge -y -qq $PKGS >/dev/null 2>&1
    pp_cleanup
}
trap on_exit EXIT

# check_consumer LABEL BINARY heap|noheap: it serves; its CPU profile shows
# consumer_burn; its heap profile consumer_alloc, or (noheap) an error
# that says the build has no malloc hooks.
check_consumer() {
    local label=$1 bin=$2 heap=$3 url code
    if ! pp_serve "c-$label" "$bin" "127.0.0.1:@PORT@"; then
        pp_bad "$label: the consumer does not serve" "$(cat "$TMP/c-$label.err" 2>/dev/null)"
        return
    fi
    url=http://127.0.0.1:$PORT/debug/pprof
    pp_pprof -top "$url/profile?seconds=1" >"$TMP/$label.cpu" 2>&1
    pp_check "$label: go tool pprof shows consumer_burn in the CPU profile" grep -q consumer_burn "$TMP/$label.cpu"
    if [ "$heap" = heap ]; then
        pp_pprof -top -sample_index=inuse_space "$url/heap" >"$TMP/$label.heap" 2>&1
        pp_check "$label: the heap profile shows consumer_alloc" grep -q consumer_alloc "$TMP/$label.heap"
    else
        code=$(curl -s -o "$TMP/$label.heap" -w '%{http_code}' --max-time 10 "$url/heap")
        pp_check "$label: heap answers an error naming the missing hooks ($code: $(head -c 120 "$TMP/$label.heap"))" \
            eval 'test "$code" != 200 && grep -q "no malloc hooks" "$TMP/$label.heap"'
    fi
    pp_stop "$PID" >/dev/null 2>&1
}

# check_launcher LABEL LAUNCHER LIBDIR: the launcher runs prog_plain with
# libpprof from LIBDIR preloaded, prints where it serves, and the CPU
# profile names prog_plain's functions.
check_launcher() {
    local label=$1 run=$2 libdir=$3 line port
    pp_start "run-$label" "$run" --addr 127.0.0.1:0 -- "$PROG" 600 -1
    line=$(pp_wait_line "$TMP/run-$label.err" 'serving http://' 10 "$PID")
    port=$(echo "$line" | sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p')
    if [ -z "$port" ]; then
        pp_bad "$label: libpprof-run prints where it serves" "$(cat "$TMP/run-$label.err")"
        pp_stop "$PID" >/dev/null 2>&1
        return
    fi
    pp_ok "$label: libpprof-run prints where it serves ($line)"
    pp_check "$label: the preloaded library is $libdir/libpprof.so.0" grep -q "$libdir/libpprof.so.0" "/proc/$PID/maps"
    pp_pprof -top "http://127.0.0.1:$port/debug/pprof/profile?seconds=1" >"$TMP/run-$label.top" 2>&1
    pp_check "$label: go tool pprof shows prog_plain's busy_loop_for_preload" grep -q busy_loop_for_preload "$TMP/run-$label.top"
    pp_stop "$PID" >/dev/null 2>&1
}

# cmake_consumer LABEL TARGET CMAKE-ARGS...: configures and builds the
# consumer project; prints the binary's path.
cmake_consumer() {
    local label=$1 target=$2
    shift 2
    cmake -S "$CONSUMER" -B "$TMP/cm-$label" -DPPROF_TARGET="$target" "$@" >"$TMP/cm-$label.log" 2>&1 &&
        cmake --build "$TMP/cm-$label" -j2 >>"$TMP/cm-$label.log" 2>&1 && echo "$TMP/cm-$label/consumer"
}

grep -q busy_loop_for_preload "$SRC/tests/integration/prog_plain.c" || pp_bad "premise: prog_plain burns CPU in busy_loop_for_preload"

# --- the packages
if ! debs=$(bash "$SRC/scripts/package.sh" "$TMP/pkg" 2>"$TMP/package.err"); then
    pp_give_up "scripts/package.sh builds the Debian packages" package
fi
for p in $PKGS; do
    pp_check "scripts/package.sh built $p" eval 'echo "$debs" | grep -q "/${p}_[0-9.]*-1_[a-z0-9]*\.deb$"'
done
pp_check "libpprof0 depends on Debian 12's libmicrohttpd12, libprotobuf-c1, zlib1g and libdw1" \
    eval 'dpkg-deb -f "$TMP"/pkg/libpprof0_*.deb Depends | grep -q "libmicrohttpd12.*libprotobuf-c1.*zlib1g.*libdw1"'
pp_check "libpprof0 has an ldconfig trigger and a shlibs file" \
    eval 'dpkg-deb --ctrl-tarfile "$TMP"/pkg/libpprof0_*.deb | tar t | grep -q shlibs &&
        dpkg-deb -I "$TMP"/pkg/libpprof0_*.deb triggers | grep -qx "activate-noawait ldconfig"'
# Descriptions as apt show renders them: a summary of each package's own,
# and a body indented by exactly one space.
summaries=$(for d in "$TMP"/pkg/*.deb; do dpkg-deb -f "$d" Description | head -1; done | sort -u | wc -l)
pp_check "each package has a summary of its own ($summaries of 3)" test "$summaries" = 3
pp_check "no description repeats its summary or indents its body by more than one space" \
    eval 'for d in "$TMP"/pkg/*.deb; do dpkg-deb -f "$d" Description |
        awk "NR == 1 { s = \$0; next } /^  / || index(\$0, s) { bad = 1 } END { exit bad }" || exit 1; done'
if command -v lintian >/dev/null; then
    lintian --allow-root "$TMP"/pkg/*.deb >"$TMP/lintian.out" 2>&1
    pp_check "lintian reports no error on the packages" eval '! grep -q "^E: " "$TMP/lintian.out"'
    grep "^E: " "$TMP/lintian.out" | sed "s/^/# lintian: /" >&2
    grep '^W: ' "$TMP/lintian.out" | sed 's/^/# lintian: /'
else
    pp_skip "lintian is not installed"
fi

# --- a relocated install (cmake --install --prefix): nothing points at /usr
PREFIX=$TMP/prefix
cmake --install "$TMP/pkg" --prefix "$PREFIX" >"$TMP/install.log" 2>&1 || pp_give_up "cmake --install" install "$TMP/install.log"
libdir=$(dirname "$(find "$PREFIX" -name libpprof.so.0 | head -1)")
for f in include/pprof.h include/pprof_stats.h include/pprof_server.h include/pprof_mhd.h bin/libpprof-run bin/pprof-demo share/doc/libpprof/LICENSE \
    share/doc/libpprof/README.md; do
    pp_check "installed $f" test -e "$PREFIX/$f"
done
for f in libpprof.so libpprof.so.0 libpprof.a libpprof_nohooks.a pkgconfig/libpprof.pc \
    pkgconfig/libpprof-static.pc pkgconfig/libpprof-static-nohooks.pc cmake/libpprof/libpprofConfig.cmake; do
    pp_check "installed ${libdir#$PREFIX/}/$f" test -e "$libdir/$f"
done
found=$(env -u LD_LIBRARY_PATH ldd "$PREFIX/bin/pprof-demo" | awk '$1 == "libpprof.so.0" { print $3 }')
pp_check "the installed pprof-demo finds the installed libpprof.so.0 by its RUNPATH (${found:-not found})" \
    test -n "$found" -a "$(readlink -f "$found")" = "$(readlink -f "$libdir/libpprof.so.0")"
export PKG_CONFIG_PATH=$libdir/pkgconfig
pp_check "pkg-config --cflags libpprof points into the relocated prefix ($(pkg-config --cflags libpprof))" \
    eval 'pkg-config --cflags libpprof | grep -q -- "-I$PREFIX/include"'
if gcc -o "$TMP/pc-reloc" "$CONSUMER/consumer.c" $(pkg-config --cflags --libs libpprof) -Wl,-rpath,"$libdir" \
    2>"$TMP/pc-reloc.err"; then
    check_consumer reloc-pkgconfig "$TMP/pc-reloc" heap
else
    pp_bad "a consumer builds with pkg-config against the relocated install" "$(cat "$TMP/pc-reloc.err")"
fi
if bin=$(cmake_consumer reloc pprof_static -DCMAKE_PREFIX_PATH="$PREFIX"); then
    check_consumer reloc-cmake-static "$bin" heap
else
    pp_bad "a consumer builds with find_package(libpprof) against the relocated install" "$(tail -20 "$TMP/cm-reloc.log")"
fi
check_launcher reloc "$PREFIX/bin/libpprof-run" "$libdir"
unset PKG_CONFIG_PATH

# --- the Debian packages, installed
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    pp_skip "installing the .deb files needs root and apt-get"
else
    dpkg-query -W -f='${Status}' libpprof0 2>/dev/null | grep -q "install ok installed" || PURGE=1
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $debs \
        >"$TMP/apt.log" 2>&1; then
        pp_give_up "apt-get install ./*.deb" apt "$TMP/apt.log"
    fi
    pp_ok "apt-get install ./libpprof0_*.deb ./libpprof-dev_*.deb ./libpprof-tools_*.deb"
    pp_check "pkg-config --modversion libpprof is the header's version" \
        eval 'test "$(pkg-config --modversion libpprof)" = "$(sed -n "s/#define PPROF_VERSION_STRING \"\(.*\)\"/\1/p" /usr/include/pprof.h)"'
    if gcc -o "$TMP/pc" "$CONSUMER/consumer.c" $(pkg-config --cflags --libs libpprof) 2>"$TMP/pc.err"; then
        pp_check "the pkg-config consumer loads the installed libpprof.so.0" eval 'ldd "$TMP/pc" | grep -qE "libpprof.so.0 => (/usr)?/lib/x86_64-linux-gnu/libpprof.so.0"'
        check_consumer pkgconfig "$TMP/pc" heap
    else
        pp_bad "a consumer builds with pkg-config --libs libpprof" "$(cat "$TMP/pc.err")"
    fi
    if gcc -o "$TMP/pcs" "$CONSUMER/consumer.c" $(pkg-config --cflags --libs libpprof-static) 2>"$TMP/pcs.err"; then
        pp_check "the libpprof-static consumer has libpprof and its malloc inside (no libpprof.so)" \
            eval '! ldd "$TMP/pcs" | grep -q libpprof && nm "$TMP/pcs" | grep -qE " T malloc$"'
        check_consumer pkgconfig-static "$TMP/pcs" heap
    else
        pp_bad "a consumer builds with pkg-config --libs libpprof-static" "$(cat "$TMP/pcs.err")"
    fi
    if gcc -o "$TMP/pcn" "$CONSUMER/consumer.c" $(pkg-config --cflags --libs libpprof-static-nohooks) \
        2>"$TMP/pcn.err"; then
        pp_check "the libpprof-static-nohooks consumer defines no malloc or pthread_mutex_lock of its own" \
            eval '! nm "$TMP/pcn" | grep -qE " T (malloc|pthread_mutex_lock)$"'
        check_consumer pkgconfig-nohooks "$TMP/pcn" noheap
    else
        pp_bad "a consumer builds with pkg-config --libs libpprof-static-nohooks" "$(cat "$TMP/pcn.err")"
    fi
    if bin=$(cmake_consumer sys pprof); then
        check_consumer cmake-shared "$bin" heap
    else
        pp_bad "a consumer builds with find_package(libpprof) and libpprof::pprof" "$(tail -20 "$TMP/cm-sys.log")"
    fi
    if bin=$(cmake_consumer sys-nohooks pprof_static_nohooks); then
        check_consumer cmake-nohooks "$bin" noheap
    else
        pp_bad "a consumer builds with libpprof::pprof_static_nohooks" "$(tail -20 "$TMP/cm-sys-nohooks.log")"
    fi
    check_launcher deb /usr/bin/libpprof-run /usr/lib/x86_64-linux-gnu
fi

# --- add_subdirectory() of the source tree
if bin=$(cmake_consumer sub pprof -DLIBPPROF_SOURCE="$SRC"); then
    pp_check "add_subdirectory builds no test, benchmark or demo" \
        eval '! find "$TMP/cm-sub/libpprof" -name "test_*" -o -name "bench_*" -o -name pprof-demo | grep -q .'
    check_consumer subdirectory "$bin" heap
else
    pp_bad "a consumer builds libpprof through add_subdirectory()" "$(tail -20 "$TMP/cm-sub.log")"
fi
pp_finish
