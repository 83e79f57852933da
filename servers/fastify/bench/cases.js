// The inputs of the contract's microbenchmark (contract-bench.js) and of its
// instruction counter (count-steps.js): the GET cases of
// servers/_shared/microbench-cases.json on / and /workday, each request the
// query parsed as Fastify parses it (fast-querystring, its default parser)
// and answered by lib/routes.js, the code app.js runs.

import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

// Fastify's default query parser (a dependency of fastify, pinned in package-lock.json).
import { parse as parseQuery } from 'fast-querystring'

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const CASES_FILE = `${REPO_ROOT}servers/_shared/microbench-cases.json`
export const CALENDAR_FILE = `${REPO_ROOT}contracts/calendar/xshg-non-trading-weekdays.txt`
export const DISPLAY_NAME = 'Node.js Fastify'

function casesFile () {
  return JSON.parse(readFileSync(CASES_FILE, 'utf8'))
}

/** The cases this library answers: GET on / and /workday (routing is Fastify's). */
export function routeCases () {
  const { cases } = casesFile()
  return cases.filter((c) => c.method === 'GET' && (c.path === '/' || c.path === '/workday'))
}

/** The file's held_at_ms: the instant count-steps.js hands the routes, in ms since the epoch. */
export function heldAt () {
  const { held_at_ms: heldAtMs } = casesFile()
  if (!Number.isSafeInteger(heldAtMs)) throw new Error(`${CASES_FILE}: no held_at_ms`)
  return heldAtMs
}

/** One request of a case as a function returning its status. */
export function requestOf (routes, c) {
  const answer = c.path === '/workday' ? routes.workday : routes.root
  const query = c.query
  return () => answer(parseQuery(query)).status
}
