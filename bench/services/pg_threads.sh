#!/usr/bin/env bash
# pg_threads.sh: the CPU time of libpprof's own threads in Debian's
# postgresql, over the services benchmark's measured work (pgbench's 4
# gated clients, services.sh), read from each thread's schedstat (ns on a
# CPU) before and after it: postgres's threads, and per libpprof thread
# name (pprof-collector, pprof-history...) summed over the service's 11
# processes. Each library is loaded with the history on
# (LIBPPROF_HISTORY=600); libraries are run in turn, RUNS times, so two
# builds compare side by side in one run.
#
#   bench/services/pg_threads.sh RUNS LIBPPROF_SO...     (as root)
#
# A library must be readable by the postgres user (copy it to /tmp).
# Prints one line per run and library: the service's CPU, then each
# libpprof thread name's CPU and its share of it.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 RUNS LIBPPROF_SO..." >&2; exit 2; }
WORK=$(mktemp -d /tmp/pg_threads.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
SVC_CPUS=0 TOOL_CPUS=1
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# shellcheck source=services.sh
. "$HERE/services.sh"
svc_postgresql_setup || exit 1
# snap: "PID/TID NS KIND" for every thread of the postgres user's processes
snap() {
    local p t c
    for p in $(ps -u postgres -o pid=); do
        for t in /proc/"$p"/task/*; do
            c=$(tr ' ' '_' <"$t/comm" 2>/dev/null)
            case $c in pprof-*) ;; *) c=postgres ;; esac
            echo "$p/${t##*/} $(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) $c"
        done
    done
}
runs=$1
shift
for run in $(seq "$runs"); do
    for lib in "$@"; do
        svc_postgresql_start LD_PRELOAD="$lib" LIBPPROF_HISTORY=600 || exit 1
        svc_postgresql_load warm
        sleep 0.5
        svc_postgresql_begin || exit 1
        snap >"$WORK/a"
        svc_postgresql_finish
        snap >"$WORK/b"
        printf "run %d %-28s " "$run" "$lib"
        # threads that ended meanwhile count from 0 (join -e0); those gone by the end are left out
        join -a2 -e0 -o 0,1.2,2.2,2.3 <(sort "$WORK/a") <(sort "$WORK/b") | awk '
            { d = $3 - $2; s[$4] += d; tot += d }
            END { printf "service %.0f ms", tot / 1e6
                  for (k in s) if (k != "postgres" && k != "0") printf "  %s %.2f ms (%.3f%%)", k, s[k] / 1e6, 100 * s[k] / tot
                  printf "\n" }'
        svc_postgresql_release
        svc_postgresql_stop
    done
done
