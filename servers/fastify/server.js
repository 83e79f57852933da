// serverlab on Fastify: the primary process reads the configuration, forks
// WORKERS worker processes with node:cluster and supervises them; each worker
// runs one Fastify instance (app.js) on one event loop, and the workers share
// the listening socket.
//
//   PORT=8161 WORKDAY_CALENDAR=../../contracts/calendar/xshg-non-trading-weekdays.txt \
//     node_modules/.bin/node server.js
//
// Environment: PORT (required), HOST (default 0.0.0.0), WORKERS (default: the
// CPUs this process may use, lib/config.js), WORKDAY_CALENDAR (required).
// SIGTERM or SIGINT stops it gracefully: the workers finish their in-flight
// requests and exit, then the primary exits 0.

import cluster from 'node:cluster'
import process from 'node:process'

import { buildApp, DISPLAY_NAME } from './app.js'
import { ConfigError, configFromEnv } from './lib/config.js'

const NAME = 'fastify'
// Listen backlog: Node's default is 511; 2048 as the other stacks (gunicorn's
// default), so bursts of new connections are not dropped (the kernel caps it
// at net.core.somaxconn).
const BACKLOG = 2048
// A graceful stop that takes longer than this ends with SIGKILL.
const GRACE_MS = 10_000

function log (message) {
  process.stderr.write(`${NAME}: ${message}\n`)
}

function config () {
  try {
    return configFromEnv()
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    log(`configuration error: ${err.message}`)
    process.exit(2)
  }
}

// -- the primary: fork, forward stop signals, restart crashed workers --------

function primary () {
  const cfg = config() // fail fast, before any fork, on a bad environment or calendar
  // Round-robin (node:cluster's default on Linux): the primary accepts each
  // new connection and hands it to the next worker, which spreads
  // connections evenly; with SCHED_NONE the kernel's wake-ups pile them onto
  // a few workers (Node's cluster documentation). Keep-alive connections then
  // stay with their worker; the primary serves no request.
  cluster.schedulingPolicy = cluster.SCHED_RR
  let stopping = false
  let listening = 0
  let exitCode = 0

  function fork () {
    const worker = cluster.fork()
    worker.once('listening', () => {
      worker.served = true
      if (++listening === cfg.workers) {
        log(`${DISPLAY_NAME} (Fastify on Node.js ${process.version}) listening on ` +
          `${cfg.host}:${cfg.port} with ${cfg.workers} worker process(es), ` +
          `${cfg.calendar.count} non-trading weekdays in the calendar`)
      }
    })
  }

  function stop (signal) {
    if (stopping) return
    stopping = true
    for (const worker of Object.values(cluster.workers)) worker.process.kill(signal)
    setTimeout(() => {
      log(`workers still running after ${GRACE_MS} ms; killing them`)
      for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGKILL')
      process.exit(1)
    }, GRACE_MS).unref()
  }

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers).length === 0) process.exit(exitCode)
      return
    }
    if (!worker.served) {
      // It never listened (busy port, bad address): it cannot serve, so the
      // whole server stops instead of restarting it in a loop.
      log(`worker ${worker.process.pid} exited (${signal ?? code}) before listening; stopping`)
      exitCode = 1
      stop('SIGTERM')
      if (Object.keys(cluster.workers).length === 0) process.exit(exitCode)
      return
    }
    log(`worker ${worker.process.pid} exited (${signal ?? code}); starting another`)
    fork()
  })

  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGTERM'))
  for (let i = 0; i < cfg.workers; i++) fork()
}

// -- a worker: one Fastify instance ----------------------------------------------

async function worker () {
  const cfg = config()
  const app = buildApp({ calendar: cfg.calendar })
  let closing = false
  const close = () => {
    if (closing) return
    closing = true
    // Stop accepting, close idle keep-alive connections, let in-flight
    // requests finish (forceCloseConnections: 'idle'), then leave.
    app.close().then(() => process.exit(0), (err) => {
      log(`close: ${err.message}`)
      process.exit(1)
    })
  }
  // SIGTERM from the primary; SIGINT as well when a terminal's Ctrl-C
  // reaches the whole process group.
  process.on('SIGTERM', close)
  process.on('SIGINT', close)
  try {
    await app.listen({ port: cfg.port, host: cfg.host, backlog: BACKLOG })
  } catch (err) {
    log(`cannot listen on ${cfg.host}:${cfg.port}: ${err.message}`)
    process.exit(1)
  }
}

if (cluster.isPrimary) primary()
else await worker()
