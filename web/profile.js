// profile.js: reads a pprof profile (profile.proto, gzipped or not) into
// plain objects for ui.js: sample types, samples with their stacks (frame
// numbers, root first) and labels. Frames are functions by name, as go
// tool pprof names them at its default granularity: an inlined call is a
// frame of its own marked " (inline)", an address without a name is its
// object's "[name]".
'use strict';

async function ppGunzip(bytes) {
  if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  const s = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(s).arrayBuffer());
}

// Varints as Numbers; ten-byte ones (negative int64) through BigInt.
function ppVarint(r) {
  let x = 0, m = 1, b;
  const start = r.p;
  do {
    if (r.p >= r.end) throw new Error('truncated varint');
    b = r.b[r.p++];
    x += (b & 0x7f) * m;
    m *= 128;
  } while (b & 0x80);
  if (r.p - start < 10) return x;
  let big = 0n;
  for (let i = r.p - 1; i >= start; i--) big = (big << 7n) | BigInt(r.b[i] & 0x7f);
  return Number(BigInt.asIntN(64, big));
}

// Calls f(field, wiretype, value) for varints and f(field, 2, start, end)
// for length-delimited fields of the message in b[start, end).
function ppFields(b, start, end, f) {
  const r = {b, p: start, end};
  while (r.p < end) {
    const key = ppVarint(r), field = Math.floor(key / 8), wt = key & 7;
    if (wt === 0) f(field, 0, ppVarint(r));
    else if (wt === 2) {
      const n = ppVarint(r), s = r.p;
      r.p += n;
      if (r.p > end) throw new Error('truncated field ' + field);
      f(field, 2, s, r.p);
    } else if (wt === 1 || wt === 5) r.p += wt === 1 ? 8 : 4;
    else throw new Error('bad wire type ' + wt);
  }
}

// A repeated numeric field, packed or not, appended to out.
function ppNums(b, wt, a, e, out) {
  if (wt === 0) { out.push(a); return; }
  const r = {b, p: a, end: e};
  while (r.p < e) out.push(ppVarint(r));
}

// The message's varint fields by number, for small messages.
function ppScalars(b, a, e, sub) {
  const v = {};
  ppFields(b, a, e, (f, wt, x, y) => {
    if (wt === 0) v[f] = x;
    else if (sub && sub[f]) sub[f](x, y);
  });
  return v;
}

// Frame numbers are shared by every profile read into the same `frames`
// table ({names: Map, list: [{name, lib}]}), so two profiles can be compared.
function ppNewFrames() { return {names: new Map(), list: []}; }

function ppFrame(frames, name, lib) {
  let i = frames.names.get(name);
  if (i === undefined) {
    i = frames.list.length;
    frames.names.set(name, i);
    frames.list.push({name, lib});
  } else if (!frames.list[i].lib && lib) frames.list[i].lib = lib;
  return i;
}

function ppParse(b, frames) {
  const strs = [], types = [], raw = [], maps = new Map(), locs = new Map(), funcs = new Map(), comments = [];
  const p = {types, samples: [], comments, period: 0, periodType: null, duration: 0, time: 0, defaultType: 0};
  const dec = new TextDecoder();
  ppFields(b, 0, b.length, (f, wt, a, e) => {
    switch (f) {
    case 1: types.push(ppScalars(b, a, e)); break;
    case 2: {
      const s = {locs: [], values: [], labels: []};
      ppFields(b, a, e, (g, w, x, y) => {
        if (g === 1) ppNums(b, w, x, y, s.locs);
        else if (g === 2) ppNums(b, w, x, y, s.values);
        else if (g === 3 && w === 2) s.labels.push(ppScalars(b, x, y));
      });
      raw.push(s);
      break;
    }
    case 3: { const m = ppScalars(b, a, e); maps.set(m[1], m); break; }
    case 4: {
      const lines = [];
      const l = ppScalars(b, a, e, {4: (x, y) => lines.push(ppScalars(b, x, y))});
      l.lines = lines;
      locs.set(l[1], l);
      break;
    }
    case 5: { const fn = ppScalars(b, a, e); funcs.set(fn[1], fn); break; }
    case 6: strs.push(dec.decode(b.subarray(a, e))); break;
    case 9: p.time = a; break;
    case 10: p.duration = a; break;
    case 11: p.periodType = ppScalars(b, a, e); break;
    case 12: p.period = a; break;
    case 13: ppNums(b, wt, a, e, comments); break;
    case 14: p.defaultType = a; break;
    }
  });
  const str = i => strs[i || 0] || '';
  const vt = t => ({type: str(t[1]), unit: str(t[2])});
  p.types = types.map(vt);
  if (p.periodType) p.periodType = vt(p.periodType);
  p.comments = comments.map(str);
  p.defaultType = p.defaultType ? Math.max(0, p.types.findIndex(t => t.type === str(p.defaultType))) : p.types.length - 1;
  const libOf = id => {
    const m = maps.get(id);
    const file = m ? str(m[5]) : '';
    return file.slice(file.lastIndexOf('/') + 1);
  };
  // Each location: its frames leaf first (the first line is the innermost).
  const locFrames = new Map();
  for (const [id, l] of locs) {
    const lib = libOf(l[2]);
    const fr = l.lines.map((ln, i) => {
      const fn = funcs.get(ln[1]);
      return ppFrame(frames, (fn ? str(fn[2]) : '?') + (i < l.lines.length - 1 ? ' (inline)' : ''), lib);
    });
    if (!fr.length) fr.push(ppFrame(frames, lib ? '[' + lib + ']' : '0x' + (l[3] || 0).toString(16), lib));
    locFrames.set(id, fr);
  }
  for (const s of raw) {
    const stack = [];
    for (let i = s.locs.length - 1; i >= 0; i--) {
      const fr = locFrames.get(s.locs[i]);
      if (!fr) throw new Error('sample names location ' + s.locs[i] + ', which is not in the profile');
      for (let j = fr.length - 1; j >= 0; j--) stack.push(fr[j]);
    }
    const labels = s.labels.map(l => [str(l[1]), l[2] ? str(l[2]) : String(l[3] || 0)]);
    p.samples.push({stack, values: s.values, labels});
  }
  return p;
}
