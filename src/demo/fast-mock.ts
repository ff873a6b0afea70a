import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { SCRIPTS_DIR_ENV } from '../agents/mock/script-drop.ts'
import type { AgentProfile } from '../config/config.ts'

export interface BundledMock {
  profile: AgentProfile
  /** Where its agents take their scripts (the profile's MOCK_AGENT_SCRIPTS): the demo activity's scriptDir. */
  scriptDir: string
  remove(): Promise<void>
}

/**
 * The built-in mock agent (src/agents/mock/mock-agent.ts, as it is) bundled into one JavaScript
 * file for plain Node. Run from the sources, each mock agent loads through tsx: about 0.4 s of CPU
 * and 95 MB per process, so starting two dozen sessions takes many seconds on a small machine;
 * the bundle starts in about 0.1 s and 60 MB. esbuild is there whenever the demo runs (tsx and
 * Vite depend on it). Undefined when it cannot be built: the demo then uses the built-in profile.
 */
export async function bundleMockAgent(): Promise<BundledMock | undefined> {
  let dir: string | undefined
  try {
    const { build } = await import('esbuild')
    dir = await mkdtemp(path.join(os.tmpdir(), 'tss-demo-agent-'))
    const outfile = path.join(dir, 'mock-agent.mjs')
    await build({
      entryPoints: [fileURLToPath(new URL('../agents/mock/mock-agent.ts', import.meta.url))],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'silent',
      // Bundled CommonJS dependencies may require() Node built-ins.
      banner: { js: "import { createRequire as __demoCreateRequire } from 'node:module'; const require = __demoCreateRequire(import.meta.url);" },
    })
    const created = dir
    const scriptDir = path.join(dir, 'scripts')
    await mkdir(scriptDir)
    return {
      profile: { command: [process.execPath, outfile], env: { [SCRIPTS_DIR_ENV]: scriptDir } },
      scriptDir,
      remove: () => rm(created, { recursive: true, force: true }),
    }
  } catch {
    if (dir) await rm(dir, { recursive: true, force: true }).catch(() => undefined)
    return undefined
  }
}
