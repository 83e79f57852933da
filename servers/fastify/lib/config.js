// Configuration from the environment: PORT, HOST, WORKERS, WORKDAY_CALENDAR
// (contracts/README.md, "Configuration by environment").
//
// WORKERS defaults to the CPUs this process may use: the affinity mask
// (os.availableParallelism(), libuv's sched_getaffinity count, so taskset and
// docker --cpuset-cpus count) capped by the cgroup CPU quota (cgroup v2
// cpu.max, or v1 cpu.cfs_quota_us / cpu.cfs_period_us, so docker --cpus
// counts), rounded up, at least 1. The same rule as the Python stacks'
// serverlab_contract.config.cpus_available. os.cpus().length alone would
// count every CPU of the host and oversubscribe a limited container.

import { readFileSync, statSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'

import { CALENDAR_ENV, loadCalendar } from './calendar.js'

export const DEFAULT_HOST = '0.0.0.0'

export class ConfigError extends Error {}

function read (path) {
  try {
    return readFileSync(path, 'utf8').trim()
  } catch {
    return null
  }
}

function isDir (path) {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/**
 * root/cgroupPath and each parent up to root itself, deepest first. Without
 * a cgroup namespace (Docker on cgroup v1, for example) the path in
 * /proc/self/cgroup names the host's hierarchy, which is not mounted inside
 * the container; its own limits are then at the mount root, which is why the
 * root is always a candidate.
 */
function ancestors (root, cgroupPath) {
  const parts = cgroupPath.split('/').filter((p) => p && p !== '.' && p !== '..')
  const dirs = []
  for (let i = parts.length; i >= 0; i--) dirs.push(join(root, ...parts.slice(0, i)))
  return dirs
}

function ratio (quota, period) {
  return Number.isInteger(quota) && Number.isInteger(period) && quota > 0 && period > 0
    ? quota / period
    : null
}

function v2Limit (dir) {
  const text = read(join(dir, 'cpu.max')) // "max 100000" or "QUOTA PERIOD"
  if (!text) return null
  const fields = text.split(/\s+/)
  if (fields.length !== 2 || fields[0] === 'max') return null
  return ratio(Number(fields[0]), Number(fields[1]))
}

function v1Limit (dir) {
  const quota = read(join(dir, 'cpu.cfs_quota_us')) // -1 means no limit
  const period = read(join(dir, 'cpu.cfs_period_us'))
  if (quota === null || period === null) return null
  return ratio(Number(quota), Number(period))
}

/**
 * The CPU quota of this process's cgroup in CPUs (e.g. 1.5), or null when
 * unlimited: the smallest quota of its own cgroup and its ancestors, in the
 * cgroup v2 (cpu.max) and v1 (cpu controller) layouts.
 */
export function cgroupCpuLimit (cgroupRoot = '/sys/fs/cgroup', procSelfCgroup = '/proc/self/cgroup') {
  const text = read(procSelfCgroup)
  if (text === null) return null
  const limits = []
  for (const line of text.split('\n')) {
    const first = line.indexOf(':')
    const second = line.indexOf(':', first + 1)
    if (first === -1 || second === -1) continue
    const hierarchy = line.slice(0, first)
    const controllers = line.slice(first + 1, second)
    const path = line.slice(second + 1)
    if (hierarchy === '0' && controllers === '') {
      for (const dir of ancestors(cgroupRoot, path)) limits.push(v2Limit(dir))
    } else if (controllers.split(',').includes('cpu')) {
      for (const mount of ['cpu', 'cpu,cpuacct', 'cpuacct,cpu']) {
        if (isDir(join(cgroupRoot, mount))) {
          for (const dir of ancestors(join(cgroupRoot, mount), path)) limits.push(v1Limit(dir))
          break
        }
      }
    }
  }
  const found = limits.filter((l) => l !== null)
  return found.length ? Math.min(...found) : null
}

/** CPUs this process may use: affinity mask capped by the cgroup quota (rounded up), at least 1. */
export function cpusAvailable ({
  affinity = availableParallelism(),
  cgroupRoot = '/sys/fs/cgroup',
  procSelfCgroup = '/proc/self/cgroup'
} = {}) {
  let cpus = affinity
  const quota = cgroupCpuLimit(cgroupRoot, procSelfCgroup)
  if (quota !== null) cpus = Math.min(cpus, Math.ceil(quota))
  return Math.max(1, cpus)
}

function get (env, name) {
  const value = (env[name] ?? '').trim()
  return value === '' ? null : value
}

// Number() and parseInt() would accept '+4', ' 4', '4.0', '0x4' and '4e0'.
function positiveInt (name, value, upper) {
  if (!/^[0-9]+$/.test(value) || Number(value) < 1) {
    throw new ConfigError(`${name} must be a positive integer, got ${JSON.stringify(value)}`)
  }
  const number = Number(value)
  if (upper !== undefined && number > upper) {
    throw new ConfigError(`${name} must be at most ${upper}, got ${JSON.stringify(value)}`)
  }
  return number
}

/** WORKERS if set, else cpusAvailable(). Throws ConfigError. */
export function workersFromEnv (env = process.env, cpus = cpusAvailable) {
  const value = get(env, 'WORKERS')
  return value === null ? cpus() : positiveInt('WORKERS', value, 1024)
}

/**
 * The whole configuration, calendar loaded once: { host, port, workers,
 * calendarPath, calendar }. PORT is required, HOST defaults to 0.0.0.0.
 * Throws ConfigError with a message naming the variable.
 */
export function configFromEnv (env = process.env) {
  const port = get(env, 'PORT')
  if (port === null) throw new ConfigError('PORT is not set: it must be the TCP port to listen on')
  const calendarPath = get(env, CALENDAR_ENV)
  if (calendarPath === null) {
    throw new ConfigError(`${CALENDAR_ENV} is not set: it must name the trading calendar file ` +
      '(contracts/calendar/xshg-non-trading-weekdays.txt)')
  }
  let calendar
  try {
    calendar = loadCalendar(calendarPath)
  } catch (err) {
    throw new ConfigError(err.message)
  }
  return {
    host: get(env, 'HOST') ?? DEFAULT_HOST,
    port: positiveInt('PORT', port, 65535),
    workers: workersFromEnv(env),
    calendarPath,
    calendar
  }
}
