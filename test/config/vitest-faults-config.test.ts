import { describe, expect, it } from 'vitest'
import faults from '../../vitest.faults.config.ts'

describe('npm run test:faults (vitest.faults.config.ts)', () => {
  it('runs the fault files only, not the unit suite again', () => {
    expect(faults.test?.include).toEqual(['test/faults/**/*.fault.ts'])
    expect(faults.test?.fileParallelism).toBe(false)
  })
})
