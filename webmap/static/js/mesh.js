// Decoder of the terrain mesh encoding served on
// /v1/worlds/{world}/meshes/{tx}/{tz} (version 1, little-endian):
//
//   0   4   magic "RTPM"
//   4   1   version (1)
//   5   1   quality (1 full, 2 low)
//   6   1   flags: bit 0 = 32-bit indices
//   7   1   reserved, zero
//   8   8   OriginX int64
//   16  8   OriginZ int64
//   24  12  bounds min x, y, z float32
//   36  12  bounds max x, y, z float32
//   48  4   vertex count V
//   52  4   index count I (multiple of 3)
//   56  6V  positions, uint16 per axis, q/65535 of the way from min to max
//   .   2V  normals, octahedral, two int8 (snorm /127)
//   .   2I or 4I indices (uint16 when V <= 65536, else uint32)
//   .   4   CRC-32C of every byte before it

export const MESH_VERSION = 1;
const HEADER = 56;

let crcTable = null;

// crc32c returns the CRC-32C (Castagnoli) of bytes.
export function crc32c(bytes) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = crcTable[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function octDecode(qu, qw, out, o) {
  let u = Math.max(qu / 127, -1);
  let w = Math.max(qw / 127, -1);
  const v = 1 - Math.abs(u) - Math.abs(w);
  if (v < 0) {
    const su = u < 0 ? -1 : 1, sw = w < 0 ? -1 : 1;
    const nu = (1 - Math.abs(w)) * su;
    w = (1 - Math.abs(u)) * sw;
    u = nu;
  }
  const n = Math.hypot(u, v, w);
  out[o] = u / n; out[o + 1] = v / n; out[o + 2] = w / n;
}

// decodeMesh parses buf (an ArrayBuffer) and returns
// {quality, originX, originZ, min, max, positions: Float32Array,
//  normals: Float32Array, indices: Uint16Array|Uint32Array}; it throws an
// Error starting with "mesh:" on any malformed input.
export function decodeMesh(buf) {
  const b = new Uint8Array(buf);
  if (b.length < HEADER + 4) throw new Error(`mesh: ${b.length} bytes, shorter than the header`);
  if (b[0] !== 0x52 || b[1] !== 0x54 || b[2] !== 0x50 || b[3] !== 0x4d) throw new Error('mesh: bad magic');
  if (b[4] !== MESH_VERSION) throw new Error(`mesh: version ${b[4]}, this reader handles ${MESH_VERSION}`);
  const quality = b[5], flags = b[6];
  if (quality !== 1 && quality !== 2) throw new Error(`mesh: invalid quality ${quality}`);
  if ((flags & ~1) !== 0 || b[7] !== 0) throw new Error('mesh: unknown flags');
  const dv = new DataView(buf);
  const originX = Number(dv.getBigInt64(8, true));
  const originZ = Number(dv.getBigInt64(16, true));
  const min = [0, 1, 2].map((a) => dv.getFloat32(24 + 4 * a, true));
  const max = [0, 1, 2].map((a) => dv.getFloat32(36 + 4 * a, true));
  for (let a = 0; a < 3; a++) {
    if (!Number.isFinite(min[a]) || !Number.isFinite(max[a]) || min[a] > max[a]) throw new Error('mesh: bad bounds');
  }
  const nv = dv.getUint32(48, true), ni = dv.getUint32(52, true);
  if (ni % 3 !== 0) throw new Error('mesh: index count not a multiple of 3');
  const wide = (flags & 1) !== 0;
  if (wide !== nv > 65536) throw new Error('mesh: index width disagrees with vertex count');
  const iw = wide ? 4 : 2;
  const need = HEADER + 8 * nv + iw * ni + 4;
  if (b.length !== need) throw new Error(`mesh: ${b.length} bytes, header implies ${need}`);
  const body = b.subarray(0, need - 4);
  if (crc32c(body) !== dv.getUint32(need - 4, true)) throw new Error('mesh: checksum mismatch');

  const positions = new Float32Array(3 * nv);
  const step = [0, 1, 2].map((a) => (max[a] - min[a]) / 65535);
  let p = HEADER;
  for (let v = 0; v < 3 * nv; v++) {
    const a = v % 3;
    positions[v] = min[a] + dv.getUint16(p, true) * step[a];
    p += 2;
  }
  const normals = new Float32Array(3 * nv);
  for (let v = 0; v < nv; v++) {
    octDecode(dv.getInt8(p), dv.getInt8(p + 1), normals, 3 * v);
    p += 2;
  }
  const indices = wide ? new Uint32Array(ni) : new Uint16Array(ni);
  for (let i = 0; i < ni; i++) {
    const ix = wide ? dv.getUint32(p, true) : dv.getUint16(p, true);
    if (ix >= nv) throw new Error(`mesh: index ${i} is ${ix}, only ${nv} vertices`);
    indices[i] = ix;
    p += iw;
  }
  return { quality: quality === 1 ? 'full' : 'low', originX, originZ, min, max, positions, normals, indices };
}
