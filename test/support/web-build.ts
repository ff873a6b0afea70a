import { execFile } from 'node:child_process'
import { rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { promisify } from 'node:util'
import { build } from 'vite'

const root = new URL('../../', import.meta.url).pathname
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

/**
 * Builds the SDK package (packages/client/dist, gitignored) from its current sources, as
 * `npm run build:client` does: the page imports `@task-status/client` through the workspace link.
 */
export async function buildClientPackage(): Promise<void> {
  // Emptied first, as the package's build script does: a module deleted from src/ must not ship.
  rmSync(new URL('../../packages/client/dist', import.meta.url), { recursive: true, force: true })
  await promisify(execFile)(process.execPath, [tsc, '-p', 'packages/client/tsconfig.build.json'], { cwd: root })
}

/** Builds src/web with the project's vite.config.ts into outDir, as `npm run build:web` does into dist/web. */
export async function buildWebPage(outDir: string): Promise<void> {
  await buildClientPackage()
  await build({ configFile: new URL('../../vite.config.ts', import.meta.url).pathname, build: { outDir, emptyOutDir: true }, logLevel: 'error' })
}
