// The contract's logic for a Node.js stack, independent of the HTTP layer:
// the n and at parameters, the hello text and the n-KB bodies
// (contracts/README.md). The workday rule and the calendar live in
// calendar.js. Plain functions over strings and Buffers: test/contract.test.js
// runs the workday vectors against them directly, test/app.test.js every
// shared vector (contracts/vectors) through Fastify over HTTP.

import { Buffer } from 'node:buffer'

/** The exact Content-Type of every 200 and 400 response. */
export const CONTENT_TYPE = 'text/plain; charset=utf-8'
/** The Allow header of a 405 on a known route. */
export const ALLOW = 'GET, HEAD'
/** The 400 bodies, verbatim from the contract. */
export const BAD_N = 'n must be an integer between 1 and 100'
export const BAD_AT = 'at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]'

/** The largest n the contract accepts. */
export const MAX_KB = 100

// One read-only buffer of MAX_KB * 1000 ASCII 'X', built once at start-up;
// every n-KB body is a view of its first n * 1000 bytes (no copy, no
// allocation per response). The contract allows pre-built bodies.
const XS = Buffer.alloc(MAX_KB * 1000, 'X')
const KB_BODIES = Array.from({ length: MAX_KB + 1 }, (_, n) => XS.subarray(0, n * 1000))

/** The n-KB body: exactly n * 1000 bytes of 'X' (n in 1..MAX_KB), shared: never written to. */
export function kb (n) {
  return KB_BODIES[n]
}

/**
 * One known parameter of request.query as Fastify's default query parser
 * (fast-querystring) gives it: undefined when absent, null when it is given
 * more than once (an array, even of equal or empty values: a 400), else its
 * decoded string. fast-querystring splits pairs on '&' only, decodes '+' as
 * a space and %XX as UTF-8, and keeps a value whose percent-encoding is
 * invalid (n=%ZZ, n=%FF) as raw text: that text still holds a '%', which no
 * valid n or at contains, so the strict parsers below reject it (400).
 */
export function single (query, name) {
  const value = query[name]
  if (value === undefined || typeof value === 'string') return value
  return null
}

function digitsAt (s, start, count) {
  let v = 0
  for (let i = start; i < start + count; i++) {
    const c = s.charCodeAt(i) - 48
    if (c < 0 || c > 9) return -1
    v = v * 10 + c
  }
  return v
}

/**
 * The n parameter: one to three ASCII digits (leading zeros allowed) with a
 * value of 1..100, else -1. Signs, spaces, underscores, other Unicode
 * digits and four or more digits are rejected (Number() and parseInt()
 * accept several of them).
 */
export function parseN (s) {
  if (s.length < 1 || s.length > 3) return -1
  const v = digitsAt(s, 0, s.length)
  return v >= 1 && v <= MAX_KB ? v : -1
}

/** Days in month m (1..12) of year y, proleptic Gregorian. */
export function daysIn (y, m) {
  if (m === 2) return (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)) ? 29 : 28
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31
}

/** Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil). */
export function dayNumber (y, m, d) {
  y -= m <= 2 ? 1 : 0
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

/**
 * Parse YYYY-MM-DD (ASCII digits, a real date) into its day number, else
 * null. Used for the calendar file and for the date part of at.
 */
export function parseDate (s) {
  if (s.length !== 10 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return null
  const y = digitsAt(s, 0, 4)
  const m = digitsAt(s, 5, 2)
  const d = digitsAt(s, 8, 2)
  if (y < 0 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m)) return null
  return dayNumber(y, m, d)
}

/**
 * The at parameter: exactly YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS in
 * exchange-local time, year 1970..2199, a real date, hour 0..23, minute and
 * second 0..59. Returns { day, seconds } (day number, seconds since local
 * midnight) or null. Checked character by character: Date.parse accepts
 * far more than the contract allows (offsets, fractions, 24:00).
 */
export function parseAt (s) {
  const len = s.length
  if (len !== 16 && len !== 19) return null
  if (s.charCodeAt(10) !== 84 || s.charCodeAt(13) !== 58 || (len === 19 && s.charCodeAt(16) !== 58)) {
    return null // 'T', ':' and ':'
  }
  const day = parseDate(s.slice(0, 10))
  if (day === null) return null
  const y = digitsAt(s, 0, 4)
  if (y < 1970 || y > 2199) return null
  const hh = digitsAt(s, 11, 2)
  const mm = digitsAt(s, 14, 2)
  const ss = len === 19 ? digitsAt(s, 17, 2) : 0
  if (hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 59) return null
  return { day, seconds: hh * 3600 + mm * 60 + ss }
}

/** Exchange local time (Asia/Shanghai, a fixed UTC+08:00) of an epoch-millisecond instant. */
export function localTimeOf (ms) {
  const local = Math.floor(ms / 1000) + 8 * 3600 // whole seconds
  const day = Math.floor(local / 86400)
  return { day, seconds: local - day * 86400 }
}

/**
 * The hello body formatter of one display name: "Hello World, from
 * <name>! YYYY-MM-DD HH:MM:SS.mmm", UTC, always three millisecond digits.
 */
export function helloFormatter (displayName) {
  const prefix = `Hello World, from ${displayName}! `
  return (date) => {
    // toISOString is always YYYY-MM-DDTHH:MM:SS.mmmZ for years 0..9999.
    const iso = date.toISOString()
    return prefix + iso.slice(0, 10) + ' ' + iso.slice(11, 23)
  }
}
