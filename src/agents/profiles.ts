import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AgentProfile } from '../config/config.ts'

const here = path.dirname(fileURLToPath(import.meta.url))

/** Running from the TypeScript sources (tsx) rather than from the build output (plain node). */
const fromSources = import.meta.url.endsWith('.ts')

/**
 * The built-in `mock` profile: this repo's mock agent, run by the same Node: from the sources with
 * tsx (the loader named by absolute URL because the agent's working directory is the task's
 * checkout), from the build output as the compiled JavaScript beside this module.
 */
export const MOCK_PROFILE: AgentProfile = {
  command: fromSources
    ? [process.execPath, '--import', import.meta.resolve('tsx'), path.join(here, 'mock', 'mock-agent.ts')]
    : [process.execPath, path.join(here, 'mock', 'mock-agent.js')],
  env: {},
}

/** Configured profiles plus the built-in mock (a configured `mock` overrides it). */
export function agentProfiles(configured: Record<string, AgentProfile>): Map<string, AgentProfile> {
  return new Map(Object.entries({ mock: MOCK_PROFILE, ...configured }))
}
