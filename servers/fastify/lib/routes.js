// The answers of the contract's two routes to a parsed query string,
// independent of Fastify: app.js sends them, bench/contract-bench.js times
// them, so the microbenchmark measures the code the stack runs.

import { formatDay } from './calendar.js'
import { BAD_AT, BAD_N, helloFormatter, kb, localTimeOf, parseAt, parseN, single } from './contract.js'

/**
 * The two routes of one display name over one calendar. Each takes the
 * query as Fastify's parser gives it (request.query) and returns
 * { status, body }: a string or a shared, read-only Buffer.
 */
export function contractRoutes ({ calendar, displayName }) {
  const hello = helloFormatter(displayName)
  return {
    // GET / (and HEAD /): hello, or the n-KB body, or 400.
    root (query) {
      const n = single(query, 'n')
      if (n === undefined || n === '') {
        // Formatted per request: the body carries the time of the request.
        return { status: 200, body: hello(new Date()) }
      }
      const size = n === null ? -1 : parseN(n)
      return size < 0 ? { status: 400, body: BAD_N } : { status: 200, body: kb(size) }
    },
    // GET /workday (and HEAD): the trading day of now or of at, or 400.
    workday (query) {
      const at = single(query, 'at')
      const local = at === undefined ? localTimeOf(Date.now()) : at === null ? null : parseAt(at)
      if (local === null) return { status: 400, body: BAD_AT }
      return { status: 200, body: formatDay(calendar.tradingDay(local)) }
    }
  }
}
