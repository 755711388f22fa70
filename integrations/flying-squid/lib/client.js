'use strict'
// A small client of the rtp HTTP API (api/openapi.yaml). Every call is
// asynchronous and bounded by a timeout; calls that may be repeated are
// retried with a doubling back-off. Nothing here throws a stack trace at a
// player: errors are RtpError, with kind "unavailable" (rtp unreachable,
// timing out or answering 5xx), "no-location" or "rejected" (4xx).

class RtpError extends Error {
  constructor (kind, message, status = 0, code = '') {
    super(message)
    this.kind = kind
    this.status = status
    this.code = code
  }
}

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms).unref?.())

class Client {
  // cfg: url, token, timeoutMs, retries, backoffMs (see config.js).
  constructor (cfg, fetchImpl = globalThis.fetch) {
    this.cfg = cfg
    this.fetch = fetchImpl
  }

  // call does one request: it resolves to the decoded JSON answer (null
  // for 204) or rejects with an RtpError. timeoutMs bounds it.
  async call (method, path, body, timeoutMs = this.cfg.timeoutMs) {
    const headers = { 'X-RTP-Request': '1' }
    if (body !== undefined) headers['Content-Type'] = 'application/json'
    if (this.cfg.token) headers.Authorization = 'Bearer ' + this.cfg.token
    let res
    try {
      res = await this.fetch(this.cfg.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs)
      })
    } catch (err) {
      const why = err && err.name === 'TimeoutError' ? `no answer in ${timeoutMs} ms` : (err && err.cause && err.cause.code) || String(err && err.message)
      throw new RtpError('unavailable', `rtp ${method} ${path}: ${why}`)
    }
    let text = ''
    try { text = await res.text() } catch (err) {
      throw new RtpError('unavailable', `rtp ${method} ${path}: reading the answer: ${err.message}`)
    }
    if (res.ok) {
      if (!text) return null
      try { return JSON.parse(text) } catch {
        throw new RtpError('unavailable', `rtp ${method} ${path}: the answer is not JSON`)
      }
    }
    let code = ''
    let message = text.slice(0, 200)
    try {
      const e = JSON.parse(text).error
      code = e.code
      message = e.message
    } catch {}
    const err = new RtpError(res.status >= 500 ? 'unavailable' : 'rejected', `rtp ${method} ${path}: ${res.status} ${code}: ${message}`, res.status, code)
    if (code === 'no-location') err.kind = 'no-location'
    err.retryAfterMs = Number(res.headers.get('retry-after')) * 1000 || 0
    throw err
  }

  // retried is call, repeated on "unavailable" up to cfg.retries times,
  // waiting backoffMs, then twice that, and so on (or the Retry-After the
  // service asked for, when longer and at most 5 s).
  async retried (method, path, body) {
    let wait = this.cfg.backoffMs
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.call(method, path, body)
      } catch (err) {
        if (err.kind !== 'unavailable' || attempt >= this.cfg.retries) throw err
        await sleep(Math.min(Math.max(wait, err.retryAfterMs || 0), 5000))
        wait *= 2
      }
    }
  }

  teleport (region, player, sink) {
    const body = { player, waitMs: this.cfg.waitMs }
    if (sink) body.sink = sink
    return this.call('POST', `/v1/regions/${enc(region)}/teleports`, body, this.cfg.waitMs + this.cfg.timeoutMs)
  }

  // groupTeleport asks for one place per player, all within the region's
  // group radius of their centre: {locations: [{player, id, x, y, z,
  // standY, ...}]}, in the order of players.
  groupTeleport (region, players) {
    const body = { players, waitMs: this.cfg.waitMs }
    return this.call('POST', `/v1/regions/${enc(region)}/group-teleports`, body, this.cfg.waitMs + this.cfg.timeoutMs)
  }

  complete (id) { return this.retried('POST', `/v1/teleports/${id}/complete`) }
  cancel (id) { return this.retried('DELETE', `/v1/teleports/${id}`) }
  join (region, player) { return this.retried('POST', `/v1/regions/${enc(region)}/players/${enc(player)}/join`) }
  quit (region, player) { return this.retried('POST', `/v1/regions/${enc(region)}/players/${enc(player)}/quit`) }
  changes (world, chunks) { return this.retried('POST', `/v1/worlds/${enc(world)}/changes`, { chunks }) }
}

const enc = encodeURIComponent

module.exports = { Client, RtpError, sleep }
