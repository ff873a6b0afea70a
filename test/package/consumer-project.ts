import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { consumerManifestAndLock, type RootLock } from './consumer-lock.ts'

const run = promisify(execFile)
const repoRoot = new URL('../..', import.meta.url).pathname
/** The consumers' sources (a TypeScript module, a Node program, a Vite + React page), copied as they are. */
const consumerSources = new URL('./consumer/', import.meta.url).pathname

export interface PackedSdk {
  /** The tarball's path. */
  tarball: string
  /** Every path in it, relative to the package root (as `npm pack --json` lists them). */
  files: string[]
  integrity: string
}

/** What an enclosing `npm test` exports that the nested npm may keep: where the cache and the registry are. */
const KEPT_NPM_SETTINGS = new Set(['npm_config_cache', 'npm_config_registry', 'npm_config_userconfig', 'npm_config_cafile'])

/**
 * The environment without the other `npm_*` variables an enclosing `npm test` exports: its
 * `npm_config_local_prefix` (this repository) would make the nested npm install here instead.
 */
export function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_') || KEPT_NPM_SETTINGS.has(key.toLowerCase())))
}

/**
 * `npm pack -w @task-status/client` into `destination`. Scripts are skipped: `prepack` would run
 * tsc over packages/client/dist while other test files may be reading it, and the global setup
 * (test/support/global-setup.ts) has just built it from the current sources, as prepack does.
 */
export async function packSdk(destination: string): Promise<PackedSdk> {
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', destination, '-w', '@task-status/client'], { cwd: repoRoot, env: cleanEnv() })
  const [report] = JSON.parse(stdout) as { filename: string; integrity: string; files: { path: string }[] }[]
  if (!report) throw new Error(`npm pack reported nothing: ${stdout}`)
  return { tarball: path.join(destination, report.filename), files: report.files.map((f) => f.path), integrity: report.integrity }
}

/**
 * A fresh project in `<work>/app` (its own package.json, `"type": "module"`) with the consumers'
 * sources, the tarball (packed into `work`) and the consumers' packages installed offline from
 * the npm cache.
 */
export async function installConsumerProject(work: string, packed: PackedSdk): Promise<string> {
  const app = path.join(work, 'app')
  mkdirSync(app)
  cpSync(consumerSources, app, { recursive: true })
  const rootLock = JSON.parse(readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as RootLock
  // The tarball sits beside the project (`file:../<tarball>`), as the README's `npm install ../…tgz` has it.
  if (path.dirname(packed.tarball) !== work) throw new Error(`pack into ${work}`)
  const { manifest, lock } = consumerManifestAndLock(rootLock, { fileName: path.basename(packed.tarball), integrity: packed.integrity })
  writeFileSync(path.join(app, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  writeFileSync(path.join(app, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`)
  try {
    await run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], { cwd: app, env: cleanEnv() })
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? ''
    if (!stderr.includes('ENOTCACHED')) throw error
    throw new Error(`the npm cache lacks a package the consumers need: run \`npm ci\` in this repository (it fills the cache), then again.\n${stderr}`)
  }
  return app
}

/** Runs a command of the consumer project's node_modules/.bin (tsc, vite); resolves with its exit code and output. */
export async function runBin(app: string, bin: string, args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(path.join(app, 'node_modules/.bin', bin), args, { cwd: app, env: cleanEnv(), timeout: 120_000 })
    return { code: 0, output: stdout + stderr }
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string }
    if (typeof failed.code !== 'number') throw error
    return { code: failed.code, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` }
  }
}
