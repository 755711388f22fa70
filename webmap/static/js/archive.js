// Archive: the browser's IndexedDB store of the tiles and meshes the page
// fetched, so that a reload draws without asking the service again.
//
// Rules:
//   - An entry's identity is its full key: world, producer version, format
//     version, kind (tile|mesh), zoom, tx, tz and quality.
//   - Every entry carries the byte length and a digest of its body; a read
//     that does not match both deletes the entry and reports a miss.
//   - The archive is bounded by entry count and by bytes; a write evicts the
//     least recently used entries in the same transaction (store "lru").
//   - Every entry carries the terrain epoch of its world. When the service
//     reports a new epoch, setEpoch drops the world's entries and records the
//     new epoch in the same transaction; a write whose epoch is not the
//     recorded one is discarded inside its transaction, so an in-flight
//     fetch of old terrain can never repopulate the archive.
//   - Writes are fire-and-forget for the caller: put returns at once.

const DB_NAME = 'rtp-map';
const DB_VERSION = 1;
const TOTALS = '#totals';

// fnv1a32 returns the 32-bit FNV-1a hash of bytes as 8 hex digits.
export function fnv1a32(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i];
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

// digest returns {alg, hex} of buf: SHA-256 where crypto.subtle exists (secure
// contexts), FNV-1a otherwise.
export async function digest(buf, alg) {
  const want = alg || (globalThis.crypto && crypto.subtle ? 'sha256' : 'fnv1a32');
  if (want === 'sha256') {
    if (!(globalThis.crypto && crypto.subtle)) return null;
    const d = new Uint8Array(await crypto.subtle.digest('SHA-256', buf));
    let hex = '';
    for (const b of d) hex += b.toString(16).padStart(2, '0');
    return { alg: 'sha256', hex };
  }
  if (want === 'fnv1a32') return { alg: 'fnv1a32', hex: fnv1a32(new Uint8Array(buf)) };
  return null;
}

// archiveKey builds the full identity of an entry.
export function archiveKey(k) {
  return [k.world, k.producer, k.format, k.kind, k.zoom, k.tx, k.tz, k.quality].join('|');
}

function req(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error || new Error('archive: transaction aborted'));
    tx.onerror = () => reject(tx.error);
  });
}

export class Archive {
  // maxEntries and maxBytes bound the archive (defaults 2000 entries, 256
  // MiB); name is the IndexedDB database (default "rtp-map").
  constructor({ maxEntries = 2000, maxBytes = 256 << 20, name = DB_NAME } = {}) {
    this.name = name;
    this.maxEntries = maxEntries;
    this.maxBytes = maxBytes;
    this.stats = { hits: 0, misses: 0, puts: 0, rejected: 0, corrupt: 0, evicted: 0, cleared: 0, errors: 0 };
    this.clock = Date.now();
    this.db = null;
    this.opening = this.open();
  }

  async open() {
    if (!globalThis.indexedDB) return null;
    try {
      const r = indexedDB.open(this.name, DB_VERSION);
      r.onupgradeneeded = () => {
        const db = r.result;
        const entries = db.createObjectStore('entries', { keyPath: 'key' });
        entries.createIndex('world', 'world');
        const lru = db.createObjectStore('lru', { keyPath: 'key' });
        lru.createIndex('at', 'at');
        lru.createIndex('world', 'world');
        db.createObjectStore('meta', { keyPath: 'id' });
      };
      this.db = await req(r);
      this.db.onversionchange = () => { this.db.close(); this.db = null; };
      return this.db;
    } catch (e) {
      this.stats.errors++;
      return null;
    }
  }

  // tick returns a strictly increasing LRU stamp.
  tick() {
    this.clock = Math.max(this.clock + 1, Date.now());
    return this.clock;
  }

  // setEpoch records the terrain epoch of world. When it differs from the
  // recorded one, every entry of the world is deleted in the same
  // transaction. It resolves to true when entries were dropped.
  async setEpoch(world, epoch) {
    const db = await this.opening;
    if (!db) return false;
    const tx = db.transaction(['entries', 'lru', 'meta'], 'readwrite');
    const meta = tx.objectStore('meta');
    let dropped = false;
    const cur = await req(meta.get('epoch:' + world));
    if (!cur || cur.epoch !== epoch) {
      if (cur) {
        dropped = await this.dropWorld(tx, world);
      }
      meta.put({ id: 'epoch:' + world, epoch });
    }
    await done(tx);
    if (dropped) this.stats.cleared++;
    return dropped;
  }

  // dropWorld deletes the world's entries inside tx and fixes the totals.
  async dropWorld(tx, world) {
    const lru = tx.objectStore('lru');
    const entries = tx.objectStore('entries');
    const meta = tx.objectStore('meta');
    const rows = await req(lru.index('world').getAll(world));
    const totals = (await req(meta.get(TOTALS))) || { id: TOTALS, count: 0, bytes: 0 };
    for (const row of rows) {
      lru.delete(row.key);
      entries.delete(row.key);
      totals.count--;
      totals.bytes -= row.size;
    }
    totals.count = Math.max(0, totals.count);
    totals.bytes = Math.max(0, totals.bytes);
    meta.put(totals);
    return rows.length > 0;
  }

  // get resolves to the validated body (ArrayBuffer) of key, or null. An
  // entry of another epoch or one failing validation is deleted.
  async get(key, epoch) {
    const db = await this.opening;
    if (!db) { this.stats.misses++; return null; }
    let e;
    try {
      e = await req(db.transaction('entries').objectStore('entries').get(key));
    } catch (err) {
      this.stats.errors++;
      return null;
    }
    if (!e) { this.stats.misses++; return null; }
    let ok = e.epoch === epoch && e.body instanceof ArrayBuffer && e.body.byteLength === e.len;
    if (ok) {
      const d = await digest(e.body, e.alg);
      ok = d !== null && d.hex === e.digest;
      if (!ok && d !== null) this.stats.corrupt++;
    }
    if (!ok) {
      this.stats.misses++;
      this.remove(key).catch(() => { this.stats.errors++; });
      return null;
    }
    this.stats.hits++;
    this.touch(key).catch(() => { this.stats.errors++; });
    return e.body;
  }

  // touch marks key as just used.
  async touch(key) {
    const db = await this.opening;
    if (!db) return;
    const tx = db.transaction('lru', 'readwrite');
    const lru = tx.objectStore('lru');
    const row = await req(lru.get(key));
    if (row) { row.at = this.tick(); lru.put(row); }
    await done(tx);
  }

  // remove deletes key.
  async remove(key) {
    const db = await this.opening;
    if (!db) return;
    const tx = db.transaction(['entries', 'lru', 'meta'], 'readwrite');
    const lru = tx.objectStore('lru');
    const meta = tx.objectStore('meta');
    const row = await req(lru.get(key));
    tx.objectStore('entries').delete(key);
    if (row) {
      lru.delete(key);
      const totals = (await req(meta.get(TOTALS))) || { id: TOTALS, count: 0, bytes: 0 };
      totals.count = Math.max(0, totals.count - 1);
      totals.bytes = Math.max(0, totals.bytes - row.size);
      meta.put(totals);
    }
    await done(tx);
  }

  // put stores body under key, tagged with world and epoch, without making
  // the caller wait: it returns a promise the caller may ignore. The write
  // is discarded when the world's recorded epoch is not epoch, and it
  // evicts least recently used entries until the bounds hold.
  put(key, world, epoch, body) {
    const p = this.write(key, world, epoch, body).catch(() => { this.stats.errors++; return false; });
    return p;
  }

  async write(key, world, epoch, body) {
    if (body.byteLength > this.maxBytes) return false;
    const d = await digest(body);
    const db = await this.opening;
    if (!db) return false;
    const tx = db.transaction(['entries', 'lru', 'meta'], 'readwrite');
    const entries = tx.objectStore('entries');
    const lru = tx.objectStore('lru');
    const meta = tx.objectStore('meta');
    const cur = await req(meta.get('epoch:' + world));
    if (!cur || cur.epoch !== epoch) {
      this.stats.rejected++;
      await done(tx);
      return false;
    }
    const totals = (await req(meta.get(TOTALS))) || { id: TOTALS, count: 0, bytes: 0 };
    const old = await req(lru.get(key));
    if (old) { totals.count--; totals.bytes -= old.size; }
    entries.put({ key, world, epoch, body, len: body.byteLength, alg: d.alg, digest: d.hex });
    lru.put({ key, world, at: this.tick(), size: body.byteLength });
    totals.count++;
    totals.bytes += body.byteLength;
    // Evict the least recently used entries, oldest first, in this
    // transaction.
    if (totals.count > this.maxEntries || totals.bytes > this.maxBytes) {
      await new Promise((resolve, reject) => {
        const c = lru.index('at').openCursor();
        c.onerror = () => reject(c.error);
        c.onsuccess = () => {
          const cursor = c.result;
          if (!cursor || (totals.count <= this.maxEntries && totals.bytes <= this.maxBytes)) {
            resolve();
            return;
          }
          const row = cursor.value;
          if (row.key !== key) {
            entries.delete(row.key);
            cursor.delete();
            totals.count--;
            totals.bytes -= row.size;
            this.stats.evicted++;
          }
          cursor.continue();
        };
      });
    }
    meta.put(totals);
    await done(tx);
    this.stats.puts++;
    return true;
  }

  // totals resolves to {count, bytes} of the archive.
  async totals() {
    const db = await this.opening;
    if (!db) return { count: 0, bytes: 0 };
    const t = await req(db.transaction('meta').objectStore('meta').get(TOTALS));
    return t ? { count: t.count, bytes: t.bytes } : { count: 0, bytes: 0 };
  }

  // keys resolves to every stored key (for tests and the debug hook).
  async keys() {
    const db = await this.opening;
    if (!db) return [];
    return req(db.transaction('entries').objectStore('entries').getAllKeys());
  }

  // list resolves to {key, world, epoch, len} of every entry (for tests and
  // the debug hook).
  async list() {
    const db = await this.opening;
    if (!db) return [];
    const all = await req(db.transaction('entries').objectStore('entries').getAll());
    return all.map((e) => ({ key: e.key, world: e.world, epoch: e.epoch, len: e.len }));
  }

  // corrupt overwrites the first byte of key's body without fixing its
  // digest (a test hook for the validation path).
  async corrupt(key) {
    const db = await this.opening;
    if (!db) return false;
    const tx = db.transaction('entries', 'readwrite');
    const s = tx.objectStore('entries');
    const e = await req(s.get(key));
    if (!e) { await done(tx); return false; }
    const b = new Uint8Array(e.body.slice(0));
    b[0] ^= 0xff;
    e.body = b.buffer;
    s.put(e);
    await done(tx);
    return true;
  }
}
