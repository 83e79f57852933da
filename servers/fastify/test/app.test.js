// The Fastify app over real HTTP on 127.0.0.1 (one process, no cluster):
// every shared vector (contracts/vectors) through the real router, the
// headers every 200 and 400 carries, HEAD, 404 and 405, keep-alive and
// HTTP/1.0. The full black-box check of a running server is
// contracts/conformance (make check).

import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import { after, before, describe, test } from 'node:test'

import { DISPLAY_NAME } from '../app.js'
import { ALLOW, BAD_AT, BAD_N, CONTENT_TYPE } from '../lib/contract.js'
import { app as buildTestApp, vectors } from './helpers.js'

const HELLO = new RegExp(`^Hello World, from ${DISPLAY_NAME.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}! ` +
  '(\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{3})$')
const DAY = /^\d{4}-\d{2}-\d{2}$/

let app
let port
let agent

before(async () => {
  app = buildTestApp()
  await app.listen({ port: 0, host: '127.0.0.1' })
  port = app.server.address().port
  agent = new http.Agent({ keepAlive: true, maxSockets: 4 })
})

after(async () => {
  agent.destroy()
  await app.close()
})

/** One request, the target sent exactly as given (still percent-encoded). */
function fetch (method, target, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, agent, headers }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('latin1') }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

function isHello (body) {
  const m = HELLO.exec(body)
  return m !== null && Math.abs(Date.parse(m[1].replace(' ', 'T') + 'Z') - Date.now()) < 2000
}

/** GET target: status and body as expected, and the headers of every 200 and 400. */
async function expect (target, status, bodyOk) {
  const r = await fetch('GET', target)
  const where = `GET ${target}`
  assert.equal(r.status, status, `${where}: status (${r.body.slice(0, 80)})`)
  assert.ok(bodyOk(r.body), `${where}: body ${JSON.stringify(r.body.slice(0, 80))}`)
  assert.equal(r.headers['content-type'], CONTENT_TYPE, `${where}: Content-Type`)
  assert.equal(r.headers['content-length'], String(Buffer.byteLength(r.body, 'latin1')), `${where}: Content-Length`)
  assert.equal(r.headers['transfer-encoding'], undefined, `${where}: chunked`)
  assert.equal(r.headers['content-encoding'], undefined, `${where}: Content-Encoding`)
  assert.equal(r.headers['set-cookie'], undefined, `${where}: Set-Cookie`)
  const date = Date.parse(r.headers.date)
  assert.ok(/GMT$/.test(r.headers.date) && Math.abs(date - Date.now()) < 2000, `${where}: Date ${r.headers.date}`)
  return r
}

const is = (want) => (body) => body === want
const inputs = vectors('inputs.json')

describe('n (contracts/vectors/inputs.json)', () => {
  test('valid: n * 1000 bytes of X', async () => {
    for (const c of inputs.n.valid) await expect(`/?${c.raw}`, 200, is('X'.repeat(c.kb * 1000)))
  })
  test('hello cases', async () => {
    await expect('/', 200, isHello)
    for (const c of inputs.n.hello) await expect(`/?${c.raw}`, 200, isHello)
  })
  test('invalid: 400 with the exact body', async () => {
    for (const c of inputs.n.invalid) await expect(`/?${c.raw}`, 400, is(BAD_N))
    for (const raw of ['n=%', 'n=%4', 'n=1%', 'n=%C0%AF', 'n=%FF', 'n=%E2%82', 'n=1;n=2', 'n=1&N=2&n=']) {
      await expect(`/?${raw}`, 400, is(BAD_N))
    }
  })
  test('every n from 1 to 100', async () => {
    for (let n = 1; n <= 100; n++) await expect(`/?n=${n}`, 200, is('X'.repeat(n * 1000)))
  })
})

describe('workday', () => {
  test('valid at vectors', async () => {
    for (const c of inputs.at.valid) await expect(`/workday?${c.raw}`, 200, is(c.expect))
  })
  test('invalid at vectors: 400 with the exact body', async () => {
    for (const c of inputs.at.invalid) await expect(`/workday?${c.raw}`, 400, is(BAD_AT))
    for (const raw of ['at=2019-05-05T10:0%', 'at=%', 'at=2019-05-05T10:00%', 'at=%2', 'at=2019-05-05T10:0%FF']) {
      await expect(`/workday?${raw}`, 400, is(BAD_AT))
    }
  })
  test('workday.json through the router', async () => {
    for (const c of vectors('workday.json').cases) {
      await expect(`/workday?at=${encodeURIComponent(c.at)}`, 200, is(c.expect))
    }
  })
  test('now, and n ignored on /workday', async () => {
    await expect('/workday', 200, (b) => DAY.test(b))
    await expect('/workday?n=5', 200, (b) => DAY.test(b))
  })
})

describe('routing', () => {
  test('HEAD: the status and headers of GET, no body', async () => {
    for (const target of ['/', '/?n=100', '/?n=0', '/workday', '/workday?at=2019-05-05T10:00', '/workday?at=']) {
      const get = await fetch('GET', target)
      const head = await fetch('HEAD', target)
      assert.equal(head.status, get.status, `HEAD ${target}`)
      assert.equal(head.body, '', `HEAD ${target}`)
      assert.equal(head.headers['content-type'], CONTENT_TYPE, `HEAD ${target}`)
      assert.equal(head.headers['content-length'], get.headers['content-length'], `HEAD ${target}`)
    }
  })
  test('405 with Allow: GET, HEAD for other methods on known routes', async () => {
    for (const target of ['/', '/workday', '/?n=5', '/workday?at=2019-05-05T10:00', '/%77orkday']) {
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'QUERY', 'PROPFIND', 'PURGE', 'MKCOL', 'M-SEARCH']) {
        const r = await fetch(method, target, { 'content-length': '0' })
        assert.equal(r.status, 405, `${method} ${target}`)
        assert.equal(r.headers.allow, ALLOW, `${method} ${target}`)
      }
    }
  })
  test('405 and 404 also with a body, which is never parsed', async () => {
    for (const [method, path, status] of [['POST', '/', 405], ['QUERY', '/workday', 405], ['POST', '/nope', 404]]) {
      for (const [type, body] of [['application/json', '{"broken'], ['text/plain', 'hello'], ['x/y', 'hello'], [undefined, 'hello']]) {
        const r = await new Promise((resolve, reject) => {
          const headers = type ? { 'content-type': type } : {}
          const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
            res.resume()
            res.on('end', () => resolve(res))
          })
          req.on('error', reject)
          req.end(body)
        })
        assert.equal(r.statusCode, status, `${method} ${path} ${type}`)
      }
    }
    await expect('/?n=1', 200, is('X'.repeat(1000))) // the connections still serve
  })
  test('404 for other paths, whatever the method', async () => {
    for (const target of ['/workday/', '/index.html', '/nope', '/Workday', '/workday/x', '/favicon.ico', '//', '//workday']) {
      for (const method of ['GET', 'HEAD', 'POST']) {
        const r = await fetch(method, target, { 'content-length': '0' })
        assert.equal(r.status, 404, `${method} ${target}`)
      }
    }
  })
  test('the Fastify options in effect', () => {
    const c = app.initialConfig
    assert.deepEqual(
      [c.keepAliveTimeout, c.requestTimeout, c.connectionTimeout, c.forceCloseConnections, c.exposeHeadRoutes],
      [72000, 10000, 30000, 'idle', true])
    assert.equal(c.routerOptions.compile, true)
    assert.deepEqual([app.server.keepAliveTimeout, app.server.requestTimeout, app.server.timeout], [72000, 10000, 30000])
  })
  test('no Server header', async () => {
    assert.equal((await fetch('GET', '/')).headers.server, undefined)
  })
})

/** Raw bytes to the server; the whole answer up to the server's close or `until`. */
function raw (payload, until) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.end(payload))
    let data = ''
    sock.setEncoding('latin1')
    sock.on('data', (d) => {
      data += d
      if (until && until(data)) { sock.destroy(); resolve({ data, closed: false }) }
    })
    sock.on('end', () => resolve({ data, closed: true }))
    sock.on('error', reject)
    sock.setTimeout(5000, () => { sock.destroy(); resolve({ data, closed: false }) })
  })
}

describe('connections', () => {
  test('keep-alive: ten requests on one connection', async () => {
    const targets = ['/', '/?n=1', '/?n=10', '/workday', '/workday?at=2019-05-05T10:00']
    const payload = [...targets, ...targets].map((t) => `GET ${t} HTTP/1.1\r\nHost: x\r\n\r\n`).join('')
    const { data } = await raw(payload, (d) => (d.match(/HTTP\/1\.1 200 OK/g) || []).length === 10 && d.endsWith('2019-05-06'))
    assert.equal((data.match(/HTTP\/1\.1 200 OK/g) || []).length, 10)
    assert.ok(!/connection: close/i.test(data))
  })
  test('Connection: close is honoured', async () => {
    const { data, closed } = await raw('GET /?n=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    assert.ok(closed && data.startsWith('HTTP/1.1 200 OK') && data.endsWith('X'.repeat(1000)))
  })
  test('HTTP/1.0 with and without Host', async () => {
    for (const req of ['GET / HTTP/1.0\r\nHost: x\r\n\r\n', 'GET / HTTP/1.0\r\n\r\n']) {
      const { data, closed } = await raw(req)
      const [head, body] = data.split('\r\n\r\n')
      assert.ok(closed && /^HTTP\/1\.[01] 200 OK/.test(head), head)
      assert.ok(/\r\ncontent-length: \d+/i.test(head), head)
      assert.ok(isHello(body), body)
    }
  })
})
