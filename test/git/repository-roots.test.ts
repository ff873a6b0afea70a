import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkLocalPath } from '../../src/git/repository-roots.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { errorCodes, http, ok } from '../support/client.ts'
import { CreateTaskDocument } from '../generated/graphql.ts'

/** A root with a repository folder inside, a folder outside it, and links from inside to both. */
function layout() {
  const base = mkdtempSync(path.join(os.tmpdir(), 'tss-roots-'))
  const root = path.join(base, 'root')
  const inside = path.join(root, 'repo')
  const outside = path.join(base, 'elsewhere')
  mkdirSync(inside, { recursive: true })
  mkdirSync(outside)
  symlinkSync(outside, path.join(root, 'escape'))
  symlinkSync(inside, path.join(root, 'alias'))
  writeFileSync(path.join(root, 'file.txt'), 'not a directory\n')
  return { root, inside, outside }
}

describe('checkLocalPath', () => {
  const { root, inside, outside } = layout()

  it('accepts a directory inside a root (or the root itself) and gives its real path', async () => {
    expect(await checkLocalPath(inside, [root])).toEqual({ ok: true, realPath: realpathSync(inside) })
    expect(await checkLocalPath(root, [root])).toEqual({ ok: true, realPath: realpathSync(root) })
    expect(await checkLocalPath(path.join(root, 'alias'), [root])).toEqual({ ok: true, realPath: realpathSync(inside) })
    expect(await checkLocalPath(outside, [root, path.dirname(outside)])).toMatchObject({ ok: true })
  })

  it.each([
    ['outside every root', () => outside],
    ['a symlink inside the root that points outside it', () => path.join(root, 'escape')],
    ['a .. path that climbs out of the root', () => path.join(root, '..', 'elsewhere')],
    ['a sibling whose name starts with the root', () => `${root}-other`],
    ['a path that does not exist', () => path.join(root, 'missing')],
    ['a file', () => path.join(root, 'file.txt')],
  ])('refuses %s without saying whether it exists', async (_name, candidate) => {
    expect(await checkLocalPath(candidate(), [root])).toEqual({ ok: false, reason: 'not-allowed' })
  })

  it('refuses a relative path, and matches nothing under a root that does not exist', async () => {
    expect(await checkLocalPath('repo', [root])).toEqual({ ok: false, reason: 'not-absolute' })
    expect(await checkLocalPath(inside, [path.join(root, 'gone')])).toEqual({ ok: false, reason: 'not-allowed' })
  })
})

describe('createTask confines localPath to REPOSITORY_ROOTS (sqlite)', () => {
  const { root, inside, outside } = layout()
  let server: TestServer
  let owner: { token: string; workspaceId: string }

  beforeAll(async () => {
    server = await startTestServer('sqlite', { env: { REPOSITORY_ROOTS: `/nonexistent-root:${root}` } })
    owner = await userWithWorkspace(server, 'roots')
  })
  afterAll(() => server?.close())

  const create = (localPath: string) =>
    http(server.graphqlUrl, owner.token, CreateTaskDocument, {
      input: { workspaceId: owner.workspaceId, title: 't', repositories: [{ name: 'acme/web' }, { name: 'acme/api', localPath }] },
    })

  it('stores a directory inside a root by its real path', async () => {
    const { createTask } = await ok(server.graphqlUrl, owner.token, CreateTaskDocument, {
      input: { workspaceId: owner.workspaceId, title: 't', repositories: [{ name: 'acme/web', localPath: path.join(root, 'alias') }] },
    })
    expect(createTask.repositories[0]!.localPath).toBe(realpathSync(inside))
  })

  it.each([
    ['outside every root', () => outside],
    ['a symlink escaping the root', () => path.join(root, 'escape')],
    ['a .. escape', () => path.join(root, '..', 'elsewhere')],
    ['a path that does not exist', () => path.join(root, 'missing')],
    ['a relative path', () => 'repo'],
  ])('answers BAD_USER_INPUT for %s and stores nothing', async (_name, candidate) => {
    const tasks = await server.store.db.task.count()
    const repositories = await server.store.db.taskRepository.count()
    const result = await create(candidate())
    expect(errorCodes(result)).toEqual(['BAD_USER_INPUT'])
    expect(result.errors?.[0]?.extensions?.field).toBe('repositories.localPath')
    expect(await server.store.db.task.count()).toBe(tasks)
    expect(await server.store.db.taskRepository.count()).toBe(repositories)
  })

  it('checks the path only for members: a non-member gets FORBIDDEN, whatever the path', async () => {
    const stranger = await userWithWorkspace(server, 'stranger')
    const result = await http(server.graphqlUrl, stranger.token, CreateTaskDocument, {
      input: { workspaceId: owner.workspaceId, title: 't', repositories: [{ name: 'acme/web', localPath: outside }] },
    })
    expect(errorCodes(result)).toEqual(['FORBIDDEN'])
  })
})
