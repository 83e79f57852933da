// WORKERS and the CPU count: the affinity mask capped by the cgroup quota,
// on fake cgroup v1 and v2 trees; the environment's errors.

import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'

import { cgroupCpuLimit, ConfigError, configFromEnv, cpusAvailable, workersFromEnv } from '../lib/config.js'
import { CALENDAR_FILE } from './helpers.js'

function tree (files) {
  const root = mkdtempSync(join(tmpdir(), 'fastify-cgroup-'))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

describe('cgroup CPU quota', () => {
  test('v2: cpu.max of the own cgroup and its ancestors, the smallest wins', () => {
    const root = tree({
      'proc-self-cgroup': '0::/a/b\n',
      'fs/cpu.max': 'max 100000\n',
      'fs/a/cpu.max': '300000 100000\n',
      'fs/a/b/cpu.max': '150000 100000\n'
    })
    assert.equal(cgroupCpuLimit(join(root, 'fs'), join(root, 'proc-self-cgroup')), 1.5)
    const opts = { cgroupRoot: join(root, 'fs'), procSelfCgroup: join(root, 'proc-self-cgroup') }
    assert.equal(cpusAvailable({ ...opts, affinity: 8 }), 2) // ceil(1.5)
    assert.equal(cpusAvailable({ ...opts, affinity: 1 }), 1) // the affinity mask is smaller
  })
  test('v2: "max" everywhere is no limit', () => {
    const root = tree({ 'proc-self-cgroup': '0::/a\n', 'fs/a/cpu.max': 'max 100000\n' })
    assert.equal(cgroupCpuLimit(join(root, 'fs'), join(root, 'proc-self-cgroup')), null)
    assert.equal(cpusAvailable({ affinity: 3, cgroupRoot: join(root, 'fs'), procSelfCgroup: join(root, 'proc-self-cgroup') }), 3)
  })
  test('v2 in a container: the host path is not mounted, the root holds the limit', () => {
    const root = tree({ 'proc-self-cgroup': '0::/system.slice/docker-abc.scope\n', 'fs/cpu.max': '50000 100000\n' })
    assert.equal(cpusAvailable({ affinity: 4, cgroupRoot: join(root, 'fs'), procSelfCgroup: join(root, 'proc-self-cgroup') }), 1)
  })
  test('v1: cfs quota and period; -1 is no limit', () => {
    const root = tree({
      'proc-self-cgroup': '4:memory:/x\n2:cpu,cpuacct:/x\n',
      'fs/cpu,cpuacct/cpu.cfs_quota_us': '-1\n',
      'fs/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
      'fs/cpu,cpuacct/x/cpu.cfs_quota_us': '250000\n',
      'fs/cpu,cpuacct/x/cpu.cfs_period_us': '100000\n'
    })
    assert.equal(cgroupCpuLimit(join(root, 'fs'), join(root, 'proc-self-cgroup')), 2.5)
  })
  test('no cgroup information: the affinity mask alone', () => {
    assert.equal(cpusAvailable({ affinity: 2, procSelfCgroup: '/nonexistent' }), 2)
  })
})

describe('environment', () => {
  test('WORKERS overrides the CPU count', () => {
    assert.equal(workersFromEnv({ WORKERS: '3' }, () => 8), 3)
    assert.equal(workersFromEnv({}, () => 8), 8)
    assert.equal(workersFromEnv({ WORKERS: ' ' }, () => 8), 8)
    for (const bad of ['0', '-1', '+2', '1.5', '0x2', '2e0', 'two', '1025']) {
      assert.throws(() => workersFromEnv({ WORKERS: bad }), ConfigError, bad)
    }
  })
  test('PORT and WORKDAY_CALENDAR are required; HOST defaults to 0.0.0.0', () => {
    const cfg = configFromEnv({ PORT: '8161', WORKDAY_CALENDAR: CALENDAR_FILE, WORKERS: '2' })
    assert.deepEqual([cfg.host, cfg.port, cfg.workers], ['0.0.0.0', 8161, 2])
    assert.ok(cfg.calendar.count > 300)
    assert.throws(() => configFromEnv({ WORKDAY_CALENDAR: CALENDAR_FILE }), /PORT is not set/)
    assert.throws(() => configFromEnv({ PORT: '80x', WORKDAY_CALENDAR: CALENDAR_FILE }), /PORT must be/)
    assert.throws(() => configFromEnv({ PORT: '8161' }), /WORKDAY_CALENDAR is not set/)
    assert.throws(() => configFromEnv({ PORT: '8161', WORKDAY_CALENDAR: '/nonexistent' }),
      /WORKDAY_CALENDAR=\/nonexistent: cannot read/)
  })
})
