// The rtp web map: a slippy map of the service's worlds on a <canvas>, with
// overlays of what the engine knows (region shape, world border, spatial
// memory, cached locations, live deliveries, claims), an inspect panel and a
// WebGL view of one tile's terrain. Tiles and full-quality meshes are kept in
// an IndexedDB archive (archive.js) so that a reload draws without the
// network. window.rtpMap exposes a small API and a debug() hook for tests
// and snapshots.

import { Archive, archiveKey } from './archive.js';
import { View3D } from './view3d.js';

const TILE = 512;
const MAX_TILE_ZOOM = 8;
const MIN_ZOOM = -3;
const MAX_ZOOM = 10;
const MAX_MEMORY_CHUNKS = 65536;
// Format versions of what the archive keeps: a change makes old keys
// unreachable.
const FORMAT = { tile: 'png512.2', mesh: 'rtpm.1' };
const LAYERS = ['terrain', 'shape', 'border', 'memory', 'cached', 'deliveries', 'claims'];

const $ = (id) => document.getElementById(id);
const base = $('base');
const overlay = $('overlay');
const wrap = $('mapwrap');
const bctx = base.getContext('2d');
const octx = overlay.getContext('2d');

const archive = new Archive();

const state = {
  worlds: [],
  regions: [],
  world: null,
  region: null,
  cx: 0,
  cz: 0,
  zoom: 0,
  width: 0,
  height: 0,
  layers: Object.fromEntries(LAYERS.map((l) => [l, true])),
  memory: { rect: null, cells: [], fetchedAt: 0, now: 0, note: '' },
  cached: { locations: [], truncated: false },
  deliveries: [],
  claims: [],
  inspect: null,
  inspectAt: null,
  hover: null,
};

const stats = {
  pending: 0,
  requests: { tile: 0, mesh: 0, json: 0 },
  tiles: { fromArchive: 0, fromNetwork: 0, errors: 0 },
  coarse: { zoom: null, visible: 0, ready: 0, fromArchive: 0, fromNetwork: 0, errors: 0 },
  drawn: { tiles: 0, memoryCells: 0, probationCells: 0, cachedMarkers: 0, subspaces: 0, deliveries: 0, claims: 0 },
  visibleTiles: 0,
  readyTiles: 0,
  errors: [],
};
const marks = { start: performance.now(), firstPaint: null, tileFill: null };

// epochReady[world] settles once the archive knows the world's epoch; the
// archive is written only after it.
const epochReady = new Map();

// ---------------------------------------------------------------- fetching

async function getJSON(url) {
  stats.pending++;
  stats.requests.json++;
  try {
    const r = await fetch(url, { headers: { Accept: 'application/json' } });
    const body = await r.json().catch(() => null);
    if (!r.ok) {
      const msg = body && body.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${r.status}`;
      throw new Error(`${url}: ${msg}`);
    }
    return body;
  } finally {
    stats.pending--;
  }
}

async function getBytes(url, kind) {
  stats.pending++;
  stats.requests[kind]++;
  try {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    return await r.arrayBuffer();
  } finally {
    stats.pending--;
  }
}

function note(msg) {
  $('status').textContent = msg;
}

function worldInfo(name = state.world) {
  return state.worlds.find((w) => w.name === name) || null;
}

function regionInfo(name = state.region) {
  return state.regions.find((r) => r.name === name) || null;
}

function enc(s) {
  return encodeURIComponent(s);
}

// keyFor builds the archive identity of a tile or mesh of world w.
function keyFor(w, kind, zoom, tx, tz, quality) {
  const format = FORMAT[kind] + (w.renderer ? '/' + w.renderer : '');
  return archiveKey({ world: w.name, producer: w.producer || '', format, kind, zoom, tx, tz, quality });
}

// archived returns fetch's bytes, trying the archive first; network bodies
// are written back asynchronously when keep is true.
async function archived(w, key, url, kind, keep) {
  const epoch = w.epoch;
  const hit = keep ? await archive.get(key, epoch) : null;
  if (hit) return { buf: hit, from: 'archive' };
  const buf = await getBytes(url, kind);
  if (keep) {
    // Written after drawing has been scheduled by the caller: never awaited.
    Promise.resolve(epochReady.get(w.name)).then(() => archive.put(key, w.name, epoch, buf));
  }
  return { buf, from: 'network' };
}

// ------------------------------------------------------------------ tiles

// tiles is the in-memory cache: key -> {state, bmp, z, tx, tz, world, epoch}.
const tiles = new Map();
const MAX_MEMORY_TILES = 384;

function tileZoom() {
  return Math.min(MAX_TILE_ZOOM, Math.max(0, Math.floor(state.zoom + 1e-9)));
}

function bpp() {
  return Math.pow(2, state.zoom);
}

// tileEntry returns the entry of tile (z, tx, tz), starting its load when
// it has none. coarse marks a tile loaded as the coarse preview of the
// view (its load is counted in stats.coarse, not stats.tiles).
function tileEntry(z, tx, tz, coarse = false) {
  const w = worldInfo();
  if (!w) return null;
  const key = keyFor(w, 'tile', z, tx, tz, '');
  let e = tiles.get(key);
  if (e) {
    tiles.delete(key);
    tiles.set(key, e); // most recently used last
    return e;
  }
  e = { state: 'loading', bmp: null, z, tx, tz, world: w.name, epoch: w.epoch, coarse };
  tiles.set(key, e);
  loadTile(w, key, e);
  while (tiles.size > MAX_MEMORY_TILES) {
    const [k, old] = tiles.entries().next().value;
    if (old.bmp) old.bmp.close();
    tiles.delete(k);
  }
  return e;
}

async function loadTile(w, key, e) {
  const url = `/v1/worlds/${enc(w.name)}/tiles/${e.z}/${e.tx}/${e.tz}.png?v=${w.epoch}`;
  try {
    const { buf, from } = await archived(w, key, url, 'tile', true);
    e.bmp = await createImageBitmap(new Blob([buf], { type: 'image/png' }));
    e.state = 'ready';
    e.from = from;
    const st = e.coarse ? stats.coarse : stats.tiles;
    if (from === 'archive') st.fromArchive++;
    else st.fromNetwork++;
  } catch (err) {
    e.state = 'error';
    (e.coarse ? stats.coarse : stats.tiles).errors++;
    note(err.message);
  }
  scheduleDraw();
}

function dropWorldTiles(world) {
  for (const [k, e] of tiles) {
    if (e.world === world) {
      if (e.bmp) e.bmp.close();
      tiles.delete(k);
    }
  }
}

// ------------------------------------------------------------ projection

function toScreen(bx, bz) {
  const s = bpp();
  return [(bx - state.cx) / s + state.width / 2, (bz - state.cz) / s + state.height / 2];
}

function toBlock(sx, sy) {
  const s = bpp();
  return [state.cx + (sx - state.width / 2) * s, state.cz + (sy - state.height / 2) * s];
}

function visibleBlocks() {
  const [x0, z0] = toBlock(0, 0);
  const [x1, z1] = toBlock(state.width, state.height);
  return { x0, z0, x1, z1 };
}

// ---------------------------------------------------------------- drawing

let drawQueued = false;
function scheduleDraw() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(() => {
    drawQueued = false;
    draw();
  });
}

function resize() {
  const dpr = window.devicePixelRatio || 1;
  state.width = wrap.clientWidth;
  state.height = wrap.clientHeight;
  for (const c of [base, overlay]) {
    c.width = Math.round(state.width * dpr);
    c.height = Math.round(state.height * dpr);
    c.getContext('2d').setTransform(dpr, 0, 0, dpr, 0, 0);
  }
  scheduleDraw();
}

function draw() {
  drawBase();
  drawOverlay();
}

// COARSE_STEP is how many zoom levels above the view's the coarse preview
// is: its tiles cover 4^COARSE_STEP of the view's each and cost about as
// much as one (the server renders every zoom at its own resolution).
const COARSE_STEP = 2;

// visibleTileRange returns the tiles of zoom z the view shows.
function visibleTileRange(z) {
  const span = TILE << z;
  const v = visibleBlocks();
  return {
    span,
    tx0: Math.floor(v.x0 / span), tx1: Math.floor((v.x1 - 1e-9) / span),
    tz0: Math.floor(v.z0 / span), tz1: Math.floor((v.z1 - 1e-9) / span),
  };
}

// coarseReady requests the coarse preview of the view (the tiles of zoom
// z + COARSE_STEP, a handful) and reports whether it has settled: until it
// has, the view's own tiles are not requested, so the preview is rendered
// and drawn first and the terrain shows at once, then refines.
function coarseReady(z) {
  const cz = Math.min(MAX_TILE_ZOOM, z + COARSE_STEP);
  stats.coarse.zoom = cz;
  stats.coarse.visible = 0;
  stats.coarse.ready = 0;
  if (cz === z) return true;
  const r = visibleTileRange(cz);
  for (let tz = r.tz0; tz <= r.tz1; tz++) {
    for (let tx = r.tx0; tx <= r.tx1; tx++) {
      stats.coarse.visible++;
      const e = tileEntry(cz, tx, tz, true);
      if (e && e.state !== 'loading') stats.coarse.ready++;
    }
  }
  return stats.coarse.ready === stats.coarse.visible;
}

function drawBase() {
  bctx.clearRect(0, 0, state.width, state.height);
  stats.visibleTiles = 0;
  stats.readyTiles = 0;
  stats.drawn.tiles = 0;
  if (!state.layers.terrain || !worldInfo()) return;
  const z = tileZoom();
  const w = worldInfo();
  const s = bpp();
  bctx.imageSmoothingEnabled = s > (1 << z);
  const r = visibleTileRange(z);
  const span = r.span;
  // The view's tiles already loaded (archived or cached) need no preview.
  let missing = false;
  for (let tz = r.tz0; tz <= r.tz1 && !missing; tz++) {
    for (let tx = r.tx0; tx <= r.tx1 && !missing; tx++) {
      const e = tiles.get(keyFor(w, 'tile', z, tx, tz, ''));
      if (!e || e.state === 'loading') missing = true;
    }
  }
  const fetchFine = !missing || coarseReady(z);
  for (let tz = r.tz0; tz <= r.tz1; tz++) {
    for (let tx = r.tx0; tx <= r.tx1; tx++) {
      stats.visibleTiles++;
      const e = fetchFine ? tileEntry(z, tx, tz) : tiles.get(keyFor(w, 'tile', z, tx, tz, ''));
      const [sx, sy] = toScreen(tx * span, tz * span);
      const size = span / s;
      if (e && e.state === 'ready') {
        stats.readyTiles++;
        bctx.drawImage(e.bmp, sx, sy, size, size);
        stats.drawn.tiles++;
      } else if (e && e.state === 'error') {
        stats.readyTiles++;
      } else {
        drawFallback(z, tx, tz, sx, sy, size);
      }
    }
  }
  const now = performance.now();
  if (stats.drawn.tiles > 0 && marks.firstPaint === null) {
    marks.firstPaint = now - marks.start;
    performance.mark('rtp-first-paint');
  }
  if (stats.visibleTiles > 0 && stats.readyTiles === stats.visibleTiles && marks.tileFill === null) {
    marks.tileFill = now - marks.start;
    performance.mark('rtp-tile-fill');
  }
}

// drawFallback draws the loaded coarser tile covering (z, tx, tz), scaled,
// while the tile itself loads. It never starts a request.
function drawFallback(z, tx, tz, sx, sy, size) {
  const w = worldInfo();
  for (let up = 1; up <= 3 && z + up <= MAX_TILE_ZOOM; up++) {
    const pz = z + up;
    const ptx = Math.floor(tx / (1 << up)), ptz = Math.floor(tz / (1 << up));
    const e = tiles.get(keyFor(w, 'tile', pz, ptx, ptz, ''));
    if (e && e.state === 'ready') {
      const sub = TILE >> up;
      const ox = (tx - ptx * (1 << up)) * sub, oz = (tz - ptz * (1 << up)) * sub;
      bctx.drawImage(e.bmp, ox, oz, sub, sub, sx, sy, size, size);
      return;
    }
  }
}

const CAUSE_COLOURS = {
  safety: '#e53935',
  unsafe: '#e53935',
  claim: '#c77dff',
  claimed: '#c77dff',
  biome: '#43a047',
  border: '#ff7043',
  shape: '#ffd54a',
  ungenerated: '#78909c',
  error: '#8d6e63',
  water: '#1e88e5',
  lava: '#ff6f00',
  delivered: '#26c6da',
};

function hashColour(s) {
  let h = 0;
  for (const c of s) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${h % 360} 70% 60%)`;
}

function causeColour(c) {
  return CAUSE_COLOURS[c] || hashColour(c);
}

const SINK_COLOURS = { general: '#ffffff', login: '#66bb6a' };
function sinkColour(s) {
  return SINK_COLOURS[s] || hashColour(s);
}

let hatch = null;
function hatchPattern() {
  if (hatch) return hatch;
  const c = document.createElement('canvas');
  c.width = c.height = 6;
  const x = c.getContext('2d');
  x.strokeStyle = 'rgba(0,0,0,0.75)';
  x.lineWidth = 1.5;
  x.beginPath();
  x.moveTo(0, 6); x.lineTo(6, 0);
  x.stroke();
  hatch = octx.createPattern(c, 'repeat');
  return hatch;
}

function drawOverlay() {
  const ctx = octx;
  ctx.clearRect(0, 0, state.width, state.height);
  const d = stats.drawn;
  d.memoryCells = d.probationCells = d.cachedMarkers = d.subspaces = d.deliveries = d.claims = 0;
  const r = regionInfo();
  const s = bpp();
  const inView = (x, y, pad = 0) => x >= -pad && y >= -pad && x <= state.width + pad && y <= state.height + pad;

  if (state.layers.memory && r && r.world === state.world) {
    const cell = 16 / s;
    for (const c of state.memory.cells) {
      const [x, y] = toScreen(c.x * 16, c.z * 16);
      if (x + cell < 0 || y + cell < 0 || x > state.width || y > state.height) continue;
      const probation = c.state === 'probation';
      ctx.globalAlpha = probation ? 0.3 : 0.55;
      ctx.fillStyle = causeColour(c.cause);
      ctx.fillRect(x, y, Math.max(cell, 1), Math.max(cell, 1));
      if (probation) {
        ctx.globalAlpha = 0.8;
        ctx.fillStyle = hatchPattern();
        ctx.fillRect(x, y, Math.max(cell, 1), Math.max(cell, 1));
        d.probationCells++;
      }
      d.memoryCells++;
    }
    ctx.globalAlpha = 1;
  }

  if (state.layers.claims) {
    ctx.lineWidth = 2;
    for (const c of state.claims) {
      if (c.world && c.world !== state.world) continue;
      const [x0, y0] = toScreen(c.minX, c.minZ);
      const [x1, y1] = toScreen(c.maxX + 1, c.maxZ + 1);
      if (x1 < 0 || y1 < 0 || x0 > state.width || y0 > state.height) continue;
      ctx.fillStyle = 'rgba(199,125,255,0.22)';
      ctx.strokeStyle = '#c77dff';
      ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
      ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
      if (x1 - x0 > 40) {
        ctx.fillStyle = '#e9d5ff';
        ctx.font = '11px system-ui, sans-serif';
        ctx.fillText(c.owner || '', x0 + 3, y0 + 12);
      }
      d.claims++;
    }
  }

  if (r && r.world === state.world) {
    if (state.layers.border && r.border) drawBorder(ctx, r.border);
    if (state.layers.shape && r.shape) drawShape(ctx, r.shape);
  }

  if (state.layers.cached) {
    const dense = s > 2;
    // A group subspace: its places share l.group. A dashed ring round
    // their centre shows the group radius any group served from it keeps.
    const groups = new Map();
    for (const l of state.cached.locations) {
      if (!l.group) continue;
      const g = groups.get(l.group) || { x: 0, z: 0, n: 0, radius: l.radius || 0, sink: l.sink };
      g.x += l.x + 0.5; g.z += l.z + 0.5; g.n++;
      groups.set(l.group, g);
    }
    ctx.save();
    ctx.setLineDash([4, 3]);
    ctx.lineWidth = 1.5;
    for (const g of groups.values()) {
      const [x, y] = toScreen(g.x / g.n, g.z / g.n);
      const r = Math.max(g.radius / s, 3);
      if (!inView(x, y, r + 4)) continue;
      ctx.beginPath();
      ctx.arc(x, y, r, 0, Math.PI * 2);
      ctx.strokeStyle = sinkColour(g.sink);
      ctx.stroke();
      d.subspaces++;
    }
    ctx.restore();
    for (const l of state.cached.locations) {
      const [x, y] = toScreen(l.x + 0.5, l.z + 0.5);
      if (!inView(x, y, 4)) continue;
      ctx.beginPath();
      ctx.arc(x, y, dense ? 2.2 : 3.5, 0, Math.PI * 2);
      ctx.fillStyle = l.stage === 'hot' ? '#ff9800' : '#4fc3f7';
      ctx.fill();
      ctx.lineWidth = dense ? 0.8 : 1.5;
      ctx.strokeStyle = sinkColour(l.sink || 'general');
      ctx.stroke();
      d.cachedMarkers++;
    }
  }

  if (state.layers.deliveries) {
    const n = state.deliveries.length;
    state.deliveries.forEach((dl, i) => {
      const [x, y] = toScreen(dl.x + 0.5, dl.z + 0.5);
      if (!inView(x, y, 8)) return;
      ctx.globalAlpha = 0.35 + 0.65 * ((i + 1) / n);
      ctx.beginPath();
      ctx.arc(x, y, 6, 0, Math.PI * 2);
      ctx.lineWidth = 2;
      ctx.strokeStyle = '#ffffff';
      ctx.stroke();
      d.deliveries++;
    });
    ctx.globalAlpha = 1;
  }

  if (state.inspectAt) {
    const [x, y] = toScreen(state.inspectAt[0] + 0.5, state.inspectAt[1] + 0.5);
    ctx.strokeStyle = '#00e5ff';
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(x - 8, y); ctx.lineTo(x + 8, y);
    ctx.moveTo(x, y - 8); ctx.lineTo(x, y + 8);
    ctx.stroke();
  }

  if (state.memory.note && state.layers.memory) {
    ctx.fillStyle = 'rgba(0,0,0,0.6)';
    ctx.fillRect(6, state.height - 22, ctx.measureText(state.memory.note).width + 12, 18);
    ctx.fillStyle = '#ddd';
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillText(state.memory.note, 12, state.height - 9);
  }
}

function drawShape(ctx, sh) {
  const cx = sh.centerX || 0, cz = sh.centerZ || 0;
  ctx.strokeStyle = '#ffd54a';
  ctx.lineWidth = 2;
  const s = bpp();
  const [x, y] = toScreen(cx, cz);
  const ring = (rx, rz) => {
    ctx.save();
    ctx.translate(x, y);
    ctx.rotate(((sh.rotation || 0) * Math.PI) / 180);
    if (sh.kind === 'circle') {
      ctx.beginPath();
      ctx.arc(0, 0, rx / s, 0, Math.PI * 2);
      ctx.stroke();
    } else {
      ctx.strokeRect(-rx / s, -rz / s, (2 * rx) / s, (2 * rz) / s);
    }
    ctx.restore();
  };
  const rx = sh.kind === 'rectangle' ? sh.radiusX || 0 : sh.radius || 0;
  const rz = sh.kind === 'rectangle' ? sh.radiusZ || 0 : sh.radius || 0;
  ring(rx, rz);
  if (sh.innerRadius) {
    ctx.setLineDash([6, 4]);
    ring(sh.innerRadius, sh.innerRadius);
    ctx.setLineDash([]);
  }
}

function drawBorder(ctx, b) {
  const h = b.size / 2;
  const [x0, y0] = toScreen(b.centerX - h, b.centerZ - h);
  const [x1, y1] = toScreen(b.centerX + h, b.centerZ + h);
  ctx.strokeStyle = '#ff5252';
  ctx.lineWidth = 2;
  ctx.setLineDash([8, 5]);
  ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
  ctx.setLineDash([]);
}

function updateLegend() {
  const causes = [...new Set(state.memory.cells.map((c) => c.cause))].sort();
  $('legend-memory').innerHTML = '';
  for (const c of causes) {
    const sp = document.createElement('span');
    sp.innerHTML = `<i class="sw" style="background:${causeColour(c)}"></i> `;
    sp.append(c);
    $('legend-memory').append(sp);
  }
  const sp = document.createElement('span');
  sp.innerHTML = '<i class="sw probation" style="background-color:#999"></i> probation';
  $('legend-memory').append(sp);
  const sinks = [...new Set(state.cached.locations.map((l) => l.sink || 'general'))].sort();
  $('legend-sinks').innerHTML = '';
  for (const k of sinks) {
    const e = document.createElement('span');
    e.innerHTML = `<i class="dot" style="border:2px solid ${sinkColour(k)}"></i> `;
    e.append(k);
    $('legend-sinks').append(e);
  }
}

// --------------------------------------------------------------- overlays

let memoryTimer = 0;
let memoryScheduled = false;
function scheduleMemory() {
  clearTimeout(memoryTimer);
  memoryScheduled = true;
  memoryTimer = setTimeout(loadMemory, 150);
}

async function loadMemory() {
  memoryScheduled = false;
  const r = regionInfo();
  if (!r || !state.layers.memory || r.world !== state.world) {
    state.memory.cells = [];
    return;
  }
  const v = visibleBlocks();
  let minX = Math.floor(v.x0 / 16), minZ = Math.floor(v.z0 / 16);
  let maxX = Math.floor(v.x1 / 16), maxZ = Math.floor(v.z1 / 16);
  if (r.chunks && r.chunks.length === 4) {
    minX = Math.max(minX, r.chunks[0]); minZ = Math.max(minZ, r.chunks[1]);
    maxX = Math.min(maxX, r.chunks[2]); maxZ = Math.min(maxZ, r.chunks[3]);
  }
  state.memory.note = '';
  if (maxX < minX || maxZ < minZ) {
    state.memory.cells = [];
    scheduleDraw();
    return;
  }
  if ((maxX - minX + 1) * (maxZ - minZ + 1) > MAX_MEMORY_CHUNKS) {
    // Too large a view: show the 256x256 chunks around the centre.
    const ccx = Math.floor(state.cx / 16), ccz = Math.floor(state.cz / 16);
    minX = Math.max(minX, ccx - 128); maxX = Math.min(maxX, ccx + 127);
    minZ = Math.max(minZ, ccz - 128); maxZ = Math.min(maxZ, ccz + 127);
    state.memory.note = 'memory shown for the 256×256 chunks around the centre; zoom in for more';
  }
  const rect = [minX, minZ, maxX, maxZ].join(',');
  const url = `/v1/map/regions/${enc(r.name)}/memory?minX=${minX}&minZ=${minZ}&maxX=${maxX}&maxZ=${maxZ}`;
  try {
    const body = await getJSON(url);
    state.memory = { rect, cells: body.cells || [], fetchedAt: performance.now(), now: body.now, note: state.memory.note };
    updateLegend();
  } catch (err) {
    note(err.message);
  }
  scheduleDraw();
}

async function loadCached() {
  const r = regionInfo();
  if (!r) return;
  try {
    const body = await getJSON(`/v1/map/regions/${enc(r.name)}/cached`);
    state.cached = { locations: body.locations || [], truncated: !!body.truncated };
    updateLegend();
  } catch (err) {
    note(err.message);
  }
  scheduleDraw();
}

async function loadClaims() {
  if (!state.world) return;
  try {
    const body = await getJSON(`/v1/worlds/${enc(state.world)}/claims`);
    state.claims = body.claims || [];
  } catch (err) {
    state.claims = [];
    note(err.message);
  }
  scheduleDraw();
}

let stream = null;
let pollTimer = 0;
const deliveryKey = (d) => `${d.at}|${d.x}|${d.y}|${d.z}|${d.sink}`;

// mergeDeliveries adds list to the known deliveries, without duplicates,
// keeping the newest 256 in order of time.
function mergeDeliveries(list) {
  const seen = new Set(state.deliveries.map(deliveryKey));
  for (const d of list) {
    const k = deliveryKey(d);
    if (!seen.has(k)) { seen.add(k); state.deliveries.push(d); }
  }
  state.deliveries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  if (state.deliveries.length > 256) state.deliveries.splice(0, state.deliveries.length - 256);
  scheduleDraw();
}

async function pollDeliveries() {
  const r = regionInfo();
  if (!r) return;
  try {
    const body = await getJSON(`/v1/map/regions/${enc(r.name)}/deliveries`);
    mergeDeliveries(body.deliveries || []);
  } catch (err) {
    note(err.message);
  }
}

// startDeliveries loads the recent deliveries, then follows the event stream;
// when the stream fails it falls back to polling every 3 s.
function startDeliveries() {
  if (stream) { stream.close(); stream = null; }
  clearInterval(pollTimer);
  state.deliveries = [];
  const r = regionInfo();
  if (!r) return;
  pollDeliveries();
  if (!window.EventSource) {
    pollTimer = setInterval(pollDeliveries, 3000);
    return;
  }
  const es = new EventSource(`/v1/map/regions/${enc(r.name)}/deliveries/stream`);
  stream = es;
  es.addEventListener('delivery', (ev) => {
    try { mergeDeliveries([JSON.parse(ev.data)]); } catch { /* ignore a malformed event */ }
  });
  es.onerror = () => {
    if (stream !== es) return;
    es.close();
    stream = null;
    pollTimer = setInterval(pollDeliveries, 3000);
  };
}

// ---------------------------------------------------------------- inspect

async function inspect(x, z) {
  const r = regionInfo();
  if (!r) return null;
  x = Math.floor(x); z = Math.floor(z);
  state.inspectAt = [x, z];
  scheduleDraw();
  const dl = $('inspect');
  dl.innerHTML = '<dt>…</dt><dd>loading</dd>';
  try {
    const b = await getJSON(`/v1/map/regions/${enc(r.name)}/inspect?x=${x}&z=${z}`);
    state.inspect = b;
    showInspect(b);
    return b;
  } catch (err) {
    dl.innerHTML = '';
    row(dl, 'error', err.message);
    return null;
  }
}

function row(dl, k, v) {
  const dt = document.createElement('dt');
  dt.textContent = k;
  const dd = document.createElement('dd');
  dd.textContent = v;
  dd.dataset.field = k;
  dl.append(dt, dd);
}

function fmtTTL(t) {
  if (t === undefined || t === null) return '';
  if (t < 0) return 'never expires';
  const s = Math.max(0, Math.round(t));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  return (h ? `${h}h ` : '') + (h || m ? `${m}m ` : '') + `${sec}s left`;
}

function showInspect(b) {
  const dl = $('inspect');
  dl.innerHTML = '';
  row(dl, 'block', `${b.block.x}, ${b.block.z}`);
  row(dl, 'chunk', `${b.chunk.x}, ${b.chunk.z}`);
  row(dl, 'in shape', b.inShape ? 'yes' : 'no');
  row(dl, 'biome', b.biome || '—');
  row(dl, 'ground', b.ground || '—');
  row(dl, 'y', b.y ?? '—');
  row(dl, 'safe', b.safe ? 'yes' : 'no');
  row(dl, 'reason', b.reason || '—');
  row(dl, 'memory', b.memory ? `${b.memory.cause} (${b.memory.state}, ${fmtTTL(b.memory.ttlLeft)})` : 'none');
  const cached = b.cached || [];
  const where = (c) => `${c.stage}/${c.sink}${c.group ? ` (group subspace, radius ${c.radius})` : ''} at ${c.x}, ${c.y}, ${c.z}`;
  row(dl, 'cached', cached.length ? cached.map(where).join('; ') : 'none');
}

// ------------------------------------------------------------------- 3-D

let view3d = null;
function get3D() {
  if (!view3d) {
    view3d = new View3D($('gl'), loadMesh, (t) => { $('view3d-status').textContent = t; });
  }
  return view3d;
}

async function loadMesh(tx, tz, quality) {
  const w = worldInfo();
  const url = `/v1/worlds/${enc(w.name)}/meshes/${tx}/${tz}?quality=${quality}&v=${w.epoch}`;
  // Only full-quality meshes are kept in the archive.
  const key = keyFor(w, 'mesh', 0, tx, tz, quality);
  const { buf } = await archived(w, key, url, 'mesh', quality === 'full');
  return buf;
}

async function open3d(tx, tz) {
  if (tx === undefined) {
    tx = Math.floor(state.cx / TILE);
    tz = Math.floor(state.cz / TILE);
  }
  $('view3d').hidden = false;
  $('view3d-title').textContent = `3-D: tile ${tx}, ${tz} (blocks ${tx * TILE}…${tx * TILE + TILE - 1}, ${tz * TILE}…${tz * TILE + TILE - 1})`;
  await get3D().show(tx, tz);
  saveHash();
}

function close3d() {
  $('view3d').hidden = true;
  if (view3d) view3d.tile = null;
  saveHash();
}

// ------------------------------------------------------------ interaction

function setView(x, z, zoom) {
  if (x !== undefined) state.cx = x;
  if (z !== undefined) state.cz = z;
  if (zoom !== undefined) state.zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, zoom));
  viewChanged();
}

function viewChanged() {
  scheduleDraw();
  scheduleMemory();
  saveHash();
}

function zoomAt(sx, sy, dz) {
  const [bx, bz] = toBlock(sx, sy);
  state.zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, state.zoom + dz));
  const s = bpp();
  state.cx = bx - (sx - state.width / 2) * s;
  state.cz = bz - (sy - state.height / 2) * s;
  viewChanged();
}

function bindInput() {
  let drag = null;
  overlay.addEventListener('pointerdown', (e) => {
    drag = { x: e.clientX, y: e.clientY, cx: state.cx, cz: state.cz, moved: false };
    overlay.setPointerCapture(e.pointerId);
  });
  overlay.addEventListener('pointermove', (e) => {
    const rect = overlay.getBoundingClientRect();
    const sx = e.clientX - rect.left, sy = e.clientY - rect.top;
    if (drag) {
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) {
        state.cx = drag.cx - dx * bpp();
        state.cz = drag.cz - dy * bpp();
        viewChanged();
      }
    }
    hover(sx, sy);
  });
  overlay.addEventListener('pointerup', (e) => {
    const d = drag;
    drag = null;
    if (d && !d.moved) {
      const rect = overlay.getBoundingClientRect();
      const [bx, bz] = toBlock(e.clientX - rect.left, e.clientY - rect.top);
      inspect(bx, bz);
    }
  });
  overlay.addEventListener('pointercancel', () => { drag = null; });
  overlay.addEventListener('pointerleave', () => { $('tip').hidden = true; });
  overlay.addEventListener('wheel', (e) => {
    e.preventDefault();
    const rect = overlay.getBoundingClientRect();
    zoomAt(e.clientX - rect.left, e.clientY - rect.top, e.deltaY * 0.002);
  }, { passive: false });
  $('zoom-in').onclick = () => zoomAt(state.width / 2, state.height / 2, -1);
  $('zoom-out').onclick = () => zoomAt(state.width / 2, state.height / 2, 1);
  $('open3d').onclick = () => open3d();
  $('close3d').onclick = () => close3d();
  for (const cb of document.querySelectorAll('[data-layer]')) {
    cb.addEventListener('change', () => setLayers({ [cb.dataset.layer]: cb.checked }));
  }
  $('world').addEventListener('change', () => selectWorld($('world').value));
  $('region').addEventListener('change', () => selectRegion($('region').value, true));
  window.addEventListener('resize', () => { resize(); scheduleMemory(); });
}

// hover shows the block under the cursor and, over a memory cell, its cause,
// state and the time it has left.
function hover(sx, sy) {
  const [bx, bz] = toBlock(sx, sy);
  const x = Math.floor(bx), z = Math.floor(bz);
  $('coords').textContent = `x ${x}  z ${z}  chunk ${Math.floor(x / 16)}, ${Math.floor(z / 16)}  zoom ${state.zoom.toFixed(2)}`;
  const tip = $('tip');
  const cx = Math.floor(x / 16), cz = Math.floor(z / 16);
  const c = state.layers.memory ? state.memory.cells.find((m) => m.x === cx && m.z === cz) : null;
  state.hover = c || null;
  if (!c) { tip.hidden = true; return; }
  let ttl = c.ttlLeft;
  if (ttl >= 0) ttl = Math.max(0, ttl - (performance.now() - state.memory.fetchedAt) / 1000);
  tip.textContent = `chunk ${cx}, ${cz}: ${c.cause} (${c.tier || ''} ${c.state}) · ${fmtTTL(ttl)}`;
  tip.style.left = `${sx + 14}px`;
  tip.style.top = `${sy + 14}px`;
  tip.hidden = false;
}

function setLayers(obj) {
  for (const [k, v] of Object.entries(obj)) {
    if (!(k in state.layers)) continue;
    state.layers[k] = !!v;
    const cb = document.querySelector(`[data-layer="${k}"]`);
    if (cb) cb.checked = !!v;
  }
  if (obj.memory) scheduleMemory();
  scheduleDraw();
  saveHash();
}

// ------------------------------------------------------------ worlds etc.

function fillSelect(sel, names, value) {
  sel.innerHTML = '';
  for (const n of names) {
    const o = document.createElement('option');
    o.value = o.textContent = n;
    sel.append(o);
  }
  if (value !== null) sel.value = value;
}

function selectWorld(name) {
  state.world = name;
  $('world').value = name;
  const regs = state.regions.filter((r) => r.world === name);
  fillSelect($('region'), regs.map((r) => r.name), regs.length ? regs[0].name : null);
  if (regs.length && (!regionInfo() || regionInfo().world !== name)) selectRegion(regs[0].name, true);
  loadClaims();
  viewChanged();
}

function selectRegion(name, recentre) {
  const r = state.regions.find((x) => x.name === name);
  if (!r) return;
  state.region = name;
  $('region').value = name;
  if (state.world !== r.world) {
    state.world = r.world;
    $('world').value = r.world;
    loadClaims();
  }
  if (recentre) fitRegion(r);
  state.memory.cells = [];
  loadCached();
  startDeliveries();
  viewChanged();
}

function fitRegion(r) {
  const sh = r.shape || {};
  state.cx = sh.centerX || 0;
  state.cz = sh.centerZ || 0;
  let ex = 0, ez = 0;
  if (r.chunks && r.chunks.length === 4) {
    ex = (r.chunks[2] - r.chunks[0] + 1) * 16;
    ez = (r.chunks[3] - r.chunks[1] + 1) * 16;
    state.cx = ((r.chunks[0] + r.chunks[2] + 1) * 16) / 2;
    state.cz = ((r.chunks[1] + r.chunks[3] + 1) * 16) / 2;
  }
  if (ex > 0 && state.width > 0) {
    state.zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, Math.log2(Math.max(ex / state.width, ez / state.height) * 1.1)));
  }
}

// refreshWorlds reloads /v1/map/worlds; a world whose epoch changed has its
// archived and in-memory tiles dropped and is redrawn.
async function refreshWorlds() {
  const body = await getJSON('/v1/map/worlds');
  const worlds = body.worlds || [];
  const changed = [];
  for (const w of worlds) {
    const old = worldInfo(w.name);
    epochReady.set(w.name, archive.setEpoch(w.name, w.epoch).catch(() => false));
    if (old && old.epoch !== w.epoch) changed.push(w.name);
  }
  state.worlds = worlds;
  for (const name of changed) {
    await epochReady.get(name);
    dropWorldTiles(name);
    if (view3d && view3d.tile && name === state.world) get3D().show(...view3d.tile);
  }
  if (changed.length) {
    marks.tileFill = null;
    scheduleDraw();
  }
  return { worlds, changed };
}

// ---------------------------------------------------------------- URL hash

let hashTimer = 0;
function saveHash() {
  clearTimeout(hashTimer);
  hashTimer = setTimeout(() => {
    const p = new URLSearchParams();
    if (state.world) p.set('world', state.world);
    if (state.region) p.set('region', state.region);
    p.set('x', Math.round(state.cx));
    p.set('z', Math.round(state.cz));
    p.set('zoom', state.zoom.toFixed(2));
    p.set('layers', LAYERS.filter((l) => state.layers[l]).join(','));
    if (view3d && view3d.tile && !$('view3d').hidden) p.set('view3d', view3d.tile.join(','));
    history.replaceState(null, '', '#' + p.toString());
  }, 200);
}

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const num = (k) => (p.has(k) && Number.isFinite(Number(p.get(k))) ? Number(p.get(k)) : undefined);
  return {
    world: p.get('world'),
    region: p.get('region'),
    x: num('x'),
    z: num('z'),
    zoom: num('zoom'),
    layers: p.has('layers') ? p.get('layers').split(',') : null,
    view3d: p.has('view3d') ? p.get('view3d').split(',').map(Number) : null,
  };
}

// ------------------------------------------------------------------- start

async function start() {
  resize();
  bindInput();
  const h = readHash();
  if (h.layers) setLayers(Object.fromEntries(LAYERS.map((l) => [l, h.layers.includes(l)])));
  try {
    await refreshWorlds();
    const body = await getJSON('/v1/map/regions');
    state.regions = body.regions || [];
  } catch (err) {
    note(err.message);
    return;
  }
  fillSelect($('world'), state.worlds.map((w) => w.name), null);
  const region = state.regions.find((r) => r.name === h.region) || state.regions.find((r) => r.world === h.world) || state.regions[0];
  if (region) {
    state.world = region.world;
    $('world').value = region.world;
    fillSelect($('region'), state.regions.filter((r) => r.world === region.world).map((r) => r.name), region.name);
    fitRegion(region);
    selectRegion(region.name, false);
  } else if (state.worlds.length) {
    selectWorld(state.worlds[0].name);
  }
  if (h.world && !region) selectWorld(h.world);
  loadClaims();
  setView(h.x, h.z, h.zoom);
  if (h.view3d && h.view3d.length === 2 && h.view3d.every(Number.isFinite)) open3d(h.view3d[0], h.view3d[1]);
  state.started = true;
  setInterval(() => { refreshWorlds().catch((e) => note(e.message)); }, 15000);
  setInterval(loadCached, 5000);
  setInterval(loadClaims, 10000);
  setInterval(loadMemory, 10000);
}

// idle resolves once nothing is loading: no request in flight, every visible
// tile settled and no draw queued.
function idle(timeoutMs = 10000) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const check = () => {
      const settled = state.started && stats.pending === 0 && !drawQueued && !memoryScheduled &&
        (!state.layers.terrain || stats.readyTiles === stats.visibleTiles) && ![...tiles.values()].some((e) => e.state === 'loading' && e.world === state.world && e.z === tileZoom());
      if (settled || performance.now() - t0 > timeoutMs) resolve(settled);
      else setTimeout(check, 30);
    };
    setTimeout(check, 30);
  });
}

window.rtpMap = {
  setView,
  setLayers,
  inspect,
  open3d,
  close3d,
  refreshWorlds,
  idle,
  toScreen,
  toBlock,
  archive,
  coverage3d: () => (view3d ? view3d.coverage() : 0),
  debug() {
    return {
      started: !!state.started,
      world: state.world,
      region: state.region,
      epoch: worldInfo() ? worldInfo().epoch : null,
      view: { cx: state.cx, cz: state.cz, zoom: state.zoom, tileZoom: tileZoom(), width: state.width, height: state.height },
      layers: { ...state.layers },
      pending: stats.pending,
      requests: { ...stats.requests },
      tiles: { ...stats.tiles, visible: stats.visibleTiles, ready: stats.readyTiles, drawn: stats.drawn.tiles },
      coarse: { ...stats.coarse },
      drawn: { ...stats.drawn },
      memory: { cells: state.memory.cells.length, rect: state.memory.rect, note: state.memory.note },
      cached: state.cached.locations.length,
      deliveries: state.deliveries.length,
      claims: state.claims.length,
      stream: stream ? stream.readyState : -1,
      inspect: state.inspect,
      view3d: view3d ? { webgl: view3d.webgl, quality: view3d.quality, frames: view3d.frames, tile: view3d.tile, vertices: view3d.mesh ? view3d.mesh.positions.length / 3 : 0 } : null,
      marks: { ...marks },
      archive: { ...archive.stats },
    };
  },
};

start();
