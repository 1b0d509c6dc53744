#!/usr/bin/env bash
# check_layout.sh: the folder boundaries of the library, checked on every
# build (a CMake target the library depends on) and failing it when broken.
#
#   profiler/X/   one subsystem; other folders include only its interface,
#                 "X/X.h"; its other headers are its own, included by plain
#                 name from inside the folder
#   proto/        may include the interfaces of model/, otel/ and base/
#   server/       keeps to include/ (pprof*.h), its own headers
#                 and base/base.h: it can do nothing an embedding program
#                 could not
#   tools/        keeps to include/ and the server's own listener (listen.h)
#   no #include climbs out of a folder ("../"), and the subsystems' use of
#   each other has no cycle
#   a function a folder's header declares is defined in that folder: one
#   declared in profiler/otel/ and defined in proto/ would hide a
#   dependency of the core on protobuf behind the linker
#   no folder of profiler/ includes an external library's header but
#   symbolize/ (libdw, libelf, zlib): the core has no HTTP, no protobuf
#
# Usage: scripts/check_layout.sh [source dir]; prints each breach, exits 1.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
fail=0
bad() { echo "layout: $*" >&2; fail=1; }
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

for f in profiler/*/*.[ch] proto/*.[ch] server/*.[ch]; do
    dir=${f%/*}
    me=${dir#profiler/}
    while read -r inc; do
        case "$inc" in
        ../* | */../*) bad "$f: #include \"$inc\" climbs out of its folder" ;;
        proto/*.pb-c.h)
            [ "$dir" = proto ] || bad "$f: only proto/ reads the generated protobuf code" ;;
        */*)
            x=${inc%%/*}
            if [ ! -d "profiler/$x" ] || [ "$inc" != "$x/$x.h" ]; then
                bad "$f: #include \"$inc\": another folder's private header (only X/X.h is X's interface)"
            elif [ "$dir" = server ] && [ "$x" != base ]; then
                bad "$f: #include \"$inc\": server/ keeps to include/ and base/"
            elif [ "$dir" = proto ] && [ "$x" != base ] && [ "$x" != model ] && [ "$x" != otel ]; then
                bad "$f: #include \"$inc\": proto/ reads only model/, otel/ and base/"
            elif [ "$x" != "$me" ]; then
                echo "$me $x" >>"$edges"
            fi
            ;;
        *)
            [ -f "$dir/$inc" ] || [ -f "include/$inc" ] ||
                bad "$f: #include \"$inc\" is neither in its folder nor in include/"
            ;;
        esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done
# Inside server/, the endpoints sit below the transports, routing and the
# process tree: they reach those only through what is registered with them.
for f in server/handlers*.c server/index.c server/serve.c server/page.c; do
    while read -r inc; do
        case "$inc" in
        endpoints.h | request.h | reply.h | query.h | sched.h | auth.h | base/base.h | pprof*.h) ;;
        *) bad "$f: #include \"$inc\": the endpoints call nothing above them (endpoints.h)" ;;
        esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done
for f in tools/*.[ch]; do
    while read -r inc; do
        [ -f "include/$inc" ] || [ "$inc" = listen.h ] ||
            bad "$f: #include \"$inc\": tools/ keeps to include/ and server/listen.h"
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done

# Declared in one folder, defined in another: the pp_* functions each
# header declares (a line that starts with a type and ends its prototype
# with ";"), against the folders whose .c files define them.
defs=$(mktemp)
grep -HnE '^[A-Za-z_][A-Za-z0-9_ *]*[ *](pp_[a-z0-9_]+)\([^;]*$' profiler/*/*.c proto/*.c server/*.c |
    sed -E 's/^([^:]*)\/[^/:]*\.c:[0-9]+:.*[ *](pp_[a-z0-9_]+)\(.*/\2 \1/' | sort -u >"$defs"
for h in profiler/*/*.h proto/*.h server/*.h; do
    dir=${h%/*}
    for fn in $(tr '\n' ' ' <"$h" | sed 's|/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/||g' | tr ';' '\n' |
        sed -nE 's/^[[:space:]]*(extern[[:space:]]+)?[A-Za-z_][A-Za-z0-9_ *]*[ *](pp_[a-z0-9_]+)[[:space:]]*\(.*/\2/p' | sort -u); do
        where=$(awk -v f="$fn" '$1 == f { print $2 }' "$defs")
        [ -z "$where" ] && continue
        grep -qx "$dir" <<<"$where" ||
            bad "$h declares $fn, defined in $(echo $where) instead: a dependency hidden behind the linker"
    done
done
rm -f "$defs"

for f in profiler/*/*.[ch]; do
    case "$f" in profiler/symbolize/*) continue ;; esac
    ext=$(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<((microhttpd|zlib|gelf|libelf|dwarf|gnutls\/[a-z]*|elfutils\/[a-z]*|protobuf-c\/[a-z-]*)\.h)>.*/\1/p' "$f")
    [ -z "$ext" ] || bad "$f: #include <$ext>: only symbolize/ of the core uses an external library"
done

if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
    bad "the subsystems use each other in a cycle: $(sed -n 's/^tsort: \([a-z]*\)$/\1/p' "$edges.err" | sort -u | tr '\n' ' ')"
fi
rm -f "$edges.err"
exit "$fail"
