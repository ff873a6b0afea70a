import { defineConfig, mergeConfig } from 'vitest/config'
import base from './vitest.config.ts'

// `npm run test:faults`: the R-scenarios of docs/performance.md (kill -9, Redis outages, fuzzed
// input, stalled readers, owner loss) against real server processes. Heavier than the unit suite,
// so one file at a time: each owns the machine's two cores while it runs.
const config = mergeConfig(
  base,
  defineConfig({
    test: {
      fileParallelism: false,
      testTimeout: 120_000,
      hookTimeout: 120_000,
    },
  }),
)
// mergeConfig concatenates arrays: an `include` given above would run the whole unit suite too.
config.test!.include = ['test/faults/**/*.fault.ts']

export default config
