// server.js end to end: the primary forks WORKERS workers that serve, stops
// cleanly (status 0) on SIGTERM and SIGINT, and fails loudly on a busy port
// or a bad environment.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import net from 'node:net'
import { describe, test } from 'node:test'

import { CALENDAR_FILE, STACK_DIR } from './helpers.js'

function freePort () {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

function start (env) {
  const child = spawn(process.execPath, ['server.js'], {
    cwd: STACK_DIR,
    env: { ...process.env, HOST: '127.0.0.1', WORKDAY_CALENDAR: CALENDAR_FILE, ...env },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })))
  return { child, exited, stderr: () => stderr }
}

async function waitFor (predicate, ms = 15000) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await predicate()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

async function get (port, target) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${target}`)
    return { status: res.status, body: await res.text() }
  } catch {
    return null
  }
}

describe('server.js', () => {
  for (const signal of ['SIGTERM', 'SIGINT']) {
    test(`serves with two workers and exits 0 on ${signal}`, async () => {
      const port = await freePort()
      const server = start({ PORT: String(port), WORKERS: '2' })
      assert.ok(await waitFor(() => server.stderr().includes('listening')), server.stderr())
      assert.match(server.stderr(), /with 2 worker process\(es\)/)
      const r = await get(port, '/workday?at=2019-05-05T10:00')
      assert.deepEqual(r, { status: 200, body: '2019-05-06' })
      server.child.kill(signal)
      const { code } = await server.exited
      assert.equal(code, 0, server.stderr())
      assert.equal(await get(port, '/'), null) // nothing listens any more
    })
  }

  test('a busy port stops the server with status 1', async () => {
    const blocker = net.createServer()
    await new Promise((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const server = start({ PORT: String(blocker.address().port), WORKERS: '2' })
    const { code, stderr } = await server.exited
    blocker.close()
    assert.equal(code, 1)
    assert.match(stderr, /EADDRINUSE/)
  })

  test('a missing calendar is a configuration error (status 2) naming WORKDAY_CALENDAR', async () => {
    const server = start({ PORT: '1', WORKDAY_CALENDAR: '/nonexistent/calendar.txt' })
    const { code, stderr } = await server.exited
    assert.equal(code, 2)
    assert.match(stderr, /WORKDAY_CALENDAR=\/nonexistent\/calendar.txt/)
  })
})
