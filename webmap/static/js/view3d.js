// View3D draws one tile's terrain mesh with WebGL (2, or 1 as a fallback):
// drag to orbit, wheel to move closer. It shows the low-quality mesh while
// the camera moves or is far, and the full-quality mesh once it rests close.

import { decodeMesh } from './mesh.js';

const VS = `
attribute vec3 aPos;
attribute vec3 aNormal;
uniform mat4 uMVP;
uniform vec2 uYRange;
varying float vShade;
varying float vH;
void main() {
  vec3 light = normalize(vec3(-0.5, 0.8, -0.3));
  vShade = 0.35 + 0.65 * max(dot(normalize(aNormal), light), 0.0);
  vH = clamp((aPos.y - uYRange.x) / max(uYRange.y - uYRange.x, 1.0), 0.0, 1.0);
  gl_Position = uMVP * vec4(aPos, 1.0);
}`;

const FS = `
precision mediump float;
varying float vShade;
varying float vH;
void main() {
  vec3 low = vec3(0.25, 0.55, 0.25);
  vec3 mid = vec3(0.55, 0.50, 0.35);
  vec3 high = vec3(0.95, 0.95, 0.95);
  vec3 c = vH < 0.6 ? mix(low, mid, vH / 0.6) : mix(mid, high, (vH - 0.6) / 0.4);
  gl_FragColor = vec4(c * vShade, 1.0);
}`;

export const BACKGROUND = [0.08, 0.09, 0.12];

function perspective(fovy, aspect, near, far) {
  const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
  return [f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0];
}

function lookAt(eye, at, up) {
  const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
  const norm = (a) => { const l = Math.hypot(...a) || 1; return a.map((x) => x / l); };
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const z = norm(sub(eye, at)), x = norm(cross(up, z)), y = cross(z, x);
  return [x[0], y[0], z[0], 0, x[1], y[1], z[1], 0, x[2], y[2], z[2], 0, -dot(x, eye), -dot(y, eye), -dot(z, eye), 1];
}

function mul(a, b) {
  const o = new Array(16).fill(0);
  for (let c = 0; c < 4; c++) for (let r = 0; r < 4; r++) {
    let s = 0;
    for (let k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
    o[c * 4 + r] = s;
  }
  return o;
}

export class View3D {
  // canvas: the <canvas>; load(tx, tz, quality) resolves to the encoded
  // mesh (ArrayBuffer); onStatus(text) reports progress.
  constructor(canvas, load, onStatus = () => {}) {
    this.canvas = canvas;
    this.load = load;
    this.onStatus = onStatus;
    this.yaw = 0.7; this.pitch = 0.6; this.dist = 900;
    this.tile = null; this.mesh = null; this.quality = null;
    this.moving = false; this.restTimer = 0; this.seq = 0;
    this.frames = 0;
    const opts = { preserveDrawingBuffer: true, antialias: false };
    this.gl = canvas.getContext('webgl2', opts);
    this.webgl = 2;
    if (!this.gl) { this.gl = canvas.getContext('webgl', opts); this.webgl = 1; }
    if (!this.gl) { this.webgl = 0; this.onStatus('WebGL is not available'); return; }
    if (this.webgl === 1) this.uint32 = !!this.gl.getExtension('OES_element_index_uint');
    else this.uint32 = true;
    this.initGL();
    this.bindInput();
  }

  initGL() {
    const gl = this.gl;
    const sh = (type, src) => {
      const s = gl.createShader(type);
      gl.shaderSource(s, src);
      gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error('view3d: ' + gl.getShaderInfoLog(s));
      return s;
    };
    const p = gl.createProgram();
    gl.attachShader(p, sh(gl.VERTEX_SHADER, VS));
    gl.attachShader(p, sh(gl.FRAGMENT_SHADER, FS));
    gl.linkProgram(p);
    if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error('view3d: ' + gl.getProgramInfoLog(p));
    this.prog = p;
    this.aPos = gl.getAttribLocation(p, 'aPos');
    this.aNormal = gl.getAttribLocation(p, 'aNormal');
    this.uMVP = gl.getUniformLocation(p, 'uMVP');
    this.uYRange = gl.getUniformLocation(p, 'uYRange');
    this.posBuf = gl.createBuffer();
    this.normBuf = gl.createBuffer();
    this.idxBuf = gl.createBuffer();
  }

  bindInput() {
    let last = null;
    this.canvas.addEventListener('pointerdown', (e) => { last = [e.clientX, e.clientY]; this.canvas.setPointerCapture(e.pointerId); this.setMoving(true); });
    this.canvas.addEventListener('pointermove', (e) => {
      if (!last) return;
      this.yaw += (e.clientX - last[0]) * 0.01;
      this.pitch = Math.min(1.5, Math.max(0.1, this.pitch + (e.clientY - last[1]) * 0.01));
      last = [e.clientX, e.clientY];
      this.draw();
    });
    const up = () => { last = null; this.setMoving(false); };
    this.canvas.addEventListener('pointerup', up);
    this.canvas.addEventListener('pointercancel', up);
    this.canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.dist = Math.min(3000, Math.max(150, this.dist * Math.exp(e.deltaY * 0.001)));
      this.setMoving(true);
      clearTimeout(this.wheelTimer);
      this.wheelTimer = setTimeout(() => this.setMoving(false), 200);
      this.draw();
    }, { passive: false });
  }

  // wantQuality is the quality the current camera needs.
  wantQuality() {
    return this.moving || this.dist > 1200 ? 'low' : 'full';
  }

  setMoving(m) {
    this.moving = m;
    clearTimeout(this.restTimer);
    if (!m) this.restTimer = setTimeout(() => this.refresh(), 250);
  }

  // show loads tile (tx, tz): low quality first, then what the camera needs.
  async show(tx, tz) {
    if (!this.gl) return;
    this.tile = [tx, tz];
    this.mesh = null; this.quality = null;
    await this.fetch('low');
    await this.refresh();
  }

  async refresh() {
    if (!this.tile) return;
    const q = this.wantQuality();
    if (this.quality === q || (this.quality === 'full' && q === 'low')) return;
    await this.fetch(q);
  }

  async fetch(quality) {
    const seq = ++this.seq;
    const [tx, tz] = this.tile;
    this.onStatus(`tile ${tx}, ${tz}: loading ${quality} mesh…`);
    try {
      const buf = await this.load(tx, tz, quality);
      if (seq !== this.seq) return;
      const m = decodeMesh(buf);
      this.upload(m);
      this.onStatus(`tile ${tx}, ${tz}: ${m.quality} mesh, ${m.positions.length / 3} vertices, ${m.indices.length / 3} triangles`);
    } catch (e) {
      if (seq === this.seq) this.onStatus(`tile ${tx}, ${tz}: ${e.message}`);
    }
  }

  upload(m) {
    const gl = this.gl;
    if (m.indices instanceof Uint32Array && !this.uint32) throw new Error('view3d: 32-bit indices unsupported');
    gl.bindBuffer(gl.ARRAY_BUFFER, this.posBuf);
    gl.bufferData(gl.ARRAY_BUFFER, m.positions, gl.STATIC_DRAW);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.normBuf);
    gl.bufferData(gl.ARRAY_BUFFER, m.normals, gl.STATIC_DRAW);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.idxBuf);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, m.indices, gl.STATIC_DRAW);
    this.mesh = m;
    this.quality = m.quality;
    this.draw();
  }

  draw() {
    const gl = this.gl;
    if (!gl) return;
    const w = this.canvas.width, h = this.canvas.height;
    gl.viewport(0, 0, w, h);
    gl.clearColor(BACKGROUND[0], BACKGROUND[1], BACKGROUND[2], 1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    const m = this.mesh;
    if (!m || m.indices.length === 0) return;
    gl.enable(gl.DEPTH_TEST);
    gl.useProgram(this.prog);
    const cx = (m.min[0] + m.max[0]) / 2, cy = (m.min[1] + m.max[1]) / 2, cz = (m.min[2] + m.max[2]) / 2;
    const eye = [
      cx + this.dist * Math.cos(this.pitch) * Math.cos(this.yaw),
      cy + this.dist * Math.sin(this.pitch),
      cz + this.dist * Math.cos(this.pitch) * Math.sin(this.yaw),
    ];
    const mvp = mul(perspective(Math.PI / 4, w / h, 5, 10000), lookAt(eye, [cx, cy, cz], [0, 1, 0]));
    gl.uniformMatrix4fv(this.uMVP, false, new Float32Array(mvp));
    gl.uniform2f(this.uYRange, m.min[1], m.max[1]);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.posBuf);
    gl.enableVertexAttribArray(this.aPos);
    gl.vertexAttribPointer(this.aPos, 3, gl.FLOAT, false, 0, 0);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.normBuf);
    gl.enableVertexAttribArray(this.aNormal);
    gl.vertexAttribPointer(this.aNormal, 3, gl.FLOAT, false, 0, 0);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.idxBuf);
    const type = m.indices instanceof Uint32Array ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT;
    gl.drawElements(gl.TRIANGLES, m.indices.length, type, 0);
    this.frames++;
  }

  // coverage reads the drawing buffer back and returns the share of pixels
  // that differ from the background.
  coverage() {
    const gl = this.gl;
    if (!gl) return 0;
    const w = gl.drawingBufferWidth, h = gl.drawingBufferHeight;
    const px = new Uint8Array(w * h * 4);
    gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, px);
    const bg = BACKGROUND.map((c) => Math.round(c * 255));
    let n = 0;
    for (let i = 0; i < px.length; i += 4) {
      if (Math.abs(px[i] - bg[0]) > 3 || Math.abs(px[i + 1] - bg[1]) > 3 || Math.abs(px[i + 2] - bg[2]) > 3) n++;
    }
    return n / (w * h);
  }
}
