// In-process microbenchmark of the contract's per-request path on Node.js:
// for every GET case of servers/_shared/microbench-cases.json (the inputs
// all languages' contract microbenchmarks share), the query parsed as
// Fastify parses it (fast-querystring, its default parser) and answered by
// lib/routes.js, the code app.js runs. Fastify's routing and reply and
// Node's HTTP layer are not in it.
//
//   node_modules/.bin/node bench/contract-bench.js [--rounds N] [--warmup CALLS] [--out FILE]
//
// No benchmark package: process.hrtime.bigint() around loops calibrated to
// about SAMPLE_NS each, after a warm-up long enough for V8 to optimise the
// path. The cases take turns, one sample each per round, so a busy minute
// on a shared machine falls on every case alike. Prints best and median ns
// per call; --out writes them as JSON (scripts/microbench.sh reads it).

import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

import { CALENDAR_FILE, DISPLAY_NAME, requestOf, routeCases } from './cases.js'
import { loadCalendar } from '../lib/calendar.js'
import { contractRoutes } from '../lib/routes.js'

const SAMPLE_NS = 20_000_000n

/** Nanoseconds of `loops` calls; the statuses are summed so that no call can be left out. */
function timeLoops (request, loops) {
  let sink = 0
  const started = process.hrtime.bigint()
  for (let i = 0; i < loops; i++) sink += request()
  const elapsed = process.hrtime.bigint() - started
  if (sink === 0) throw new Error('no call answered')
  return Number(elapsed)
}

/** The number of calls that takes about SAMPLE_NS. */
function calibrate (request) {
  let loops = 1000
  while (BigInt(timeLoops(request, loops)) < SAMPLE_NS / 4n) loops *= 2
  return Math.max(1, Math.round((loops * Number(SAMPLE_NS)) / timeLoops(request, loops)))
}

function median (values) {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

function measure (cases, routes, rounds, warmupCalls) {
  const benches = cases.map((c) => ({ c, request: requestOf(routes, c), perCall: [] }))
  for (const b of benches) {
    const status = b.request()
    if (status !== b.c.status) throw new Error(`${b.c.name}: status ${status}, expected ${b.c.status}`)
    for (let i = 0; i < warmupCalls; i++) b.request()
    b.loops = calibrate(b.request)
  }
  for (let round = 0; round < rounds; round++) {
    for (const b of benches) b.perCall.push(timeLoops(b.request, b.loops) / b.loops)
  }
  return benches.map(({ c, perCall }) => ({
    name: c.name,
    best_ns: Math.min(...perCall),
    median_ns: median(perCall),
    samples: perCall.length
  }))
}

function main () {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '30' },
      // Calls per case before timing: enough for V8 to optimise the path.
      warmup: { type: 'string', default: '200000' },
      out: { type: 'string' }
    }
  })
  const routes = contractRoutes({ calendar: loadCalendar(CALENDAR_FILE), displayName: DISPLAY_NAME })
  const results = measure(routeCases(), routes, Number(values.rounds), Number(values.warmup))
  for (const r of results) {
    console.log(`${r.name.padEnd(20)} best ${r.best_ns.toFixed(1)} ns  median ${r.median_ns.toFixed(1)} ns`)
  }
  if (values.out) {
    const report = { language: 'node', runtime: `Node.js ${process.version}`, cases: results }
    writeFileSync(values.out, JSON.stringify(report, null, 2) + '\n')
  }
}

main()
