#!/usr/bin/env bash
# run.sh: how long the flame-graph page takes to show big profiles in
# headless Chromium (Debian's chromium, driven by tests/integration/cdp.py).
# ui_host serves custom profiles of 10,000 and 100,000 distinct stacks; for
# each, ROUNDS fresh pages open ui?profile=NAME, and the page reports, in
# ms: fetch (the server writes and gzips it, the page receives and
# gunzips it), parse (protobuf to samples), draw (call tree, layout, canvas,
# table), and ready (from navigation to drawn). Prints every round's raw
# figures and the medians.
# Usage: bench/ui/run.sh BUILD_DIR [ROUNDS]
set -euo pipefail
build=$(cd "$1" && pwd) rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
cdp=$here/../../tests/integration/cdp.py
out=$(mktemp)
trap 'exec 3>&-; rm -f "$out" "$out.rounds"' EXIT
exec 3> >("$build/bench/ui_host" 127.0.0.1:0 >"$out")
for _ in $(seq 100); do grep -q '^port=' "$out" && break; sleep 0.1; done
port=$(sed -n 's/^port=//p' "$out")
echo "# bench/ui/run.sh: $rounds rounds per profile, chromium $(chromium --version 2>/dev/null | awk '{ print $2 }'), $(nproc) CPUs"
for name in ui_10k ui_100k; do
    for r in $(seq "$rounds"); do
        /usr/bin/python3 "$cdp" --timeout 120 --url "http://127.0.0.1:$port/debug/pprof/ui?profile=$name" \
            --wait 'window.libpprof && libpprof.state !== "loading"' \
            --eval 'JSON.stringify(Object.assign(libpprof.times(), {state: libpprof.state, error: libpprof.error, stacks: libpprof.top().length, drawn: libpprof.drawn().length}))' |
            /usr/bin/python3 -c 'import sys, json
t = json.loads(json.loads(sys.stdin.read()))
if t["state"] != "ready": sys.exit("page: " + t["error"])
print("%s round %s: fetch %.0f parse %.0f draw %.0f ready %.0f ms (%d functions, %d frames drawn)" % (sys.argv[1], sys.argv[2],
      t["fetchMs"], t["parseMs"], t["renderMs"], t["readyAt"], t["stacks"], t["drawn"]))' "$name" "$r"
    done
done | tee "$out.rounds"
/usr/bin/python3 - "$out.rounds" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    w = line.split()
    rows.setdefault(w[0], []).append([float(w[i]) for i in (4, 6, 8, 10)])
for name, r in rows.items():
    m = [statistics.median(c) for c in zip(*r)]
    print("%s median: fetch %.0f parse %.0f draw %.0f ready %.0f ms" % (name, *m))
PY
