// The contract's logic without HTTP: the shared workday vectors against the
// calendar, the parsers' edge cases, the date arithmetic and the calendar
// file's rules.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { Calendar, CalendarError, formatDay, parseCalendar } from '../lib/calendar.js'
import {
  dayNumber, helloFormatter, kb, localTimeOf, MAX_KB, parseAt, parseDate, parseN
} from '../lib/contract.js'
import { calendar, vectors } from './helpers.js'

describe('workday vectors (contracts/vectors/workday.json)', () => {
  const cal = calendar()
  const { cases } = vectors('workday.json')

  test('there are cases', () => assert.ok(cases.length >= 400))
  test('every at belongs to its expected trading day', () => {
    const wrong = []
    for (const c of cases) {
      const local = parseAt(c.at)
      const got = local === null ? null : formatDay(cal.tradingDay(local))
      if (got !== c.expect) wrong.push(`${c.at}: got ${got}, want ${c.expect}`)
    }
    assert.deepEqual(wrong, [])
  })
})

describe('parseN', () => {
  test('one to three ASCII digits, 1..100', () => {
    for (const [s, n] of [['1', 1], ['07', 7], ['099', 99], ['100', 100], ['010', 10]]) {
      assert.equal(parseN(s), n, s)
    }
  })
  test('anything else is -1', () => {
    for (const s of ['', '0', '000', '101', '0100', '1000', '-1', '+1', ' 1', '1 ', '1_0',
      '1.0', '1e2', '0x1', 'abc', '\u0665', '\uff15', '1\u0000', '%35']) {
      assert.equal(parseN(s), -1, JSON.stringify(s))
    }
  })
})

describe('parseAt', () => {
  test('valid shapes', () => {
    assert.deepEqual(parseAt('2019-05-05T10:00'), { day: dayNumber(2019, 5, 5), seconds: 36000 })
    assert.deepEqual(parseAt('2000-02-29T23:59:59'), { day: dayNumber(2000, 2, 29), seconds: 86399 })
    assert.deepEqual(parseAt('1970-01-01T00:00'), { day: 0, seconds: 0 })
    assert.deepEqual(parseAt('2199-12-31T23:59:59'), { day: dayNumber(2199, 12, 31), seconds: 86399 })
  })
  test('invalid ones are null', () => {
    for (const s of ['', '2019-05-05', '2019-05-05T10', '2019-05-05 10:00', '2019-05-05t10:00',
      '2019-5-5T10:00', '2019-05-05T1:00', '2019-05-05T10:00:00.000', '2019-05-05T10:00Z',
      '2019-02-29T10:00', '2100-02-29T10:00', '2019-04-31T10:00', '2019-13-01T10:00',
      '2019-00-10T10:00', '2019-05-00T10:00', '2019-05-05T24:00', '2019-05-05T10:60',
      '2019-05-05T10:00:60', '1969-12-31T23:59:59', '2200-01-01T00:00', '+019-05-05T10:00',
      '2019-05-05T10:0\u0665', '2019-05-05T10-00', '2019-05-05T10:00-00']) {
      assert.equal(parseAt(s), null, JSON.stringify(s))
    }
  })
})

describe('dates', () => {
  test('dayNumber and formatDay agree with Date for 1600..2400', () => {
    for (let day = dayNumber(1600, 1, 1); day <= dayNumber(2400, 12, 31); day++) {
      const iso = new Date(day * 86400000).toISOString().slice(0, 10)
      if (formatDay(day) !== iso) assert.fail(`formatDay(${day}) = ${formatDay(day)}, want ${iso}`)
      if (parseDate(iso) !== day) assert.fail(`parseDate(${iso}) = ${parseDate(iso)}, want ${day}`)
    }
  })
  test('local time is UTC+08:00 in whole seconds', () => {
    const ms = Date.UTC(2019, 4, 4, 18, 30, 15, 999) // 2019-05-05 02:30:15.999 in Shanghai
    assert.deepEqual(localTimeOf(ms), { day: dayNumber(2019, 5, 5), seconds: 2 * 3600 + 30 * 60 + 15 })
    assert.deepEqual(localTimeOf(Date.UTC(2019, 4, 5, 16, 0, 0)), { day: dayNumber(2019, 5, 6), seconds: 0 })
  })
})

describe('hello and n-KB bodies', () => {
  test('hello has three millisecond digits, UTC', () => {
    const hello = helloFormatter('Test')
    assert.equal(hello(new Date(Date.UTC(2026, 10, 22, 2, 15, 30, 40))), 'Hello World, from Test! 2026-11-22 02:15:30.040')
    assert.equal(hello(new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 0))), 'Hello World, from Test! 2026-01-01 00:00:00.000')
  })
  test('kb(n) is n * 1000 bytes of X', () => {
    for (let n = 1; n <= MAX_KB; n++) {
      const body = kb(n)
      assert.equal(body.length, n * 1000)
      assert.ok(body.every((b) => b === 0x58))
    }
  })
})

describe('calendar file', () => {
  const header = '# comment\n# range: 2019-01-01 2019-12-31\n'
  test('weekends are never trading days; outside the range every weekday is', () => {
    const cal = parseCalendar(header + '2019-05-01\n')
    assert.equal(cal.isTradingDay(dayNumber(2019, 5, 1)), false)
    assert.equal(cal.isTradingDay(dayNumber(2019, 5, 2)), true)
    assert.equal(cal.isTradingDay(dayNumber(2019, 5, 4)), false) // Saturday
    assert.equal(cal.isTradingDay(dayNumber(2020, 1, 1)), true) // Wednesday, outside
    assert.ok(cal instanceof Calendar)
    assert.equal(cal.count, 1)
  })
  test('15:00:00 belongs to the day, 15:00:01 to the next trading day', () => {
    const cal = parseCalendar(header)
    const day = dayNumber(2019, 4, 30)
    assert.equal(cal.tradingDay({ day, seconds: 15 * 3600 }), day)
    assert.equal(cal.tradingDay({ day, seconds: 15 * 3600 + 1 }), day + 1)
  })
  test('damaged files are refused with the line', () => {
    for (const [text, message] of [
      ['2019-05-01\n', /no "# range/],
      [header + '# range: 2019-01-01 2019-12-31\n', /line 3: second/],
      [header + '2019-5-1\n', /line 3: .* is not a YYYY-MM-DD date/],
      [header + '2019-05-04\n', /line 3: 2019-05-04 is a weekend day/],
      [header + '2020-01-02\n', /line 3: .* outside the range/],
      [header + '2019-05-01\n2019-05-01\n', /line 4: 2019-05-01 is listed twice/],
      ['# range: 2019-12-31 2019-01-01\n', /line 1: want/]
    ]) {
      assert.throws(() => parseCalendar(text), (err) => err instanceof CalendarError && message.test(err.message))
    }
  })
})
