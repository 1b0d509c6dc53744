#!/usr/bin/env bash
# check_layout.sh: the folder boundaries of the library, checked on every
# build (a CMake target the library depends on) and failing it when broken.
#
#   profiler/X/   one subsystem; other folders include only its interface,
#                 "X/X.h"; its other headers are its own, included by plain
#                 name from inside the folder
#   proto/        may include the interfaces of model/, otel/ and base/
#   server/       keeps to include/ (pprof.h, pprof_mhd.h), its own headers
#                 and base/base.h: it can do nothing an embedding program
#                 could not
#   no #include climbs out of a folder ("../"), and the subsystems' use of
#   each other has no cycle
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
if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
    bad "the subsystems use each other in a cycle: $(sed -n 's/^tsort: \([a-z]*\)$/\1/p' "$edges.err" | sort -u | tr '\n' ' ')"
fi
rm -f "$edges.err"
exit "$fail"
