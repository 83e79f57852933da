// Shared by the tests: the repository's contract data and a built app.

import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

import { buildApp } from '../app.js'
import { loadCalendar } from '../lib/calendar.js'

export const STACK_DIR = fileURLToPath(new URL('..', import.meta.url))
export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url))
export const CALENDAR_FILE = `${REPO_ROOT}contracts/calendar/xshg-non-trading-weekdays.txt`

export function vectors (name) {
  return JSON.parse(readFileSync(`${REPO_ROOT}contracts/vectors/${name}`, 'utf8'))
}

export function calendar () {
  return loadCalendar(CALENDAR_FILE)
}

export function app (displayName) {
  return buildApp({ calendar: calendar(), ...(displayName ? { displayName } : {}) })
}

/** A top-level string value of server.toml (display_name, framework_version, ...). */
export function manifestValue (key) {
  const text = readFileSync(`${STACK_DIR}server.toml`, 'utf8')
  const match = text.match(new RegExp(`^${key}\\s*=\\s*"([^"]*)"`, 'm'))
  if (!match) throw new Error(`server.toml has no ${key}`)
  return match[1]
}
