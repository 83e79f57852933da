// The microbenchmark (bench/contract-bench.js) still runs: one round of
// every case with a short warm-up, each case answering the status it names.
// No timing is judged.

import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import { STACK_DIR } from './helpers.js'

test('the microbenchmark runs every GET case of microbench-cases.json once', () => {
  const out = join(mkdtempSync(join(tmpdir(), 'contract-bench-')), 'bench.json')
  execFileSync(process.execPath, ['bench/contract-bench.js', '--rounds', '1', '--warmup', '10', '--out', out], {
    cwd: STACK_DIR
  })
  const names = JSON.parse(readFileSync(out, 'utf8')).cases.map((c) => c.name)
  assert.ok(names.includes('hello') && names.includes('workday-at') && names.includes('kb1-escaped'), names)
})

test('the instruction counter runs a case without callgrind and names it', () => {
  // What make instructions runs under callgrind (scripts/count_instructions.py).
  const out = execFileSync(process.execPath,
    ['--predictable', '--expose-gc', 'bench/count-steps.js', '--calls', '5', 'workday-at'],
    { cwd: STACK_DIR, encoding: 'utf8' })
  assert.equal(out.trim(), 'workday-at')
})
