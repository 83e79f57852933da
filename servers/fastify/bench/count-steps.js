// The step program scripts/count_instructions.py (make instructions) runs
// under valgrind's callgrind to count the instructions of one request of a
// case: the case's query parsed as Fastify parses it and answered by
// lib/routes.js, as bench/contract-bench.js times it. Before each of three
// steps (200,000 requests of warm-up, so that V8 has optimised the path; no
// request; N requests) it reads process.ppid, which calls libuv's
// uv_os_getppid, the function callgrind dumps before; then it prints the
// case's name. (N requests - none) / N is one request's instructions.
//
//   node --predictable --expose-gc bench/count-steps.js [--calls N] CASE
//
// One case a process: V8's type feedback is shared between closures of one
// site, so a case's count would depend on the cases run before it.
// --predictable puts V8's compiler and collector on this thread, in an order
// neither the scheduler nor the clock changes; a minor collection before each
// step keeps a scavenge from landing in one step and not the other.
//
// The clock is read on every request, as the routes do (new Date(),
// Date.now()), but answers one instant, HELD_AT, the same on every day: the
// instant in microbench-cases.json (held_at_ms), read once at start. The
// cost of formatting a time depends on its digits (hello: 9,442 instructions
// at 00:00:00.000, 9,076 at 23:59:59.999), so a live clock made the count
// move with the hour it was taken at (1.30% between two days).

import { parseArgs } from 'node:util'

import { CALENDAR_FILE, DISPLAY_NAME, heldAt, requestOf, routeCases } from './cases.js'
import { loadCalendar } from '../lib/calendar.js'
import { contractRoutes } from '../lib/routes.js'

const WARMUP_CALLS = 200_000
const HELD_AT = heldAt()

// Date as the routes see it while counting: the real clock is read, HELD_AT
// is answered; everything else is Date's.
function holdTheClock () {
  const RealDate = Date
  globalThis.Date = class HeldDate extends RealDate {
    constructor (...args) {
      if (args.length > 0) super(...args)
      else {
        RealDate.now()
        super(HELD_AT)
      }
    }

    static now () {
      RealDate.now()
      return HELD_AT
    }
  }
}

function step (request, calls) {
  globalThis.gc({ type: 'minor' })
  void process.ppid // the marker
  let sink = 0
  for (let i = 0; i < calls; i++) sink += request()
  return sink
}

function main () {
  const { values, positionals } = parseArgs({
    options: { calls: { type: 'string', default: '2000' } },
    allowPositionals: true
  })
  if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc')
  holdTheClock()
  const routes = contractRoutes({ calendar: loadCalendar(CALENDAR_FILE), displayName: DISPLAY_NAME })
  const calls = Number(values.calls)
  for (const c of routeCases().filter((c) => positionals.includes(c.name))) {
    const request = requestOf(routes, c)
    const status = request()
    if (status !== c.status) throw new Error(`${c.name}: status ${status}, expected ${c.status}`)
    for (const n of [WARMUP_CALLS, 0, calls]) step(request, n)
    console.log(c.name)
  }
  void process.ppid
}

main()
