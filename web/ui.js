// ui.js: the flame-graph page. Loads a profile from this server (or a
// file), builds the call tree of the chosen value over the samples the
// label filter keeps, and draws it on a canvas: root at the top, callees
// below (callers below in the inverted view), width by value, colour by the
// library a function comes from (or by growth against a base profile).
// Click zooms, the search highlights, the table ranks functions.
// window.libpprof is what the tests read: the frames as drawn, the table,
// the profile's bytes.
'use strict';

const $ = id => document.getElementById(id);
const params = new URLSearchParams(location.search);
const ROW = 18;
const frames = ppNewFrames();
const st = {prof: null, base: null, bytes: null, baseBytes: null, type: 0, zoom: [], drawn: [], rows: [],
            total: 0, top: [], sort: 'flat', state: 'loading', error: '', fetchMs: 0, parseMs: 0, renderMs: 0, readyAt: 0,
            matched: 0,
            timer: 0};
const canvas = $('canvas'), ctx = canvas.getContext('2d'), tip = $('tip');

function setStatus(text, error) {
  $('status').textContent = text;
  $('status').className = error ? 'error' : '';
}

function fail(e) {
  st.state = 'error';
  st.error = String(e && e.message || e);
  setStatus(st.error, true);
}

// ------------------------------------------------------------ formatting

function fmt(v, unit) {
  const a = Math.abs(v);
  const scaled = (steps) => {
    let i = 0;
    while (i + 1 < steps.length && a >= steps[i + 1][0]) i++;
    const x = v / steps[i][0];
    return (Math.abs(x) >= 100 || i === 0 ? x.toFixed(0) : x.toPrecision(3)) + steps[i][1];
  };
  if (unit === 'nanoseconds') return scaled([[1, 'ns'], [1e3, 'µs'], [1e6, 'ms'], [1e9, 's']]);
  if (unit === 'bytes') return scaled([[1, 'B'], [1024, 'KiB'], [1048576, 'MiB'], [1073741824, 'GiB']]);
  return Math.round(v).toLocaleString('en-US');
}

const pct = (v, t) => (t ? (100 * v / t).toFixed(2) : '0.00') + '%';

function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

// Each library gets the next colour of a palette chosen so that any two of
// its first N are far apart (at least 83 in RGB among all twelve, light
// enough for black text), in the order the page first meets it (the
// widest first); past the palette, a hue from its name.
const PALETTE = [[210, 65, 70], [60, 90, 55], [120, 90, 55], [315, 90, 65], [60, 70, 82], [30, 50, 55],
                 [165, 90, 55], [120, 90, 75], [90, 90, 55], [285, 90, 82], [180, 90, 82], [0, 50, 75]];
const libHues = new Map();
function libHsl(lib) {
  lib = lib || '?';
  let c = libHues.get(lib);
  if (!c) libHues.set(lib, c = libHues.size < PALETTE.length ? PALETTE[libHues.size] : [hash(lib) % 360, 60, 68]);
  return c;
}
const libColour = lib => { const [h, s, l] = libHsl(lib); return `hsl(${h},${s}%,${l}%)`; };

// A frame's colour. In a diff: by its own change (`most` is the largest
// of a drawn frame), red grew, blue shrank: in the call tree the change of
// the value spent in the function itself, so the leaf that grew is the
// deepest red, not its callers; in the inverted view, where the first row
// is the functions themselves, the change of the node's value.
function frameColour(n, most, match, inv) {
  if (n.f < 0) return '#ccc';
  if (match && match[n.f]) return '#e040e0';
  if (most) {
    const d = ownChange(n, inv) / most;
    return d >= 0 ? `hsl(0,${Math.round(90 * d)}%,${Math.round(92 - 30 * d)}%)`
                  : `hsl(220,${Math.round(-90 * d)}%,${Math.round(92 + 30 * d)}%)`;
  }
  const fr = frames.list[n.f], [h, s, l] = libHsl(fr.lib);
  return `hsl(${h},${s}%,${l - 6 + hash(fr.name) % 12}%)`;
}

const ownChange = (n, inv) => inv ? n.v - n.b : n.self - n.bself;

// --------------------------------------------------------------- filters

// "key=value, key!=value": each value a regexp matched whole against the
// sample's labels (numbers as decimal), all terms must hold.
function parseFocus(s) {
  const terms = [];
  for (const t of s.split(',').map(x => x.trim()).filter(Boolean)) {
    const m = /^([^=!]+)(!?=)(.*)$/.exec(t);
    if (!m) throw new Error('label filter: "' + t + '" is not key=value or key!=value');
    terms.push({key: m[1].trim(), not: m[2] === '!=', re: new RegExp('^(?:' + m[3].trim() + ')$')});
  }
  return terms;
}

function keeps(terms, s) {
  for (const t of terms) {
    const hit = s.labels.some(([k, v]) => k === t.key && t.re.test(v));
    if (hit === t.not) return false;
  }
  return true;
}

function searchMatches() {
  const s = $('search').value;
  if (!s) return null;
  const re = new RegExp(s);
  return frames.list.map(f => re.test(f.name));
}

// -------------------------------------------------------------- the tree

function node(f, parent) { return {f, parent, v: 0, b: 0, self: 0, bself: 0, kids: new Map()}; }

function addSamples(root, prof, ti, terms, key, inv, match) {
  let matched = 0;
  for (const s of prof.samples) {
    const v = s.values[ti];
    if (!v || !keeps(terms, s)) continue;
    root[key] += v;
    let n = root, hit = false;
    const k = s.stack, len = k.length;
    for (let i = 0; i < len; i++) {
      const f = inv ? k[len - 1 - i] : k[i];
      let c = n.kids.get(f);
      if (!c) n.kids.set(f, c = node(f, n));
      c[key] += v;
      n = c;
      if (match && match[f]) hit = true;
    }
    n[key === 'v' ? 'self' : 'bself'] += v;
    if (hit) matched += v;
  }
  return matched;
}

// Flat and cumulative value per function (each sample counted once per
// function, recursion or not), over the kept samples.
function functionTable(prof, ti, terms, out, flatKey, cumKey) {
  const seen = new Int32Array(frames.list.length).fill(-1);
  prof.samples.forEach((s, si) => {
    const v = s.values[ti];
    if (!v || !keeps(terms, s)) return;
    const k = s.stack;
    if (k.length && flatKey) row(out, k[k.length - 1])[flatKey] += v;
    for (const f of k)
      if (seen[f] !== si) { seen[f] = si; row(out, f)[cumKey] += v; }
  });
}

function row(out, f) {
  let r = out.get(f);
  if (!r) out.set(f, r = {f, flat: 0, cum: 0, base: 0});
  return r;
}

const typeIndex = (prof, name) => prof.types.findIndex(t => t.type === name);
const sameKind = (a, b) => a.types.map(t => t.type).join() === b.types.map(t => t.type).join();

// ---------------------------------------------------------------- render

function render() {
  if (!st.prof) return;
  const t0 = performance.now();
  const p = st.prof, ti = st.type, unit = p.types[ti] ? p.types[ti].unit : '';
  let terms, match;
  try {
    terms = parseFocus($('focus').value);
    match = searchMatches();
  } catch (e) {
    setStatus(String(e.message || e), true);
    return;
  }
  const inv = $('invert').checked;
  const diff = !!(st.base && $('diff').checked && sameKind(st.base, p));
  const root = node(-1, null);
  st.matched = addSamples(root, p, ti, terms, 'v', inv, match);
  const bti = diff ? typeIndex(st.base, p.types[ti].type) : -1;
  if (diff) addSamples(root, st.base, bti, terms, 'b', inv, null);
  st.total = root.v;

  // the zoomed node: the longest prefix of the zoom path still there
  let focus = root;
  const path = [root];
  for (const f of st.zoom) {
    const c = focus.kids.get(f);
    if (!c || !c.v) break;
    path.push(focus = c);
  }
  st.zoom = path.slice(1).map(n => n.f);

  const W = Math.max(100, canvas.clientWidth || canvas.parentNode.clientWidth);
  st.width = W; /* drawn frames' x and w are in this width (a scrollbar may narrow the canvas later) */
  const drawn = [];
  path.forEach((n, d) => drawn.push({n, x: 0, w: W, d}));
  const scale = focus.v ? W / focus.v : 0;
  const lay = (n, x, d) => {
    const kids = [...n.kids.values()].filter(c => c.v > 0).sort((a, b) => b.v - a.v);
    for (const c of kids) {
      const w = c.v * scale;
      if (w < 0.3) break;
      drawn.push({n: c, x, w, d});
      lay(c, x, d + 1);
      x += w;
    }
  };
  lay(focus, 0, path.length);
  const depth = drawn.reduce((m, r) => Math.max(m, r.d), 0) + 1;

  const dpr = window.devicePixelRatio || 1, H = depth * ROW;
  canvas.style.height = H + 'px';
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = '12px sans-serif';
  ctx.textBaseline = 'middle';
  st.rows = [];
  const most = diff ? drawn.reduce((m, r) => r.n.f < 0 ? m : Math.max(m, Math.abs(ownChange(r.n, inv))), 0) || 1 : 0;
  for (const r of drawn) {
    const y = r.d * ROW, n = r.n;
    ctx.fillStyle = frameColour(n, most, match, inv);
    ctx.fillRect(r.x, y, Math.max(r.w - 0.5, 0.5), ROW - 1);
    (st.rows[r.d] = st.rows[r.d] || []).push(r);
    const name = n.f < 0 ? 'all' : frames.list[n.f].name, chars = Math.floor((r.w - 6) / 7);
    if (chars >= 3) {
      ctx.fillStyle = '#000';
      ctx.fillText(name.length <= chars ? name : name.slice(0, chars - 1) + '…', r.x + 3, y + ROW / 2);
    }
  }
  st.drawn = drawn;
  st.most = most;

  // the table and the libraries
  const rows = new Map();
  functionTable(p, ti, terms, rows, 'flat', 'cum');
  if (diff) functionTable(st.base, bti, terms, rows, null, 'base');
  const key = st.sort === 'change' && diff ? r => r.cum - r.base : r => r[st.sort === 'cum' ? 'cum' : 'flat'];
  st.top = [...rows.values()].sort((a, b) => key(b) - key(a) || a.f - b.f);
  writeTable(unit, diff);
  writeLibs(rows);
  st.renderMs = performance.now() - t0;

  let s = `${p.name}: ${p.types.map(t => t.type).join(', ')}; showing ${p.types[ti] ? p.types[ti].type : '?'}, ` +
    `total ${fmt(st.total, unit)}, ${p.samples.length.toLocaleString('en-US')} stacks`;
  if (p.duration) s += `, over ${(p.duration / 1e9).toFixed(1)} s`;
  if (terms.length) s += ', label filter on';
  if (match) s += `; search matches ${fmt(st.matched, unit)} (${pct(st.matched, st.total)})`;
  if (diff) s += `; against the base of ${st.base.at.toLocaleTimeString()}: ${fmt(root.b, unit)} then, ` +
    `${fmt(root.v - root.b, unit)} change (colour: each function's own change, red grew, blue shrank; width: now)`;
  if (p.comments.length) s += ' — ' + p.comments.join('; ');
  setStatus(s);
  keepInAddress();
}

// The page's address says what it shows (profile, window, value, label
// filter, search, view), so that a link to it opens the same view; the
// server's own parameters (pid, tree, gc, token) stay as they were.
function keepInAddress() {
  const q = new URLSearchParams();
  for (const k of ['pid', 'tree', 'gc', 'token']) if (params.has(k)) q.set(k, params.get(k));
  q.set('profile', $('name').value);
  const seconds = Math.floor(+$('seconds').value || 0), last = Math.floor(+$('last').value || 0);
  if (seconds > 0) q.set('seconds', seconds);
  if (last > 0 && !$('lastbox').hidden) q.set('last', last);
  if (st.prof.name === $('name').value && st.prof.types[st.type]) q.set('sample_index', st.prof.types[st.type].type);
  if ($('focus').value) q.set('focus', $('focus').value);
  if ($('search').value) q.set('search', $('search').value);
  if ($('invert').checked) q.set('inverted', '1');
  const url = location.pathname + '?' + q.toString();
  if (url !== location.pathname + location.search) history.replaceState(null, '', url);
}

function writeTable(unit, diff) {
  const head = ['flat', 'flat%', 'cum', 'cum%'].concat(diff ? ['base cum', 'change'] : [], ['function']);
  $('tophead').innerHTML = '';
  for (const h of head) {
    const th = document.createElement('th');
    th.textContent = h;
    th.onclick = () => { st.sort = h === 'change' ? 'change' : h.startsWith('cum') ? 'cum' : 'flat'; render(); };
    $('tophead').appendChild(th);
  }
  const body = $('top');
  body.innerHTML = '';
  for (const r of st.top.slice(0, 60)) {
    const tr = document.createElement('tr');
    const name = frames.list[r.f].name;
    const cells = [fmt(r.flat, unit), pct(r.flat, st.total), fmt(r.cum, unit), pct(r.cum, st.total)]
      .concat(diff ? [fmt(r.base, unit), fmt(r.cum - r.base, unit)] : [], [name]);
    for (const c of cells) {
      const td = document.createElement('td');
      td.textContent = c;
      tr.appendChild(td);
    }
    tr.dataset.flat = r.flat;
    tr.dataset.cum = r.cum;
    tr.onclick = () => { $('search').value = '^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$'; render(); };
    body.appendChild(tr);
  }
}

function writeLibs(rows) {
  const by = new Map();
  for (const r of rows.values()) {
    const lib = frames.list[r.f].lib || '?';
    by.set(lib, (by.get(lib) || 0) + r.flat);
  }
  const el = $('libs');
  el.innerHTML = '';
  for (const [lib, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 10)) {
    const s = document.createElement('span');
    const i = document.createElement('i');
    i.style.background = libColour(lib);
    s.append(i, `${lib} ${pct(v, st.total)}`);
    s.dataset.lib = lib;
    el.appendChild(s);
  }
}

// ------------------------------------------------------------- pointing

function hit(e) {
  const b = canvas.getBoundingClientRect(), x = e.clientX - b.left, d = Math.floor((e.clientY - b.top) / ROW);
  return (st.rows[d] || []).find(r => x >= r.x && x < r.x + r.w);
}

canvas.addEventListener('mousemove', e => {
  const r = hit(e);
  if (!r) { tip.style.display = 'none'; return; }
  const n = r.n, unit = st.prof.types[st.type].unit, fr = n.f < 0 ? {name: 'all', lib: ''} : frames.list[n.f];
  let t = `<b></b><br>${fr.lib ? 'in ' + '<span></span><br>' : ''}` +
    `${fmt(n.v, unit)} (${pct(n.v, st.total)} of all), self ${fmt(n.self, unit)}`;
  if (st.base && $('diff').checked)
    t += `<br>base ${fmt(n.b, unit)}, change ${fmt(n.v - n.b, unit)}` +
      ($('invert').checked ? '' : `, own change ${fmt(n.self - n.bself, unit)}`);
  tip.innerHTML = t;
  tip.querySelector('b').textContent = fr.name;
  if (fr.lib) tip.querySelector('span').textContent = fr.lib;
  tip.style.display = 'block';
  tip.style.left = Math.min(e.clientX + 12, window.innerWidth - tip.offsetWidth - 4) + 'px';
  tip.style.top = e.clientY + 14 + 'px';
});
canvas.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
canvas.addEventListener('click', e => {
  const r = hit(e);
  if (!r) return;
  const path = [];
  for (let n = r.n; n && n.f >= 0; n = n.parent) path.unshift(n.f);
  st.zoom = path;
  render();
});

// --------------------------------------------------------------- loading

function progress(seconds) {
  clearInterval(st.timer);
  const fill = $('barfill'), t0 = performance.now();
  fill.style.width = '0';
  if (seconds <= 0) return;
  st.timer = setInterval(() => {
    const el = (performance.now() - t0) / 1000;
    fill.style.width = Math.min(100, 100 * el / seconds) + '%';
    setStatus(`recording ${$('name').value}: ${Math.min(el, seconds).toFixed(0)} of ${seconds} s`);
  }, 200);
}

// last > 0: the last N seconds from the history, at once (no window).
async function fetchProfile(name, seconds, last) {
  const q = new URLSearchParams();
  if (last > 0) seconds = 0, q.set('last', last);
  if (seconds > 0) q.set('seconds', seconds);
  for (const k of ['pid', 'tree', 'gc', 'token']) if (params.has(k)) q.set(k, params.get(k));
  const qs = q.toString();
  setStatus(`loading ${name}…`);
  progress(seconds);
  try {
    const r = await fetch(PP_PREFIX + name + (qs ? '?' + qs : ''));
    const body = new Uint8Array(await r.arrayBuffer());
    if (!r.ok) throw new Error(`${name}: ${r.status} ${new TextDecoder().decode(body).trim()}`);
    return await ppGunzip(body);
  } finally {
    clearInterval(st.timer);
    $('barfill').style.width = seconds > 0 ? '100%' : '0';
  }
}

function show(bytes, name) {
  const t0 = performance.now();
  const prof = ppParse(bytes, frames);
  st.parseMs = performance.now() - t0;
  prof.name = name;
  prof.at = new Date();
  const prev = st.prof && st.prof.types[st.type] ? st.prof.types[st.type].type : params.get('sample_index');
  st.prof = prof;
  st.bytes = bytes;
  let ti = prev === null ? -1 : typeIndex(prof, prev);
  if (ti < 0 && prev !== null && /^\d+$/.test(prev) && +prev < prof.types.length) ti = +prev;
  st.type = ti >= 0 ? ti : prof.defaultType;
  const sel = $('type');
  sel.innerHTML = '';
  prof.types.forEach((t, i) => sel.add(new Option(`${t.type} (${t.unit})`, i, false, i === st.type)));
  const vals = new Set();
  for (const s of prof.samples) for (const [k, v] of s.labels) if (vals.size < 300) vals.add(k + '=' + v);
  $('labelvals').innerHTML = '';
  for (const v of [...vals].sort()) $('labelvals').appendChild(new Option(v));
  const raw = $('raw');
  if (raw.href.startsWith('blob:')) URL.revokeObjectURL(raw.href);
  raw.href = URL.createObjectURL(new Blob([bytes]));
  raw.download = name.replace(/[^A-Za-z0-9._-]/g, '_') + '.pb';
  $('diffbox').hidden = !st.base;
  render();
  st.state = 'ready';
}

async function load() {
  st.state = 'loading';
  const name = $('name').value, seconds = Math.max(0, Math.floor(+$('seconds').value || 0));
  const last = name in PP_HISTORY ? Math.max(0, Math.floor(+$('last').value || 0)) : 0;
  try {
    const t0 = performance.now(), bytes = await fetchProfile(name, seconds, last);
    st.fetchMs = performance.now() - t0;
    show(bytes, name);
    st.readyAt = performance.now();
  } catch (e) {
    fail(e);
  }
}

function keepBase() {
  if (st.base) {
    st.base = st.baseBytes = null;
    $('base').textContent = 'Keep as base';
  } else if (st.prof) {
    st.base = st.prof;
    st.baseBytes = st.bytes;
    $('base').textContent = 'Clear base';
  }
  $('diffbox').hidden = !st.base;
  render();
}

// ------------------------------------------------------------------ wiring

for (const n of PP_PROFILES) $('name').add(new Option(n, n));
$('name').value = params.get('profile') || 'profile';
// the profiles that record a window (the others are the state now)
const timed = n => n === 'profile' || n === 'wall' || n === 'fgprof';
$('seconds').value = params.get('seconds') || (timed($('name').value) ? 10 : 0);
$('focus').value = params.get('focus') || '';
$('search').value = params.get('search') || '';
$('invert').checked = params.get('inverted') === '1';
// the profiles the history keeps (name: seconds kept) offer "Last N s"
const showLast = () => {
  const kept = PP_HISTORY[$('name').value];
  $('lastbox').hidden = !kept;
  if (kept) $('last').max = kept;
};
$('last').value = params.get('last') || 0;
showLast();
$('name').onchange = () => { $('seconds').value = timed($('name').value) ? 10 : 0; showLast(); };
$('load').onclick = load;
$('type').onchange = () => { st.type = +$('type').value; render(); };
for (const id of ['focus', 'search']) $(id).oninput = render;
for (const id of ['invert', 'diff']) $(id).onchange = render;
$('base').onclick = keepBase;
$('file').onchange = async () => {
  const f = $('file').files[0];
  if (!f) return;
  try { show(await ppGunzip(new Uint8Array(await f.arrayBuffer())), f.name); } catch (e) { fail(e); }
};
let resizing = 0;
window.addEventListener('resize', () => {
  cancelAnimationFrame(resizing);
  resizing = requestAnimationFrame(render);
});

const b64 = b => {
  let s = '';
  for (let i = 0; i < b.length; i += 32768) s += String.fromCharCode.apply(null, b.subarray(i, i + 32768));
  return btoa(s);
};
window.libpprof = {
  get state() { return st.state; },
  get error() { return st.error; },
  width: () => st.width,
  total: () => st.total,
  type: () => st.prof.types[st.type].type,
  matched: () => st.matched,
  times: () => ({fetchMs: st.fetchMs, parseMs: st.parseMs, renderMs: st.renderMs, readyAt: st.readyAt}),
  drawn: () => st.drawn.map(r => ({name: r.n.f < 0 ? 'all' : frames.list[r.n.f].name,
                                    lib: r.n.f < 0 ? '' : frames.list[r.n.f].lib, depth: r.d, x: r.x, w: r.w,
                                    value: r.n.v, base: r.n.b, own: ownChange(r.n, $('invert').checked),
                                    colour: frameColour(r.n, st.most, null, $('invert').checked)})),
  libs: () => [...$('libs').children].map(e => ({lib: e.dataset.lib, colour: getComputedStyle(e.firstChild).backgroundColor})),
  top: () => st.top.map(r => ({name: frames.list[r.f].name, flat: r.flat, cum: r.cum, base: r.base})),
  bytes: base => b64(base ? st.baseBytes : st.bytes),
  show: (data, name) => show(Uint8Array.from(atob(data), c => c.charCodeAt(0)), name),
};

// diff=N: this profile now as the base, the same again N seconds later.
(async () => {
  const wait = +params.get('diff') || 0;
  await load();
  if (wait <= 0 || st.state !== 'ready') return;
  st.state = 'loading';
  keepBase();
  setStatus(`base kept; the next profile in ${wait} s`);
  await new Promise(r => setTimeout(r, wait * 1000));
  await load();
})();
