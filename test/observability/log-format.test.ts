import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config/config.ts'
import { chooseLogFormat, type LogFormat, type LogFormatSetting } from '../../src/observability/logger.ts'
import { projectRoot } from '../support/process.ts'

describe('the log format', () => {
  it.each<[boolean, string | undefined, LogFormatSetting, LogFormat]>([
    // auto: pretty only for a person at a terminal outside production
    [true, undefined, 'auto', 'pretty'],
    [true, 'development', 'auto', 'pretty'],
    [true, 'production', 'auto', 'json'],
    [false, undefined, 'auto', 'json'],
    [false, 'development', 'auto', 'json'],
    [false, 'production', 'auto', 'json'],
    // LOG_FORMAT forces either, wherever the logs go
    [true, undefined, 'json', 'json'],
    [false, 'production', 'pretty', 'pretty'],
  ])('stdout a terminal: %s, NODE_ENV %s, LOG_FORMAT %s → %s', (stdoutIsTTY, nodeEnv, setting, format) => {
    expect(chooseLogFormat({ stdoutIsTTY, nodeEnv, setting })).toBe(format)
  })

  it('reads LOG_FORMAT (auto when unset or empty) and NODE_ENV from the environment', () => {
    expect(loadConfig({}).logFormat).toBe('auto')
    expect(loadConfig({ LOG_FORMAT: '' }).logFormat).toBe('auto')
    expect(loadConfig({ LOG_FORMAT: 'pretty', NODE_ENV: 'production' })).toMatchObject({ logFormat: 'pretty', nodeEnv: 'production' })
    expect(() => loadConfig({ LOG_FORMAT: 'yaml' })).toThrow(ConfigError)
    expect(() => loadConfig({ LOG_FORMAT: 'yaml' })).toThrow(/^Invalid configuration: LOG_FORMAT: /)
  })

  it('pretty: human lines on stdout, written in this process, still redacted', () => {
    const script = `const { createLogger } = await import('./src/observability/logger.ts')
      createLogger('info', 'pretty').info({ action: 'demo', token: 'tss_secret-token' }, 'pretty hello')`
    const stdout = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: projectRoot, encoding: 'utf8', env: { PATH: process.env.PATH, NO_COLOR: '1' } })
    expect(stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: pretty hello\n\s+action: "demo"\n\s+token: "\[redacted\]"\n$/)
    expect(stdout).not.toContain('tss_secret-token')
  })
})
