import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AgentProfile } from '../config/config.ts'

const here = path.dirname(fileURLToPath(import.meta.url))

/**
 * The built-in `mock` profile: this repo's mock agent, run by the same Node with tsx. The
 * loader is named by absolute URL because the agent's working directory is the task's checkout.
 */
export const MOCK_PROFILE: AgentProfile = {
  command: [process.execPath, '--import', import.meta.resolve('tsx'), path.join(here, 'mock', 'mock-agent.ts')],
  env: {},
}

/** Configured profiles plus the built-in mock (a configured `mock` overrides it). */
export function agentProfiles(configured: Record<string, AgentProfile>): Map<string, AgentProfile> {
  return new Map(Object.entries({ mock: MOCK_PROFILE, ...configured }))
}
