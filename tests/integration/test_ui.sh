#!/usr/bin/env bash
# test-labels: slow
# test_ui.sh: the flame-graph page (ui) in a real browser, Debian's headless
# Chromium driven over the DevTools protocol (cdp.py), against the demo.
# Each view's profile is the one the page drew: its bytes are taken from the
# page and read with go tool pprof.
#   - CPU, profile?seconds=4: every function with at least 5% cum in
#     go tool pprof -top is drawn with that share of the width (outermost
#     frames), and the page's table gives its flat and cum, within 0.5
#     points; the demo's two hot functions are among them; the canvas is
#     painted where the widest one is drawn; the search for one reports its
#     share;
#   - heap (inuse_space), memory (its roots drawn) and wall
#     (wall?seconds=3, its wall type) likewise; the inverted heap view's first row is led by
#     pprof's largest flat function;
#   - the label filter endpoint=/search keeps search's work only (pprof
#     -tagfocus agrees on the top function);
#   - diff=2 on allocs: the page's change of each top function is what
#     go tool pprof -diff_base gives for the two profiles it took; the
#     deepest red is a frame that grew itself, the roots are pale;
#   - the page's address keeps the search, label filter, value and view;
#     the legend's library colours are far apart;
#   - last=20 on profile (the demo keeps a CPU history): the page shows its
#     "Last" control, draws what profile?last=20 gives (the history's
#     comment, widths as pprof's) and none for heap; last= for a
#     profile the history does not keep is a 400;
#   - a screenshot of each view in BUILD/artifacts/ui/;
#   - the page: at most 150 KB, nothing fetched from elsewhere (its CSP),
#     400 with a reason for bad parameters; the index links it for every
#     profile, each link on one line, and links goroutine?debug=2, delta_*
#     and threads readably.
# Usage: test_ui.sh BUILD_DIR
. "$(dirname "$0")/lib.sh"
pp_init "$1"
HERE=$(cd "$(dirname "$0")" && pwd)
ART=$BUILD/artifacts/ui
mkdir -p "$ART"
command -v chromium >/dev/null && /usr/bin/python3 -c "import websocket" 2>/dev/null ||
    pp_give_up "chromium and python3-websocket are installed (scripts/deps.sh chromium python3-websocket)"

pp_serve demo env LIBPPROF_ADDR=127.0.0.1:@PORT@ LIBPPROF_HEAP_RATE=65536 LIBPPROF_HISTORY=60 "$BUILD/pprof-demo" ||
    pp_give_up "the demo serves" demo
base=http://127.0.0.1:$PORT/debug/pprof
sleep 2 # the workers build up some heap

# view NAME QUERY [STEPS...]: opens ui?QUERY, waits until it has drawn,
# runs STEPS, writes $TMP/NAME.json (the evals' lines), $TMP/NAME.pb (the
# profile drawn) and $ART/NAME.png.
view() {
    local name=$1 query=$2
    shift 2
    /usr/bin/python3 "$HERE/cdp.py" --timeout 90 --url "$base/ui?$query" \
        --wait 'window.libpprof && libpprof.state !== "loading"' \
        --eval 'libpprof.state === "ready" ? "ready" : libpprof.error' "$@" \
        --eval 'libpprof.bytes()' --screenshot "$ART/$name.png" >"$TMP/$name.json" 2>"$TMP/$name.err"
    local rc=$?
    sed -n '$p' "$TMP/$name.json" | python3 -c 'import sys, json, base64
sys.stdout.buffer.write(base64.b64decode(json.loads(sys.stdin.read())))' >"$TMP/$name.pb" 2>/dev/null
    [ $rc = 0 ] && [ "$(head -1 "$TMP/$name.json")" = '"ready"' ] ||
        { pp_note "$name: $(head -c 300 "$TMP/$name.err") $(head -1 "$TMP/$name.json")"; return 1; }
}

# What the page drew: the share of the width of each function's outermost
# frames, the table's flat and cum as shares of the total, and the colour
# of the canvas in the middle of the widest frame below the root.
DRAWN='(() => {
  const d = libpprof.drawn(), W = libpprof.width(), T = libpprof.total(), width = {}, table = {};
  for (const f of d)
    if (f.depth > 0 && !d.some(g => g.name === f.name && g.depth < f.depth && g.x <= f.x && f.x + f.w <= g.x + g.w + 1e-6))
      width[f.name] = (width[f.name] || 0) + 100 * f.w / W;
  for (const r of libpprof.top()) table[r.name] = [100 * r.flat / T, 100 * r.cum / T, r.cum - r.base];
  const wide = d.filter(f => f.depth === 1).sort((a, b) => b.w - a.w)[0];
  const px = wide ? [...document.getElementById("canvas").getContext("2d")
      .getImageData(Math.floor((wide.x + wide.w / 2) * devicePixelRatio), Math.floor(27 * devicePixelRatio), 1, 1).data] : [];
  return {width, table, total: T, widest: wide ? wide.name : "", pixel: px, matched: libpprof.matched()};
})()'

# compare NAME PPROF_ARGS...: each function of pprof -top with cum >= 5%:
# drawn width share and table cum within 0.5 points, table flat likewise.
compare() {
    local name=$1
    shift
    pp_pprof -top -nodecount=200 "$@" "$TMP/$name.pb" >"$TMP/$name.top" 2>&1
    sed -n 2p "$TMP/$name.json" | python3 -c '
import sys, json, re
page = json.loads(sys.stdin.read())
rows = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\S+)\s+([\d.]+)%\s+[\d.]+%\s+(\S+)\s+([\d.]+)%\s+(.+?)\s*$", line)
    if m:
        rows.append((m.group(5), float(m.group(2)), float(m.group(4))))
bad, shown = [], []
for fn, flat, cum in rows:
    if cum < 5:
        continue
    w = page["width"].get(fn, 0)
    t = page["table"].get(fn, [0, 0])
    shown.append("%s %.1f%%/%.1f%%" % (fn, cum, w))
    if abs(w - cum) > 0.5 or abs(t[1] - cum) > 0.5 or abs(t[0] - flat) > 0.5:
        bad.append("%s: pprof flat %.2f cum %.2f, page width %.2f, table flat %.2f cum %.2f" % (fn, flat, cum, w, t[0], t[1]))
print("; ".join(bad) if bad else "pprof cum/page width: " + ", ".join(shown))
sys.exit(1 if bad or not shown else 0)' "$TMP/$name.top"
}

# ------------------------------------------------------------------ CPU
if view cpu "profile=profile&seconds=4" --eval "$DRAWN" \
    --type '#search=^rank_search_results$' --eval "$DRAWN" --screenshot "$ART/cpu-search.png" \
    --eval 'libpprof.libs()' --type '#focus=endpoint=/search' --eval 'location.search'; then
    out=$(compare cpu)
    pp_check "CPU view: drawn widths and table agree with go tool pprof -top ($out)" eval 'compare cpu >/dev/null'
    pp_check "CPU view: the demo's hot functions are drawn" \
        eval 'sed -n 2p "$TMP/cpu.json" | grep -q compute_checkout_totals && sed -n 2p "$TMP/cpu.json" | grep -q rank_search_results'
    pp_check "CPU view: the canvas is painted in the widest frame ($(sed -n 2p "$TMP/cpu.json" | grep -o '"pixel": *\[[0-9, ]*\]'))" \
        eval 'sed -n 2p "$TMP/cpu.json" | python3 -c "import sys, json; p = json.load(sys.stdin)[\"pixel\"]; sys.exit(not (len(p) == 4 and p[3] == 255 and p[:3] != [255, 255, 255]))"'
    cum=$(awk '$NF == "rank_search_results" { sub(/%/, "", $5); print $5 }' "$TMP/cpu.top")
    got=$(sed -n 3p "$TMP/cpu.json" | python3 -c 'import sys, json; p = json.load(sys.stdin); print("%.2f" % (100 * p["matched"] / p["total"]))')
    pp_check "CPU search ^rank_search_results\$: the page's share $got% is pprof's cum $cum%" \
        pp_in_range "${got:-0}" "$(echo "${cum:-0}" | awk '{ print $1 - 0.5 }')" "$(echo "${cum:-0}" | awk '{ print $1 + 0.5 }')"
    addr=$(sed -n 5p "$TMP/cpu.json" | python3 -c 'import sys, json, urllib.parse
print(" ".join("%s=%s" % kv for kv in sorted(urllib.parse.parse_qsl(json.load(sys.stdin)[1:]))))')
    pp_check "the address keeps the view ($addr)" \
        test "$addr" = 'focus=endpoint=/search profile=profile sample_index=cpu search=^rank_search_results$ seconds=4'
    # each pair of the legend's colours at least 60 apart in RGB
    libs=$(sed -n 4p "$TMP/cpu.json" | python3 -c '
import sys, json, re, itertools
rgb = [tuple(int(x) for x in re.findall(r"\d+", l["colour"])[:3]) for l in json.load(sys.stdin)]
near = min((sum((a - b) ** 2 for a, b in zip(x, y)) ** 0.5 for x, y in itertools.combinations(rgb, 2)), default=0)
print("%d libraries, the closest two %.0f apart" % (len(rgb), near), "ok" if len(rgb) >= 3 and near >= 60 else "")')
    pp_check "the legend's library colours are far apart ($libs)" eval 'test "${libs% ok}" != "$libs"'
else
    pp_bad "CPU view loads"
fi

# ----------------------------------------------------------------- heap
# drawn_agrees NAME QUERY PPROF-ARGS...: the page draws NAME's view
# (QUERY), and its widths and table agree with go tool pprof -top; fails
# (after saying so) when the view does not load.
drawn_agrees() {
    local name=$1 query=$2 out
    shift 2
    if ! view "$name" "$query" --eval "$DRAWN"; then
        pp_bad "$name view loads"
        return 1
    fi
    out=$(compare "$name" "$@")
    pp_check "$name view ($*): drawn widths and table agree with go tool pprof -top ($out)" \
        eval 'compare "$name" "$@" >/dev/null'
}

if drawn_agrees heap "profile=heap&sample_index=inuse_space" -sample_index=inuse_space; then
    pp_check "heap view: cache_search_results is drawn" eval 'sed -n 2p "$TMP/heap.json" | grep -q cache_search_results'
fi
if drawn_agrees memory "profile=memory"; then
    pp_check "memory view: its roots are drawn" \
        eval 'sed -n 2p "$TMP/memory.json" | grep -q "memory: mapped files" && sed -n 2p "$TMP/memory.json" | grep -q "memory: live heap objects"'
fi
if view heapinv "profile=heap&sample_index=inuse_space&inverted=1" --eval "$DRAWN"; then
    first=$(pp_pprof -top -sample_index=inuse_space "$TMP/heapinv.pb" 2>/dev/null | awk '/flat%/ { getline; print $NF; exit }')
    widest=$(sed -n 2p "$TMP/heapinv.json" | python3 -c 'import sys, json; print(json.load(sys.stdin)["widest"])')
    pp_check "inverted heap view: the first row is led by pprof's largest flat function ($widest, $first)" \
        test -n "$first" -a "$widest" = "$first"
else
    pp_bad "inverted heap view loads"
fi

# ----------------------------------------------------------------- wall
drawn_agrees wall "profile=wall&seconds=3&sample_index=wall" -sample_index=wall

# ---------------------------------------------------------- label filter
if view focus "profile=profile&seconds=3&focus=endpoint%3D%2Fsearch" --eval "$DRAWN"; then
    first=$(pp_pprof -top -tagfocus=endpoint=/search "$TMP/focus.pb" 2>/dev/null | awk '/flat%/ { getline; print $NF; exit }')
    pp_check "label filter endpoint=/search: search's work drawn, checkout's not; pprof -tagfocus's top ($first) drawn" \
        eval 'j=$(sed -n 2p "$TMP/focus.json"); echo "$j" | grep -q "\"rank_search_results\"" &&
              ! echo "$j" | grep -q "\"compute_checkout_totals\"" && echo "$j" | grep -q "\"$first\""'
else
    pp_bad "filtered CPU view loads"
fi

# ----------------------------------------------------------------- diff
# the diff's colours: the deepest red frame and the frames at depth 1
DIFFCOL='(() => {
  const d = libpprof.drawn().filter(f => f.depth > 0), light = f => +/,(\d+)%\)$/.exec(f.colour)[1];
  const red = d.filter(f => f.colour.startsWith("hsl(0,")).sort((a, b) => light(a) - light(b))[0];
  return {deepest: red ? {name: red.name, depth: red.depth, own: red.own, colour: red.colour} : null,
          roots: d.filter(f => f.depth === 1).map(f => ({name: f.name, own: f.own, colour: f.colour}))};
})()'
if view diff "profile=allocs&sample_index=alloc_space&diff=2" --eval "$DRAWN" --eval 'libpprof.bytes(true)' \
    --eval "$DIFFCOL"; then
    sed -n 3p "$TMP/diff.json" | python3 -c 'import sys, json, base64
sys.stdout.buffer.write(base64.b64decode(json.loads(sys.stdin.read())))' >"$TMP/diff.base.pb"
    pp_pprof -top -nodecount=200 -unit=B -sample_index=alloc_space -diff_base="$TMP/diff.base.pb" "$TMP/diff.pb" \
        >"$TMP/diff.top" 2>&1
    out=$(sed -n 2p "$TMP/diff.json" | python3 -c '
import sys, json, re
page = json.loads(sys.stdin.read())
bad, seen = [], []
for line in open(sys.argv[1]):
    m = re.match(r"\s*(-?\d+)B\s+\S+%\s+\S+%\s+(-?\d+)B\s+\S+%\s+(.+?)\s*$", line)
    if not m or m.group(3) not in page["table"]:
        continue
    cum, got = int(m.group(2)), page["table"][m.group(3)][2]
    seen.append("%s %+d" % (m.group(3), cum))
    if abs(got - cum) > max(1, abs(cum) // 1000):
        bad.append("%s: pprof %d, page %d" % (m.group(3), cum, got))
print("; ".join(bad) if bad else ", ".join(seen[:4]))
sys.exit(1 if bad or not seen else 0)' "$TMP/diff.top")
    pp_check "diff view (allocs 2 s apart): each function's change is go tool pprof -diff_base's ($out)" \
        eval 'test -n "$out" && ! echo "$out" | grep -q "pprof [-0-9]*, page"'
    pp_check "diff view: build_cart grew" eval 'echo "$out" | grep -q "build_cart +[1-9]"'
    col=$(sed -n 4p "$TMP/diff.json" | python3 -c '
import sys, json
c = json.load(sys.stdin)
d, roots = c["deepest"], c["roots"]
bright = [r["name"] for r in roots if r["own"] == 0 and r["colour"] != "hsl(0,0%,92%)"]
print("deepest red %s (depth %s, own change %s), roots with no change of their own coloured: %s"
      % (d and d["name"], d and d["depth"], d and d["own"], bright or "none"),
      "ok" if d and d["own"] > 0 and not bright and roots else "")')
    pp_check "diff view: coloured by each frame's own change ($col)" eval 'test "${col% ok}" != "$col"'
else
    pp_bad "diff view loads"
fi

# ------------------------------------------------------ the history
LASTBOX='[!document.getElementById("lastbox").hidden, document.getElementById("last").value]'
if view past "profile=profile&last=20" --eval "$DRAWN" --eval "$LASTBOX"; then
    out=$(compare past)
    pp_check "last=20: drawn widths and table agree with go tool pprof -top ($out)" eval 'compare past >/dev/null'
    pp_check "last=20: the profile drawn is the history's ($(pp_pprof -comments "$TMP/past.pb" 2>/dev/null | grep -m1 history:))" \
        eval 'pp_pprof -comments "$TMP/past.pb" 2>/dev/null | grep -q "^history: CPU samples"'
    pp_check "last=20: the Last control is shown with 20 ($(sed -n 3p "$TMP/past.json" | tr -d '\n '))" \
        eval 'test "$(sed -n 3p "$TMP/past.json" | tr -d "\n ")" = "[true,\"20\"]"'
else
    pp_bad "the history's view (last=20) loads"
fi
if view heaplast "profile=heap" --eval "$LASTBOX"; then
    pp_check "heap: no Last control (the history keeps no heap)" \
        eval 'sed -n 2p "$TMP/heaplast.json" | tr -d "\n " | grep -q "^\[false"'
else
    pp_bad "the heap view loads"
fi

# ----------------------------------------------------- the page over HTTP
size=$(curl -s -D "$TMP/ui.h" -o "$TMP/ui.html" -w '%{size_download}' --max-time 10 "$base/ui")
pp_check "the page is $size bytes (at most 150 KB), text/html, with a CSP that lets it talk to this server only" \
    eval 'test "$size" -le 153600 && pp_header "$TMP/ui.h" Content-Type | grep -q "^text/html" &&
          pp_header "$TMP/ui.h" Content-Security-Policy | grep -q "default-src .none.; .*connect-src .self."'
pp_check "the page names no other site" eval '! grep -qE "(src|href)=\"?(https?:)?//" "$TMP/ui.html"'
for q in "profile=nope" "seconds=abc" "seconds=100000" "inverted=2" "diff=0" "sample_index=" "color=red" \
    "profile=heap&profile=allocs" "profile=heap&last=20" "profile=wall&last=20" "last=-1"; do
    code=$(curl -s -o "$TMP/bad" -w '%{http_code}' --max-time 10 "$base/ui?$q")
    pp_check "ui?$q: 400 with a reason ($code: $(head -c 100 "$TMP/bad"))" \
        eval 'test "$code" = 400 && test "$(wc -l <"$TMP/bad")" -le 1 && test -s "$TMP/bad"'
done
curl -s -o "$TMP/index.html" --max-time 10 "$base/"
missing=
for l in 'ui?profile=profile"' 'ui?profile=heap"' 'ui?profile=delta_heap"' 'ui?profile=threads"' 'href="ui"' \
    'goroutine?debug=2' 'heap?debug=1' 'allocs?debug=1' 'mutex?debug=1' 'block?debug=1' 'delta_mutex' 'threads?debug=1' \
    'Contention sampling'; do
    grep -qF "$l" "$TMP/index.html" || missing="$missing $l"
done
pp_check "the index links the page for each profile and readable profiles (missing:${missing:- none})" test -z "$missing"
WRAPPED='(() => { const a = [...document.querySelectorAll("a")].filter(e => e.textContent === "flame graph");
  return [a.length, a.filter(e => e.getClientRects().length > 1).length]; })()'
/usr/bin/python3 "$HERE/cdp.py" --timeout 30 --width 1000 --url "$base/" --eval "$WRAPPED" \
    --screenshot "$ART/index.png" >"$TMP/index.json" 2>"$TMP/index.err"
links=$(tr -d ' \n' <"$TMP/index.json")
pp_check "the index's flame-graph links each on one line at 1000 px ([links, wrapped] $links)" \
    eval 'echo "$links" | grep -qE "^\[[1-9][0-9]*,0\]$"'
code=$(curl -s -D "$TMP/h.h" -o /dev/null -w '%{http_code}' --max-time 10 "$base/heap?debug=1")
pp_check "the index's heap link is text ($code, $(pp_header "$TMP/h.h" Content-Type))" \
    eval 'test "$code" = 200 && pp_header "$TMP/h.h" Content-Type | grep -q "^text/plain"'
pp_note "screenshots: $(ls "$ART" | tr '\n' ' ')"
pp_finish
