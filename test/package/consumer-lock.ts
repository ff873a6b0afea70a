/**
 * The package.json and package-lock.json of an outside project that installs the packed SDK with
 * what its consumers need, at the exact versions (and dependency layout) of this repository's
 * package-lock.json. With a lockfile `npm ci --offline` reads only what the repository's own
 * install put in the npm cache; `npm install <name>@<version>` would need the full registry
 * documents, which `npm ci` never fetches, so it could not run offline.
 */

/** What the consumers under test/package/consumer import, besides the SDK. */
export const CONSUMER_PACKAGES = [
  'react',
  'react-dom',
  'vite',
  '@vitejs/plugin-react',
  'typescript',
  'ws',
  '@types/react',
  '@types/react-dom',
  '@types/ws',
  '@types/node',
] as const

const SDK_NAME = '@task-status/client'

interface LockEntry {
  version?: string
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
  dev?: boolean
  devOptional?: boolean
  peer?: boolean
  [field: string]: unknown
}

export interface RootLock {
  packages: Record<string, LockEntry>
}

/** Where Node would find `name` from the package installed at `from` (its own node_modules, then each parent's). */
function resolveInLock(lock: RootLock, from: string, name: string): string | undefined {
  let at = from
  for (;;) {
    const candidate = `${at ? `${at}/` : ''}node_modules/${name}`
    if (lock.packages[candidate]) return candidate
    if (!at) return undefined
    const parent = at.lastIndexOf('/node_modules/')
    at = parent < 0 ? '' : at.slice(0, parent)
  }
}

/** The entry as the consumer's lock holds it: dev/peer flags describe the repository, not the consumer. */
function consumerEntry({ dev: _dev, devOptional: _devOptional, peer: _peer, ...entry }: LockEntry): LockEntry {
  return entry
}

export function consumerManifestAndLock(rootLock: RootLock, tarball: { fileName: string; integrity: string }) {
  const sdk = rootLock.packages['packages/client']
  if (!sdk) throw new Error('the root lock has no packages/client workspace')
  const spec = `file:../${tarball.fileName}`
  const dependencies: Record<string, string> = { [SDK_NAME]: spec }
  for (const name of CONSUMER_PACKAGES) {
    const version = rootLock.packages[`node_modules/${name}`]?.version
    if (!version) throw new Error(`the root lock has no ${name}`)
    dependencies[name] = version
  }

  const sdkEntry: LockEntry = { version: sdk.version, resolved: spec, integrity: tarball.integrity, ...pick(sdk, 'license', 'dependencies', 'peerDependencies', 'peerDependenciesMeta', 'engines') }
  const packages: Record<string, LockEntry> = { '': { name: 'sdk-consumer', dependencies }, [`node_modules/${SDK_NAME}`]: sdkEntry }
  const queue: [string, LockEntry][] = [[`node_modules/${SDK_NAME}`, sdkEntry]]
  for (const name of CONSUMER_PACKAGES) {
    const path = `node_modules/${name}`
    packages[path] = consumerEntry(rootLock.packages[path]!)
    queue.push([path, rootLock.packages[path]!])
  }
  // Every package those need, at the path the repository's install placed it (a valid layout).
  for (let next = queue.shift(); next; next = queue.shift()) {
    const [path, entry] = next
    const optionalPeer = (name: string) => entry.peerDependenciesMeta?.[name]?.optional === true
    const needs = [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {}), ...Object.keys(entry.peerDependencies ?? {}).filter((name) => !optionalPeer(name))]
    for (const name of needs) {
      const found = resolveInLock(rootLock, path, name)
      if (!found) {
        if (entry.optionalDependencies?.[name]) continue
        throw new Error(`${name}, needed by ${path}, is not in the root lock`)
      }
      if (packages[found]) continue
      packages[found] = consumerEntry(rootLock.packages[found]!)
      queue.push([found, rootLock.packages[found]!])
    }
  }
  return {
    manifest: { name: 'sdk-consumer', private: true, type: 'module', dependencies },
    lock: { name: 'sdk-consumer', lockfileVersion: 3, requires: true, packages },
  }
}

function pick(entry: LockEntry, ...fields: string[]): LockEntry {
  return Object.fromEntries(fields.filter((field) => entry[field] !== undefined).map((field) => [field, entry[field]]))
}
