import { writeFileSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config/config.ts'

describe('loadConfig', () => {
  it('defaults to SQLite in ./data, port 4000 on loopback, in-process pub/sub', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      port: 4000,
      host: '127.0.0.1',
      databaseProvider: 'sqlite',
      databaseUrl: `file:${path.resolve('data/app.db')}`,
      redisUrl: undefined,
      adminToken: undefined,
      agentProfiles: {},
      logLevel: 'info',
    })
  })

  it('picks PostgreSQL from a postgres:// or postgresql:// URL', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h/db' }).databaseProvider).toBe('postgres')
    expect(loadConfig({ DATABASE_URL: 'postgresql://u@h/db' }).databaseProvider).toBe('postgres')
  })

  it('keeps an absolute SQLite path and resolves a relative one against the working directory', () => {
    expect(loadConfig({ DATABASE_URL: 'file:/var/x.db' }).databaseUrl).toBe('file:/var/x.db')
    expect(loadConfig({ DATABASE_URL: 'file:rel/x.db' }).databaseUrl).toBe(`file:${path.resolve('rel/x.db')}`)
  })

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
    [{ ADMIN_TOKEN: 'short' }, 'ADMIN_TOKEN'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ AGENT_PROFILES: '{not json' }, 'AGENT_PROFILES'],
    [{ AGENT_PROFILES: '{"x": {"command": []}}' }, 'AGENT_PROFILES'],
    [{ AGENT_PROFILES: '/no/such/profiles.json' }, 'AGENT_PROFILES'],
    [{ REPOSITORY_ROOTS: 'relative/dir' }, 'REPOSITORY_ROOTS'],
    [{ REPOSITORY_ROOTS: '/srv/repos:~/code' }, 'REPOSITORY_ROOTS'],
    [{ CORS_ORIGINS: '*' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'app.example.com' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://app.example.com/' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://App.example.com' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://app.example.com:443' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'ftp://app.example.com' }, 'CORS_ORIGINS'],
  ])('names the bad variable in %o', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(ConfigError)
    expect(() => loadConfig(env)).toThrow(new RegExp(variable))
  })

  it.each([
    ['', /^Invalid configuration: DATABASE_URL: is empty; unset it for the default file:\.\/data\/app\.db/],
    ['file:', /^Invalid configuration: DATABASE_URL: file: names no file/],
    ['file:./data/', /^Invalid configuration: DATABASE_URL: names a folder \(it ends with \/\)/],
    ['postgres://:@:x/', /^Invalid configuration: DATABASE_URL: is not a valid PostgreSQL URL/],
    ['postgresql://app:s3cret@db:port/tasks', /^Invalid configuration: DATABASE_URL: is not a valid PostgreSQL URL/],
    ['mysql://app:s3cret@db/tasks', /^Invalid configuration: DATABASE_URL: the scheme mysql: is not supported/],
    ['s3cret and more', /^Invalid configuration: DATABASE_URL: is not a database URL/],
  ])('refuses DATABASE_URL %j in one line that never repeats the URL', (url, message) => {
    const error = (() => {
      try {
        loadConfig({ DATABASE_URL: url })
      } catch (thrown) {
        return thrown as Error
      }
    })()
    expect(error).toBeInstanceOf(ConfigError)
    expect(error!.message).toMatch(message)
    expect(error!.message).not.toContain('\n')
    expect(error!.message).not.toContain('s3cret')
  })

  it('names each bad variable on a line of its own', () => {
    expect(() => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud' })).toThrow(
      /^Invalid configuration: PORT: [^\n]+\nInvalid configuration: LOG_LEVEL: [^\n]+$/,
    )
  })

  it('reads CORS_ORIGINS as a comma-separated list of exact origins, empty (same origin only) when unset', () => {
    expect(loadConfig({}).corsOrigins).toEqual([])
    expect(loadConfig({ CORS_ORIGINS: ' ' }).corsOrigins).toEqual([])
    expect(loadConfig({ CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,https://app.example.com' }).corsOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
    ])
    // A near miss names the form a browser sends, which is what is matched.
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example.com/' })).toThrow('https://app.example.com/ (write https://app.example.com)')
  })

  it('reads AGENT_PROFILES inline or from a file', () => {
    const profiles = { claude: { command: ['claude-acp', '--stdio'], env: { A: '1' } } }
    expect(loadConfig({ AGENT_PROFILES: JSON.stringify(profiles) }).agentProfiles).toEqual(profiles)
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'profiles-')), 'p.json')
    writeFileSync(file, JSON.stringify({ x: { command: ['x'] } }))
    expect(loadConfig({ AGENT_PROFILES: file }).agentProfiles).toEqual({ x: { command: ['x'], env: {} } })
  })

  it('reads REPOSITORY_ROOTS as a :-separated list of absolute directories, defaulting to the home directory', () => {
    expect(loadConfig({}).repositoryRoots).toEqual([os.homedir()])
    expect(loadConfig({ REPOSITORY_ROOTS: '' }).repositoryRoots).toEqual([os.homedir()])
    expect(loadConfig({ REPOSITORY_ROOTS: '/srv/repos' }).repositoryRoots).toEqual(['/srv/repos'])
    expect(loadConfig({ REPOSITORY_ROOTS: '/srv/repos::/home/dev/code/../work/' }).repositoryRoots).toEqual(['/srv/repos', '/home/dev/work'])
  })
})
