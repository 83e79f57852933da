// The trading calendar and the workday rule (contracts/README.md, "Workday").
// The calendar file is read once at start-up; per-request work never reads
// files.

import { readFileSync } from 'node:fs'

import { parseDate } from './contract.js'

/** The environment variable that holds the calendar path. */
export const CALENDAR_ENV = 'WORKDAY_CALENDAR'

// 15:00:00, the close of a trading day: a time at or before it belongs to
// that day, from 15:00:01 on it belongs to the next trading day.
const CLOSE_SECONDS = 15 * 3600

export class CalendarError extends Error {}

/** Day of the week of a day number: 0 Sunday .. 6 Saturday (1970-01-01 was a Thursday). */
function weekday (day) {
  return (((day + 4) % 7) + 7) % 7
}

function isWeekend (day) {
  const w = weekday(day)
  return w === 0 || w === 6
}

/** YYYY-MM-DD of a day number (Howard Hinnant's civil_from_days). */
export function formatDay (day) {
  const z = day + 719468
  const era = Math.floor(z / 146097)
  const doe = z - era * 146097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1
  const m = mp < 10 ? mp + 3 : mp - 9
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0)
  return String(y).padStart(4, '0') + (m < 10 ? '-0' : '-') + m + (d < 10 ? '-0' : '-') + d
}

/**
 * The exchange's non-trading weekdays between first and last (day numbers,
 * from the file's "# range:" line). Outside that range only weekends are
 * non-trading. Read-only after construction.
 */
export class Calendar {
  constructor (first, last, closedDays) {
    this.first = first
    this.last = last
    this.closed = new Uint8Array(last - first + 1)
    for (const day of closedDays) this.closed[day - first] = 1
    this.count = closedDays.length
  }

  /** Monday to Friday and not a listed non-trading day. */
  isTradingDay (day) {
    if (isWeekend(day)) return false
    return day < this.first || day > this.last || this.closed[day - this.first] === 0
  }

  /**
   * The trading day a local time ({ day, seconds }) belongs to: its own day
   * if that is a trading day and the time is at or before 15:00:00, else the
   * first trading day after it.
   */
  tradingDay ({ day, seconds }) {
    if (seconds <= CLOSE_SECONDS && this.isTradingDay(day)) return day
    // Terminates: the longest closure (Spring Festival) is a couple of weeks.
    do day++; while (!this.isTradingDay(day))
    return day
  }
}

/**
 * Parse a calendar: '#' comment lines, one of them "# range: FIRST LAST",
 * and one YYYY-MM-DD non-trading weekday a line; blank lines are ignored.
 * Anything else throws a CalendarError naming the line, so a damaged file
 * stops the server at start-up instead of giving wrong answers.
 */
export function parseCalendar (text) {
  let range = null
  const days = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1
    const line = lines[i].trim()
    if (line === '') continue
    if (line[0] === '#') {
      const rest = line.slice(1).trim()
      if (!rest.startsWith('range:')) continue
      if (range !== null) throw new CalendarError(`line ${n}: second "# range:" line`)
      const fields = rest.slice('range:'.length).trim().split(/\s+/)
      const first = fields.length === 2 ? parseDate(fields[0]) : null
      const last = fields.length === 2 ? parseDate(fields[1]) : null
      if (first === null || last === null || first > last) {
        throw new CalendarError(`line ${n}: want "# range: FIRST LAST", got ${JSON.stringify(line)}`)
      }
      range = { first, last }
      continue
    }
    const day = parseDate(line)
    if (day === null) throw new CalendarError(`line ${n}: ${JSON.stringify(line)} is not a YYYY-MM-DD date`)
    days.push({ day, n })
  }
  if (range === null) throw new CalendarError('no "# range: FIRST LAST" line')
  const seen = new Set()
  for (const { day, n } of days) {
    if (day < range.first || day > range.last) {
      throw new CalendarError(`line ${n}: ${formatDay(day)} is outside the range ${formatDay(range.first)}..${formatDay(range.last)}`)
    }
    if (isWeekend(day)) throw new CalendarError(`line ${n}: ${formatDay(day)} is a weekend day; the file lists weekdays only`)
    if (seen.has(day)) throw new CalendarError(`line ${n}: ${formatDay(day)} is listed twice`)
    seen.add(day)
  }
  return new Calendar(range.first, range.last, days.map((d) => d.day))
}

/** Read and parse the calendar file at path; errors name WORKDAY_CALENDAR and the path. */
export function loadCalendar (path) {
  let text
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new CalendarError(`${CALENDAR_ENV}=${path}: cannot read the calendar: ${err.message}`)
  }
  try {
    return parseCalendar(text)
  } catch (err) {
    throw new CalendarError(`${CALENDAR_ENV}=${path}: ${err.message}`)
  }
}
