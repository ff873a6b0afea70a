import { createRequire } from 'node:module'
import { defineConfig } from 'vitest/config'

const require = createRequire(import.meta.url)

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (main) and ESM (module). Node loads the CJS copy for Yoga and Pothos;
    // without this Vite would give our sources the ESM copy, and `instanceof GraphQLError` across
    // the two copies fails (errors would be masked as INTERNAL_SERVER_ERROR only under test).
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Real servers, databases and child processes: generous, but a hang still fails the run.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time whatever the core count (vitest's default is cores − 1: one on a 2-core
    // CI machine). Most files wait on servers, databases, child processes and Chromium, not on CPU.
    maxWorkers: 2,
  },
})
